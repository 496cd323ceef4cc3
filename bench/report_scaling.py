#!/usr/bin/env python3
"""The "Scaling" section of docs/benchmarks.md, from the scaling*.csv files
of `pool_bench --only scaling --out DIR` and, when present, the
instructions.csv that `OUT=DIR/instructions.csv bench/instructions` writes.

report.py includes it when the results have scaling.csv. Run alone, it
replaces the section between its markers in an existing Markdown file:

usage: report_scaling.py RESULTS_DIR [--md PATH]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402  (shared helpers)

BEGIN = "<!-- scaling: written by bench/report_scaling.py -->"
END = "<!-- /scaling -->"
SYSTEMS = ["pool", "pool_dedicated", "actor_pool", "cv_thread_pool"]


def points(rows):
    """{(job_us, workers): {system: {rep: jobs/s}}}, and the ideal rates."""
    out, ideal = {}, {}
    for r in rows:
        key = (float(r["job_us"]), int(r["workers"]))
        out.setdefault(key, {}).setdefault(r["system"], {})[int(r["rep"])] = \
            float(r["jobs_per_s"])
        ideal[key] = float(r["ideal_jobs_per_s"])
    return out, ideal


def ratios(a, b):
    return report.spread(a[k] / b[k] for k in a if k in b and b[k] > 0)


def instructions_part(res, targets):
    rows = report.read_csv(res, "instructions.csv")
    if not rows:
        return []
    out = []
    w = out.append
    by = {}
    for r in rows:
        by.setdefault(r["system"], []).append(float(r["per_job"]))
    src = rows[0]["source"]
    workers = rows[0]["workers"]
    w("**Instructions per job.** Counted by callgrind over every thread, "
      "the slope between "
      f"{int(rows[0]['jobs_low']):,} and {int(rows[0]['jobs_high']):,} "
      f"trivial jobs on {workers} workers (`bench/instructions`, at "
      f"`{src}`): set-up and shut-down cancel out, and a count moves "
      "little with how busy the machine is (batches are sized by the "
      "jobs' own run time; the baseline's count still rose by up to a "
      "fifth on a loaded machine, when its driver blocked more often), so "
      "a 2-core machine can judge a change of the per-operation path. "
      "Compare counts from one run.")
    w("")
    base = by.get("actor_pool", [])
    table = []
    for system in ("pool", "pool_dedicated", "actor_pool"):
        xs = by.get(system)
        if not xs:
            continue
        s = report.spread(xs)
        cell = [system, report.with_spread(s)]
        if base and system != "actor_pool":
            r = report.spread(x / y for x, y in zip(xs, base))
            cell.append(report.with_spread(r, 2) + "×")
            if system == "pool":
                targets.append(("instructions per trivial job ≤ 1.5× "
                                "actor_pool", report.ratio(r[0]),
                                report.verdict(r[0] <= 1.5)))
        else:
            cell.append("")
        table.append(cell)
    w(report.table(["system", "instructions per job", "÷ actor_pool"],
                   table))
    w("")
    return out


def section(res, md_dir, quick):
    pts, ideal = points(report.read_csv(res, "scaling.csv"))
    if not pts:
        return [], []
    out, targets = [], []
    w = out.append
    w(BEGIN)
    w("## Scaling: workers 1 … cores")
    w("")
    w("Trivial jobs (x → 2x) and 20 µs computing jobs on 1, 2, 4, … cores "
      "workers, every system as shipped, 512 requests outstanding. The "
      "driver is a plain thread with a `caf::scoped_actor` that `send`s "
      "and counts replies with one `receive_while`: no response handlers, "
      "which CAF 0.17 keeps in a flat list (the older actor driver was "
      "itself the bottleneck on 16 cores). Its own ceiling, against one "
      "bare echo actor, is measured first in the same run. Median "
      "(min–max) over alternating repetitions; pool ÷ `actor_pool` per "
      "repetition.")
    w("")
    driver = report.read_csv(res, "scaling_driver.csv")
    if driver:
        by = {}
        for r in driver:
            by.setdefault(int(r["callers"]), []).append(
                float(r["jobs_per_s"]))
        w("Driver ceiling (one bare echo actor): " + "; ".join(
            f"{c} caller thread{'s' if c > 1 else ''} "
            f"{report.with_spread(report.spread(v))} replies/s"
            for c, v in sorted(by.items())) + ".")
        w("")
    rows = []
    for (job, workers), by in sorted(pts.items()):
        cells = [f"{job:g} µs" if job > 0 else "trivial", str(workers)]
        for system in SYSTEMS:
            s = report.spread(by.get(system, {}).values())
            if job > 0 and s:
                s = tuple(x / ideal[(job, workers)] for x in s)
                cells.append(report.with_spread(s, 2))
            else:
                cells.append(report.with_spread(s))
        for system in ("pool", "pool_dedicated"):
            r = ratios(by.get(system, {}), by.get("actor_pool", {}))
            cells.append(report.with_spread(r, 2))
            if r and system == "pool":
                targets.append((f"scaling {cells[0]} × {workers}: pool ≥ "
                                f"1.0× actor_pool", report.ratio(r[0]),
                                report.verdict(r[0] >= 1.0)))
        rows.append(cells)
    w(report.table(["job", "workers", "pool", "pool dedicated", "actor_pool",
                    "mutex+cv", "pool ÷ actor_pool",
                    "dedicated ÷ actor_pool"], rows))
    w("")
    w("Trivial rows are jobs/s; 20 µs rows are shares of the ideal "
      "(workers ÷ 20 µs).")
    w("")
    ceiling = report.read_csv(res, "scaling_ceiling.csv")
    if ceiling:
        by = {}
        for r in ceiling:
            by.setdefault(r["system"], []).append(float(r["jobs_per_s"]))
        c = ceiling[0]
        pool = report.spread(by.get("pool", []))
        nw = int(c["workers"])
        w(f"**The shepherd's ceiling.** Trivial jobs from {c['callers']} "
          f"caller threads on {nw} worker{'s' if nw > 1 else ''}: pool "
          f"{report.with_spread(pool)} operations/s, `actor_pool` "
          f"{report.with_spread(report.spread(by.get('actor_pool', [])))}.")
        w("")
        if pool:
            targets.append(("one shepherd ≥ 1 M operations/s (trivial, "
                            "several callers)", f"{pool[0] / 1e6:.2f} M/s",
                            report.verdict(pool[0] >= 1e6)))
    out.extend(instructions_part(res, targets))
    w(END)
    return out, targets


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("--md", default=os.path.join(report.ROOT, "docs",
                                                 "benchmarks.md"))
    args = ap.parse_args()
    md_dir = os.path.dirname(os.path.abspath(args.md))
    lines, targets = section(args.results, md_dir, quick=False)
    if not lines:
        print("no scaling.csv in", args.results, file=sys.stderr)
        return 1
    text = open(args.md).read() if os.path.exists(args.md) else ""
    block = "\n".join(lines)
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    with open(args.md, "w") as f:
        f.write(text)
    print(f"wrote the scaling section of {args.md}")
    for t in targets:
        print(f"  {t[2].strip('*'):>8}  {t[0]}: {t[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
