"""The capacity sections of docs/benchmarks.md, for bench/report.py: many
cooperative workers, queued and delayed entries, the workers × scheduler
threads sweep and remote worker nodes.
"""

import json
import os

from report_util import (group, num, ratio, read_csv, separate_run, spread,
                         table, with_spread)


def many_workers(ctx):
    """Spawn time, idle memory and stats latency over the worker count."""
    w, figure, wcell = ctx.w, ctx.figure, ctx.wcell
    w("## Many cooperative workers")
    w("")
    w("Spawn time: from `spawn_pool` until the first stats reply (the "
      "shepherd has spawned every worker); idle memory: RSS delta after "
      "200 ms; stats latency: sequential `pool_stats` requests. Baseline: "
      "spawning the same number of plain CAF actors until the last one "
      "answers.")
    w("")
    rows = []
    for n in sorted({k[1] for k in wcell}, key=int):
        p = wcell.get(("pool", n), {})
        c = wcell.get(("caf_actors", n), {})
        rows.append([f"{int(n):,}", with_spread(p.get("spawn_ms"), 1),
                     with_spread(p.get("bytes_per_worker")),
                     with_spread(p.get("stats_p50_us"), 1),
                     with_spread(p.get("stats_p99_us"), 1),
                     with_spread(c.get("spawn_ms"), 1),
                     with_spread(c.get("bytes_per_worker"))])
    w(table(["workers", "pool spawn ms", "pool B/worker", "stats p50 µs",
             "stats p99 µs", "CAF actors spawn ms", "CAF B/actor"], rows))
    w("")
    figure("workers")


def queued_entries(ctx):
    """Bytes, enqueue and dequeue time per queued or delayed entry."""
    res, w, qcell, qn = ctx.res, ctx.w, ctx.qcell, ctx.qn
    w(f"## {int(qn):,} queued and delayed entries" if qn != "?" else
      "## Queued and delayed entries")
    w("")
    if separate_run(res, "queue"):
        w(separate_run(res, "queue"))
        w("")
    w("*memory_store*: `pool::memory_store::push` / `pop_due` directly, "
      "`work_record`s carrying an `int32_t` payload; delayed entries are due "
      "at random times 1–2 h ahead and are dequeued by popping at a later "
      "clock. *Through the pool*: a pool whose single worker blocks on a "
      "gate until everything is queued; a submitter actor sends the "
      "submits asynchronously in batches of 1,000 (each batch closed by a "
      "stats request), so no per-request state lives on the caller's side "
      "and the figure is the pool's own cost (shepherd bookkeeping, queue "
      "entry, payload). Dequeue through the pool = the time per result "
      "once the gate opens (dequeue, run, reply), over the first N entries "
      "shown.")
    w("")
    rows = []
    labels = {"store": "memory_store", "pool_dedicated": "pool, 1 dedicated "
              "worker", "pool_cooperative": "pool, 1 cooperative worker"}
    qraw = read_csv(res, "queue.csv")
    dequeued = {(r["via"], r["entries"]): r.get("dequeued", "") for r in qraw}
    for (via, entries), c in qcell.items():
        d = c["dequeue_ns_per_entry"]
        dq = dequeued.get((via, entries), "")
        rows.append([labels.get(via, via), entries,
                     with_spread(c["bytes_per_entry"], compact=False),
                     with_spread(c["enqueue_ns_per_entry"], compact=False),
                     "n/a (due in an hour)" if d and d[0] == 0 else
                     with_spread(d, compact=False)
                     + (f" (first {int(dq):,})" if dq and dq != qn else "")])
    w(table(["via", "entries", "bytes/entry", "enqueue ns/entry",
             "dequeue ns/entry"], rows))
    w("")


