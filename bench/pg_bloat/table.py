"""Summarises bench/run_pg_bloat's runs: prints the figures per phase and
writes them into docs/benchmarks.md between <!-- pg-bloat:begin/end -->."""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from md_section import write_section  # noqa: E402

(results, md, minutes, n, cores, load0, load1, pg_version, idle_timeout,
 phases) = sys.argv[1:]
phases = phases.split()
rows = {}
for line in open(results):
    f = line.split()
    if len(f) != 12 or line.startswith("#"):
        continue
    rows.setdefault(f[0], []).append({
        "run": int(f[1]), "t": int(f[2]), "rate": float(f[3]),
        "heap": int(f[4]), "index": int(f[5]), "due": int(f[6]),
        "dead": int(f[7]), "live": int(f[8]), "claim": float(f[9]),
        "stmt": float(f[10]), "age": int(f[11])})


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def mb(b):
    return f"{b / 2**20:,.0f}"


base = med([r["rate"] for r in rows.get("baseline", [])])
k = 5
table = ["| phase | runs | jobs/s, first 5 runs | jobs/s, last 5 runs | "
         "last ÷ baseline median | claim ms, first → last | "
         "server statement ms per 1,000 jobs, first → last | "
         "operations_due MB, end | heap / all indexes MB, end | "
         "dead tuples, end | live tuples, end |",
         "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
minute_rows = []
for p in phases:
    rs = rows.get(p, [])
    if not rs:
        continue
    first, last = rs[:k], rs[-k:]
    f_rate = med([r["rate"] for r in first])
    l_rate = med([r["rate"] for r in last])
    end = rs[-1]
    ratio = f"{l_rate / base:.2f}×" if base == base and base else "–"
    table.append(
        f"| {p} | {len(rs)} | {f_rate:,.0f} | {l_rate:,.0f} | {ratio} | "
        f"{med([r['claim'] for r in first]):.2f} → "
        f"{med([r['claim'] for r in last]):.2f} | "
        f"{med([r['stmt'] for r in first]):,.0f} → "
        f"{med([r['stmt'] for r in last]):,.0f} | {mb(end['due'])} | "
        f"{mb(end['heap'])} / {mb(end['index'])} | {end['dead']:,} | "
        f"{end['live']:,} |")
    per_minute = {}
    for r in rs:
        per_minute.setdefault(r["t"] // 60, []).append(r["rate"])
    held = [r for r in rs if r["age"] > 0]
    note = ""
    if p == "timeout":
        ended = next((r for r in rs if r["age"] == 0), None)
        note = (f" (the idle session was gone by the end of run "
                f"{ended['run']}, which started {ended['t']} s in)" if ended else " (never ended)")
    minute_rows.append(f"- {p}{note}: " + ", ".join(
        f"{med(v):,.0f}" for _, v in sorted(per_minute.items())))

text = "\n".join(table)
print("== per phase")
print(text)
print("== median jobs/s per minute of each phase")
print("\n".join(minute_rows))
if not md:
    sys.exit(0)
begin, end_marker = "<!-- pg-bloat:begin -->", "<!-- pg-bloat:end -->"
out = [begin, "## PostgreSQL queue beside a long transaction (bloat)", "",
       "<!-- Written by bench/run_pg_bloat; rerun it to refresh. -->", "",
       f"`bench/run_pg_bloat {minutes} {n}`: runs of pg_bench ({n} trivial "
       "operations, 1 process, 2 workers, a window of 1,000) back to back "
       "on one queue that is never emptied (no retention: finished "
       f"operations stay), {minutes} minutes per phase, in this order on one "
       f"private PostgreSQL {pg_version} (127.0.0.1, fsync and "
       "synchronous_commit on, autovacuum as shipped): *baseline* with "
       "nothing else; *held* with another session idle in `BEGIN; SELECT "
       "txid_current();` (holding the xmin horizon); *released* after that "
       "session committed; *timeout* with the mitigation "
       f"`idle_in_transaction_session_timeout = {idle_timeout}` on the "
       "server and the same idle session. Medians of 5 runs; sizes and "
       "dead tuples (pg_stat_user_tables) after a phase's last run; the "
       "claim's mean statement time from pg_stat_statements. "
       f"{cores} cores, load {load0} at the start and {load1} at the end "
       "(other work on the machine). What it means: docs/postgres.md, "
       "\"Bloat: a long transaction elsewhere\".", "",
       text, "", "Median jobs/s in each minute of a phase:", "",
       *minute_rows, "", end_marker, ""]
write_section(md, begin, end_marker, out)
print(f"wrote the table into {md}")
