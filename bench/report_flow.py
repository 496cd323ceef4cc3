#!/usr/bin/env python3
"""The "Flow control" section of docs/benchmarks.md, from flow.csv and
keys.csv of `pool_bench --only flow,keys --out DIR` (issue 25's target:
flow control costs at most 10% of throughput on trivial jobs).

report.py includes it when the results have flow.csv or keys.csv.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402  (shared helpers)


def per_rep(rows):
    """{target: {rep: ops/s}}"""
    out = {}
    for r in rows:
        out.setdefault(r["target"], {})[r["rep"]] = float(r["ops_per_s"])
    return out


def ratios(a, b):
    """(median, min, max) of a[rep] / b[rep] over the reps both have."""
    return report.spread(a[k] / b[k] for k in a if k in b and b[k] > 0)


def section(res):
    """(Markdown lines, targets) for the results in `res`."""
    flow = per_rep(report.read_csv(res, "flow.csv"))
    keys = per_rep(report.read_csv(res, "keys.csv"))
    lines, targets = [], []
    if not flow and not keys:
        return lines, targets
    w = lines.append
    w("## Flow control: what the limits cost")
    w("")
    w("Trivial jobs, workers = cores, 512 outstanding, the targets taking "
      "turns within each repetition; each ratio is taken per repetition "
      "against the plain pool of the same turn, then the median (range). "
      "The limits are set so that they never bind: what is measured is the "
      "bookkeeping of every start, not the limit's effect.")
    w("")
    rows = []
    described = {
        "rate_limit": "pool-wide start rate (10 M/s), every start counted",
        "resumed": "the same, paused and resumed before the run",
        "keyed_no_limit": "`sub_with` over 16 concurrency keys, no limits",
        "key_concurrency": "16 keys, each limited to 1,000 running",
        "key_rate": "16 keys, each limited to 1 M starts per 100 ms",
    }
    for source in (flow, keys):
        plain = source.get("plain", {})
        for target, reps in source.items():
            if target == "plain":
                continue
            r = ratios(reps, plain)
            k = (ratios(reps, keys.get("keyed_no_limit", {}))
                 if source is keys and target != "keyed_no_limit" else None)
            rows.append([described.get(target, target),
                         report.with_spread(report.spread(reps.values())),
                         report.with_spread(r, 3),
                         report.with_spread(k, 3) if k else "–"])
            if r and target in ("rate_limit", "key_concurrency", "key_rate"):
                over = k if k else r
                base = "keyed submits" if k else "plain"
                targets.append((f"flow control ({target}) costs ≤ 10% of "
                                f"trivial throughput (against {base})",
                                f"{over[0]:.3f}×",
                                report.verdict(over[0] >= 0.90)))
    w(report.table(["pool", "jobs/s", "÷ plain", "÷ keyed, no limits"],
                   rows))
    w("")
    w("A keyed submit costs more than a plain one whatever its limits: it "
      "carries a `job_options` value, its operation keeps the options for "
      "the queue, and the queue keeps one line per key so that keys take "
      "turns (docs/operations.md, \"Options per submit, priorities, "
      "per-key limits\"). The limits themselves "
      "are the last column.")
    w("")
    return lines, targets
