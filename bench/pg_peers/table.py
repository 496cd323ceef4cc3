"""Medians, ranges and ratios of bench/run_pg_peers; writes its table into
docs/benchmarks.md between <!-- pg-peers:begin --> and <!-- pg-peers:end -->.

Usage: table.py RESULTS MD ROUNDS N CORES LOAD GRAPHILE_VERSION PG_VERSION
CONFIGS (MD empty: print only). RESULTS has lines "mode system c×P rate
server_ms_per_1000 client_ms_per_1000 server_cores machine_busy wal_bytes",
in round
order.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from md_section import write_section  # noqa: E402

results, md, rounds, n, cores, load, graphile, pg, configs = sys.argv[1:]
runs = {}  # (mode, system, config) -> [(rate, cpu, busy)] in round order
modes = []
for line in open(results):
    if line.startswith("#") or not line.strip():
        continue
    mode, system, config, rate, cpu, client, used, busy, wal = line.split()
    if mode not in modes:
        modes.append(mode)
    runs.setdefault((mode, system, config), []).append(
        (float(rate), float(cpu), float(client), float(used), float(busy),
         float(wal)))


def spread(xs, fmt):
    xs = sorted(xs)
    if not xs:
        return "–"
    m = statistics.median(xs)
    return f"{fmt(m)} ({fmt(xs[0])}–{fmt(xs[-1])})"


def rate(x):
    return f"{x:,.0f}"


def ratio(x):
    return f"{x:.2f}"


def one(x):
    return f"{x:.0f}"


def pct(x):
    return f"{x:.0%}"


def med(xs, i, fmt):
    return fmt(statistics.median([x[i] for x in xs])) if xs else "–"


rows = ["| mode | c×P | pool, jobs/s | graphile-worker, jobs/s | pool / graphile "
        "(same round) | CPU ms per 1,000 jobs, server: pool; graphile | "
        "client: pool; graphile | server cores: pool; graphile | "
        "machine busy: pool; graphile | WAL bytes per job: pool; graphile |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
for mode in modes:
    for config in configs.split():
        p = runs.get((mode, "pool", config), [])
        g = runs.get((mode, "graphile", config), [])
        ratios = [a[0] / b[0] for a, b in zip(p, g)]
        rows.append(
            f"| {mode} | {config} | {spread([x[0] for x in p], rate)} | "
            f"{spread([x[0] for x in g], rate)} | {spread(ratios, ratio)} | "
            f"{spread([x[1] for x in p], one)}; {spread([x[1] for x in g], one)} | "
            f"{med(p, 2, one)}; {med(g, 2, one)} | "
            f"{med(p, 3, ratio)}; {med(g, 3, ratio)} | "
            f"{med(p, 4, pct)}; {med(g, 4, pct)} | "
            f"{med(p, 5, one)}; {med(g, 5, one)} |")
scaling = ["| mode | system | c | 2 processes / 1 process (same round) |",
           "| --- | --- | --- | --- |"]
for mode in modes:
    for system in ("pool", "graphile"):
        for c in sorted({cfg.split("x")[0] for cfg in configs.split()}, key=int):
            one_p = runs.get((mode, system, f"{c}x1"), [])
            two_p = runs.get((mode, system, f"{c}x2"), [])
            if one_p and two_p:
                xs = [b[0] / a[0] for a, b in zip(one_p, two_p)]
                scaling.append(f"| {mode} | {system} | {c} | {spread(xs, ratio)} |")
print("\n".join(rows))
print()
print("\n".join(scaling))
if not md:
    sys.exit(0)
begin, end = "<!-- pg-peers:begin -->", "<!-- pg-peers:end -->"
out = [begin, "## PostgreSQL queue beside graphile-worker", "",
       "<!-- Written by bench/run_pg_peers; rerun it to refresh. -->", "",
       f"`bench/run_pg_peers {rounds} {n}`: no-op jobs per second, {n} per "
       f"run, on one private PostgreSQL {pg} on 127.0.0.1 (fsync and "
       "synchronous_commit on, an empty queue per run), the pool against "
       f"graphile-worker {graphile} (installed from npm at run time) in "
       f"{rounds} rounds; within a round each row's two runs are neighbours, "
       "in alternating order. c×P: c handlers per process, P processes. "
       "window: each process keeps 1,000 of its own jobs outstanding "
       "(N / P each) from a common start to the last completion; drain: "
       "all N inserted first (untimed), then the processes run from a "
       "common start until the queue is empty. Medians (min–max). Server "
       "CPU: user + system time of every PostgreSQL process over the run; "
       "client CPU: the bench processes' own (pool: pg_bench; graphile: "
       "node), medians; server cores: the server's CPU over the run's time. "
       "Machine busy: the share of all cores not idle over the run (the "
       "server, the clients and other work on the machine). "
       f"{cores} cores, load {load} at the end.", "",
       "graphile-worker's settings (its documented fast ones, "
       "worker.graphile.org/docs/performance): `localQueue: {size: 500}`, "
       "`completeJobBatchDelay: 0`, `failJobBatchDelay: 0`, `concurrentJobs`"
       " = c, `maxPoolSize` = max(10, c + 2); jobs added with `addJobs` (all"
       " free places of the window in one call, one call in flight; drain: "
       "1,000 per call). The pool: defaults (`claim_batch` 128, adaptive), "
       "jobs submitted with `enqueue` one at a time (the store batches "
       "them); drain fills a paused pool, and each process spawns its pool "
       "paused and resumes it at the start. graphile-worker's drain runners "
       "start before the clock with the task held until the start (one "
       "local batch fetched ahead), and its window counts a job completed "
       "when its task returns (the batched completion is written later): "
       "both favour graphile-worker slightly.", ""]
out += rows + ["", "Two processes against one, same round:", ""] + scaling
out += ["", end, ""]
write_section(md, begin, end, out)
print(f"wrote the table into {md}")
