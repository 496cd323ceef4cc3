"""Reading and formatting helpers of bench/report.py: the raw results'
CSV files, (median, min, max) spreads, and numbers, ratios, verdicts and
tables as docs/benchmarks.md writes them.

report.py imports these and passes them on to the section scripts that
`import report` (report_saturation.py, report_scaling.py, report_flow.py).
"""

import csv
import os
import statistics
from collections import defaultdict


# -- reading -------------------------------------------------------------------

def separate_run(res, name):
    """The sentence for a section measured in a run of its own, when
    `<name>_source.txt` names that run's library version; else None."""
    path = os.path.join(res, f"{name}_source.txt")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return (f"(This section was measured in a separate run, at "
                f"`{f.read().strip()}`.)")


def read_csv(results, name):
    path = os.path.join(results, name)
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def spread(xs):
    """(median, min, max) of a list of numbers; None for no data."""
    xs = [float(x) for x in xs]
    if not xs:
        return None
    return (statistics.median(xs), min(xs), max(xs))


def group(rows, *keys):
    out = defaultdict(list)
    for r in rows:
        out[tuple(r[k] for k in keys)].append(r)
    return out


# -- formatting ----------------------------------------------------------------


def num(x, digits=0, compact=True):
    if x is None:
        return "n/a"
    if not compact:
        return f"{x:,.{digits}f}"
    if abs(x) >= 1e6 and digits == 0:
        return f"{x / 1e6:.2f} M"
    if abs(x) >= 1e4 and digits == 0:
        return f"{x / 1e3:.0f} k"
    return f"{x:,.{digits}f}"


def with_spread(s, digits=0, scale=1.0, compact=True):
    if s is None:
        return "n/a"
    m, lo, hi = (v * scale for v in s)
    if lo == hi:
        return num(m, digits, compact)
    return (f"{num(m, digits, compact)} ({num(lo, digits, compact)}–"
            f"{num(hi, digits, compact)})")


def ratio(x):
    return "n/a" if x is None else f"{x:.2f}×"


def verdict(ok):
    if ok is None:
        return "n/a"
    return "**met**" if ok else "**not met**"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |",
             "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
