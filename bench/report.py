#!/usr/bin/env python3
"""Writes docs/benchmarks.md and its plots in docs/benchmarks/ from the
raw results of bench/pool_bench (--out DIR): latency_uneven.png (the
latency CDFs) and one plot per table where a picture reads faster
(throughput.png, latency_idle.png, workers.png, sweep.png, ablation.png).

usage: report.py RESULTS_DIR [--md PATH] [--png-dir DIR]

Uses matplotlib when it is installed (bench/install-deps installs Debian's
python3-matplotlib); otherwise draws the CDF plot with a small built-in PNG
writer (lines and axes, no text) and leaves out the table plots, so the
report never depends on it.
"""

import argparse
import json
import os
import re
import sys

import report_ablation
import report_capacity
import report_summary
import report_tables
from report_cdf import plot, uneven_panels
from report_plots import finish, new_figure, table_plots
from report_util import (group, num, ratio, read_csv, separate_run, spread,
                         table, verdict, with_spread)

# The report is split over the report_*.py modules beside this script:
# report_util (reading and formatting), report_cdf and report_plots (the
# plots), and one module per group of sections, called in order by main().
# The section scripts report_saturation.py, report_scaling.py and
# report_flow.py `import report` for the shared helpers, so they stay
# reachable here.
__all__ = ["ROOT", "finish", "group", "main", "new_figure", "num", "ratio",
           "read_csv", "separate_run", "spread", "table", "verdict",
           "with_spread"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# -- the report ----------------------------------------------------------------


class Context:
    """What the sections of the report share: the results directory and
    meta.json, the Markdown lines written so far (`w` appends one), the
    rows of the targets table, and the table plots drawn. The figures the
    later sections read (med, qcell, u(), tgt, ...) are set on it by
    report_summary.compute_targets."""

    def __init__(self, res, meta, source, figures, png_rel):
        self.res = res
        self.meta = meta
        self.source = source  # the library version, as the header shows it
        self.figures = figures  # {name: Markdown image line}
        self.png_rel = png_rel  # latency_uneven.png, from the Markdown file
        self.targets = []  # (target, measured, verdict)
        self.out = []
        self.w = self.out.append

    def figure(self, name):
        """The table plot `name` and a blank line, if it was drawn."""
        if name in self.figures:
            self.w(self.figures[name])
            self.w("")


def other_sections(ctx, args):
    """The sections of report_saturation.py, report_scaling.py and
    report_flow.py; their targets come after the targets table is written,
    so they show on stdout only."""
    res, meta, out, targets = ctx.res, ctx.meta, ctx.out, ctx.targets
    import report_saturation
    lines, sat_targets = report_saturation.section(
        res, args.png_dir, os.path.dirname(os.path.abspath(args.md)),
        meta.get("mode") == "quick")
    out.extend(lines + ([""] if lines else []))
    targets.extend(sat_targets)

    import report_scaling
    lines, scaling_targets = report_scaling.section(
        res, os.path.dirname(os.path.abspath(args.md)),
        meta.get("mode") == "quick")
    out.extend(lines + ([""] if lines else []))
    targets.extend(scaling_targets)

    import report_flow
    lines, flow_targets = report_flow.section(res)
    out.extend(lines)
    targets.extend(flow_targets)


def raw_results(ctx, png):
    """The list of raw results, then the latency CDF plot (drawn into
    `png`); returns how it was drawn ("matplotlib", "builtin", "none")."""
    res, w = ctx.res, ctx.w
    w("## Raw results")
    w("")
    w("`bench/run` leaves them in `bench/results/` (not committed): "
      "`meta.json`; `trivial.csv`, `bulk.csv`, `sweep.csv` (one row per "
      "repetition); `latency_idle.csv` and every sample in "
      "`latency_idle_raw.csv`; `uneven_runs.csv` (one row per run, with "
      "its hand-off between jobs), "
      "`uneven_calibration.csv` and every job's arrival, observed duration, "
      "latency and ideal latency in `uneven_raw_<distribution>_<load>.csv`; "
      "`workers.csv`; `queue.csv`; `saturation.csv` (one row per "
      "repetition), `saturation_ceiling.csv`, `saturation_idle.csv`, "
      "`saturation_calibration.csv`; `ablation.csv` (one row per variant "
      "and figure) and `ablation_raw.csv` (one row per turn); `flow.csv` and `keys.csv` (one row per target and "
      "repetition); `remote.csv` (one row per run of "
      "`remote_bench`) and `remote_meta.json`; `machine_load.csv` (CPU use "
      "per workload); `source.txt` (the library version measured; "
      "`<workload>_source.txt` for a section measured in a run of its "
      "own); "
      "`console.log` (what the run printed).")
    w("")

    panels = uneven_panels(res)
    how = plot(panels, png) if panels else "none"
    if how == "builtin":
        w("(The plot was drawn without matplotlib: blue = pull, red = "
          "round-robin, green = ideal; x is log latency, one grid line per "
          "decade; the grey horizontal line is p99. The plots of the other "
          "tables need matplotlib: `bench/install-deps` installs it.)")
        w("")
    return how


def write(ctx, args, png, how):
    """Writes the Markdown file and prints the targets."""
    out, targets = ctx.out, ctx.targets
    # Sections other scripts write between markers (bench/run_poolrun,
    # bench/run_pg, the http figures) stay as they are.
    if os.path.exists(args.md):
        with open(args.md) as f:
            kept = re.findall(r"<!-- ([\w-]+):begin -->.*?<!-- \1:end -->",
                              f.read(), re.S)
        with open(args.md) as f:
            text = f.read()
        for name in kept:
            begin = f"<!-- {name}:begin -->"
            end = f"<!-- {name}:end -->"
            block = text[text.index(begin):text.index(end) + len(end)]
            out.extend([block] if out and out[-1] == "" else ["", block])
        out.append("")
    with open(args.md, "w") as f:
        f.write("\n".join(out))
    print(f"wrote {args.md} and {png} (plot: {how})")
    for t in targets:
        print(f"  {t[2].strip('*'):>8}  {t[0]}: {t[1]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("--md", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    ap.add_argument("--png-dir",
                    default=os.path.join(ROOT, "docs", "benchmarks"))
    args = ap.parse_args()
    res = args.results
    with open(os.path.join(res, "meta.json")) as f:
        meta = json.load(f)
    source = "unknown"
    if os.path.exists(os.path.join(res, "source.txt")):
        with open(os.path.join(res, "source.txt")) as f:
            source = f.read().strip() or "unknown"
    if source != "unknown":
        source = f"`{source}`"
    os.makedirs(args.png_dir, exist_ok=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.md)), exist_ok=True)
    png = os.path.join(args.png_dir, "latency_uneven.png")
    png_rel = os.path.relpath(png, os.path.dirname(os.path.abspath(args.md)))

    figures = table_plots(res, args.png_dir,
                          os.path.dirname(os.path.abspath(args.md)),
                          meta.get("mode") == "quick")
    ctx = Context(res, meta, source, figures, png_rel)

    report_summary.compute_targets(ctx)
    report_summary.header(ctx)
    report_summary.what_the_numbers_say(ctx)
    report_tables.method_and_throughput(ctx)
    report_tables.idle_latency(ctx)
    report_tables.uneven_durations(ctx)
    report_capacity.many_workers(ctx)
    report_capacity.queued_entries(ctx)
    report_capacity.workers_threads_sweep(ctx)
    report_capacity.remote_nodes(ctx)
    report_ablation.what_each_change_was_worth(ctx)
    other_sections(ctx, args)
    how = raw_results(ctx, png)
    write(ctx, args, png, how)


if __name__ == "__main__":
    sys.exit(main())