def workers_threads_sweep(ctx):
    """Pool against actor_pool over workers × scheduler threads."""
    res, w, figure = ctx.res, ctx.w, ctx.figure
    w("## Sweep: workers × scheduler threads")
    w("")
    w("Trivial jobs as above (512 outstanding), on a fresh actor system per "
      "point with `scheduler.max-threads` set (or CAF's default); cells are "
      "median jobs/s of the pool (cooperative) and of `caf::actor_pool`, and "
      "their ratio.")
    w("")
    sweep = group(read_csv(res, "sweep.csv"), "workers", "threads_setting",
                  "target")
    settings = []
    for r in read_csv(res, "sweep.csv"):
        s = (r["threads_setting"], r["threads"])
        if s not in settings:
            settings.append(s)
    rows = []
    for wk in sorted({k[0] for k in sweep}, key=int):
        row = [wk]
        for s, actual in settings:
            p = spread(r["jobs_per_s"] for r in sweep.get((wk, s, "pool"), []))
            a = spread(r["jobs_per_s"]
                       for r in sweep.get((wk, s, "actor_pool"), []))
            if p and a:
                row.append(f"{num(p[0])} / {num(a[0])} = {p[0] / a[0]:.2f}×")
            else:
                row.append("n/a")
        rows.append(row)
    w(table(["workers"] + [f"threads: {s}" + (f" ({a})" if s == "default"
                                              else "")
                           for s, a in settings], rows))
    w("")
    figure("sweep")


def remote_nodes(ctx):
    """Worker nodes in processes of their own (remote.csv), if measured."""
    res, w = ctx.res, ctx.w
    remote_rows = read_csv(res, "remote.csv")
    if remote_rows:
        rmeta = {}
        if os.path.exists(os.path.join(res, "remote_meta.json")):
            with open(os.path.join(res, "remote_meta.json")) as f:
                rmeta = json.load(f)
        by_nodes = group(remote_rows, "nodes")
        w("## Remote worker nodes")
        w("")
        w("`bench/remote_bench`: a pool published on 127.0.0.1 "
          "(`publish_pool`) and worker nodes that are separate processes "
          "joined over CAF's network layer (`join_remote_pool`), each with "
          "one dedicated worker"
          + (" and pinned to its own core (`sched_setaffinity`), so two "
             "nodes stand for two machines as far as one box can"
             if rmeta.get("pinned") else "") +
          ". The pool's one local worker (a pool needs at least one) is "
          "held by a parking job throughout, so every measured job runs on "
          "a node. "
          f"{int(rmeta.get('jobs', 0)):,} CPU-bound jobs "
          f"({num(rmeta.get('job_us'))} µs each, measured) are submitted "
          "at once; the time runs until the last result. Repetitions "
          "alternate the order (1 node, 2 nodes; 2 nodes, 1 node; …). "
          "*Of ideal* = jobs/s ÷ (nodes × 1 / job time): what is left after "
          "the per-job round trip over the network (status reply, ask for "
          "work, dispatch). The shepherd's own process is not pinned and "
          "shares the cores.")
        w("")
        rows = []
        one = spread(r["jobs_per_s"] for r in by_nodes.get(("1",), []))
        for n in sorted((k[0] for k in by_nodes), key=int):
            v = by_nodes[(n,)]
            rate = spread(r["jobs_per_s"] for r in v)
            rows.append([n, len(v), with_spread(rate),
                         with_spread(spread(float(r["efficiency"]) * 100
                                            for r in v)) + " %",
                         ratio(rate[0] / one[0]) if one else "n/a"])
        w(table(["nodes × 1 worker", "runs", "jobs/s", "of ideal",
                 "÷ 1 node"], rows))
        w("")
        other = rmeta.get("other_cpu_share")
        if other is not None:
            w(f"CPU share of the machine meanwhile: this benchmark and its "
              f"nodes {float(rmeta.get('self_cpu_share', 0)) * 100:.0f}%, "
              f"other processes {float(other) * 100:.0f}%.")
            w("")
            if float(other) > 0.10:
                w(f"> **Warning**: other processes used "
                  f"{float(other) * 100:.0f}% of the machine during this "
                  "workload; they took time from the pinned nodes. Rerun on "
                  "an idle machine.")
                w("")
