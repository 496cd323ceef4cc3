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
import csv
import json
import math
import os
import re
import statistics
import struct
import sys
import zlib
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# Written once, from the runs that decided it (not from this run).
REMOVED_AFTER_MEASURING = (
    "Measured again with more turns on a quiet machine "
    "(`POOL_BENCH_ABLATION=...` and `POOL_BENCH_ABLATION_REPS=15`; per-turn "
    "figures in `ablation_raw.csv`): *asking for sleepers* (the shepherd "
    "asked the queue on a sleeping worker's behalf instead of waking it) "
    "moved no column beyond the gap between the two rows of defaults "
    "(per-turn medians against the defaults over 15 turns: trivial 0.99×, "
    "idle p50 1.02×, idle dedicated p50 1.15× where the second row of "
    "defaults had 1.09×; bimodal p99 11.7–12.0 ms against 11.6–12.2 ms for "
    "the defaults over 3 runs), so it was removed: a sleeping worker is "
    "woken and asks, as in the plain sequence. *Hand-ahead* stays for one "
    "figure: without it, bimodal p99 was 12.2–12.3 ms in each of 5 runs "
    "(this report's among them), against 11.6–12.6 ms (median 11.9 ms) for "
    "the 10 rows of defaults in the same runs, higher than 8 of them: about "
    "3%. Trivial jobs and idle latency did not move beyond noise.")


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


# -- the plot ------------------------------------------------------------------


def cdf(xs):
    xs = sorted(xs)
    n = len(xs)
    # Thin out to at most ~2000 points per line.
    step = max(1, n // 2000)
    pts = [(xs[i], (i + 1) / n) for i in range(0, n, step)]
    if pts and pts[-1][0] != xs[-1]:
        pts.append((xs[-1], 1.0))
    return pts


SERIES_COLORS = {"pull (pool)": (31, 119, 180),
                 "round-robin push": (214, 39, 40),
                 "ideal central queue": (44, 160, 44)}


def uneven_panels(results):
    """[(title, {label: [latency ms]})] for the plot, target case first."""
    panels = []
    for name, title in [
            ("uneven_raw_bimodal_0.7.csv", "bimodal, load 0.7"),
            ("uneven_raw_exponential_0.7.csv", "exponential, load 0.7"),
            ("uneven_raw_bimodal_0.7_spin.csv",
             "bimodal, load 0.7, polling scheduler")]:
        rows = read_csv(results, name)
        if not rows:
            continue
        series = {"pull (pool)": [], "round-robin push": [],
                  "ideal central queue": []}
        for r in rows:
            lat = float(r["latency_us"]) / 1e3
            if r["variant"] == "pull":
                series["pull (pool)"].append(lat)
                series["ideal central queue"].append(
                    float(r["ideal_us"]) / 1e3)
            else:
                series["round-robin push"].append(lat)
        panels.append((title, series))
    return panels


def plot_matplotlib(panels, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2),
                             squeeze=False)
    for ax, (title, series) in zip(axes[0], panels):
        for label, xs in series.items():
            pts = cdf(xs)
            color = tuple(c / 255 for c in SERIES_COLORS[label])
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label,
                    color=color, linewidth=1.6,
                    linestyle="--" if label.startswith("ideal") else "-")
        ax.set_xscale("log")
        ax.set_xlabel("latency, arrival to reply (ms, log scale)")
        ax.set_ylabel("fraction of jobs")
        ax.set_title(title)
        ax.axhline(0.99, color="grey", linewidth=0.6, linestyle=":")
        ax.grid(True, which="both", linewidth=0.3)
        ax.legend(loc="lower right", fontsize=8)
    fig.suptitle("Uneven job durations on 2 dedicated workers: latency CDF "
                 "(all runs)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_png(path, width, height, pixels):
    raw = b"".join(b"\x00" + bytes(pixels[y * width * 3:(y + 1) * width * 3])
                   for y in range(height))

    def chunk(tag, data):
        body = tag + data
        return (struct.pack(">I", len(data)) + body
                + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2,
                                           0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(raw, 9)))
        f.write(chunk(b"IEND", b""))


def plot_builtin(panels, path):
    """Log-x CDF panels without text: frame, decade grid, p99 line."""
    pw, ph, margin = 420, 320, 30
    width, height = pw * len(panels), ph
    px = bytearray([255] * (width * height * 3))

    def put(x, y, color):
        if 0 <= x < width and 0 <= y < height:
            i = (y * width + x) * 3
            px[i:i + 3] = bytes(color)

    def line(x0, y0, x1, y1, color):
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            put(x0, y0, color)
            put(x0, y0 + 1, color)
            if x0 == x1 and y0 == y1:
                break
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    for k, (_, series) in enumerate(panels):
        allx = [x for xs in series.values() for x in xs if x > 0]
        lo = math.floor(math.log10(min(allx)))
        hi = math.ceil(math.log10(max(allx)))
        left, right = k * pw + margin, (k + 1) * pw - 10
        top, bottom = 10, ph - margin

        def sx(v):
            v = math.log10(max(v, 10 ** lo))
            return int(left + (v - lo) / (hi - lo) * (right - left))

        def sy(f):
            return int(bottom - f * (bottom - top))

        grey = (200, 200, 200)
        for d in range(lo, hi + 1):
            line(sx(10 ** d), top, sx(10 ** d), bottom, grey)
        line(left, sy(0.99), right, sy(0.99), grey)
        for a, b in [((left, top), (right, top)), ((right, top),
                     (right, bottom)), ((right, bottom), (left, bottom)),
                     ((left, bottom), (left, top))]:
            line(*a, *b, (0, 0, 0))
        for label, xs in series.items():
            pts = cdf(xs)
            color = SERIES_COLORS[label]
            for (x0, f0), (x1, f1) in zip(pts, pts[1:]):
                line(sx(x0), sy(f0), sx(x1), sy(f1), color)
    write_png(path, width, height, px)


def plot(panels, path):
    try:
        plot_matplotlib(panels, path)
        return "matplotlib"
    except ImportError:
        plot_builtin(panels, path)
        return "builtin"


# -- plots of the tables -------------------------------------------------------
# One function per plot, each reading the raw results itself; `table_plots`
# draws them all (with matplotlib only) and main() places each under its
# table with `figure(...)`.

TRIVIAL_TARGETS = [("pool", "pool (cooperative)"),
                   ("pool_dedicated", "pool (dedicated)"),
                   ("actor_pool", "(1) caf::actor_pool, round-robin"),
                   ("bare_actor", "(2) bare CAF request/reply"),
                   ("cv_thread_pool", "(3) mutex + cv thread pool")]
BULK_TARGETS = [("pool", "pool, bulk"), ("actor_pool", "actor_pool, bulk")]
DURABLE_TARGETS = [("pool_memory", "in memory"),
                   ("pool_durable_full", "SQLite, synchronous FULL"),
                   ("pool_durable_normal", "SQLite, synchronous NORMAL")]
IDLE_TARGETS = [("pool", "pool (cooperative)"),
                ("pool_dedicated", "pool (dedicated)"),
                ("actor_pool", "caf::actor_pool"),
                ("bare_actor", "bare CAF request (scheduled actor)"),
                ("bare_detached_actor", "bare CAF request (detached actor)"),
                ("cv_thread_pool", "mutex + cv thread pool")]
POOL_BLUE = (31 / 255, 119 / 255, 180 / 255)
BASELINE_GREY = (0.55, 0.55, 0.55)


def spreads_by(rows, key, field, scale=1.0):
    """{rows' key: (median, min, max) of field × scale}."""
    out = {}
    for k, v in group(rows, key).items():
        s = spread(float(r[field]) * scale for r in v)
        if s:
            out[k[0]] = s
    return out


def readable_axis(axis, log, values=()):
    """Tick labels as the tables write numbers (600 k, 1.05 M, 2.5); on a
    log axis 1-2-5 ticks, or only powers of ten when `values` span more
    than two decades."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    def label(x, _pos):
        if x >= 1e4:
            return num(x)
        return f"{x:g}"
    if log:
        xs = [v for v in values if v > 0]
        wide = xs and math.log10(max(xs) / min(xs)) > 2
        axis.set_major_locator(
            LogLocator(base=10, subs=(1.0,) if wide else (1.0, 2.0, 5.0)))
        axis.set_minor_formatter(NullFormatter())
    axis.set_major_formatter(FuncFormatter(label))


def bar_panel(ax, title, bars, xlabel, log=False,
              highlight=lambda label: label.startswith("pool")):
    """Horizontal bars (median) with min–max whiskers, top to bottom in the
    order given; highlighted rows (the pool's) blue, the others grey."""
    bars = [(label, s) for label, s in bars if s]
    ys = list(range(len(bars)))[::-1]
    med = [s[0] for _, s in bars]
    err = [[s[0] - s[1] for _, s in bars], [s[2] - s[0] for _, s in bars]]
    colors = [POOL_BLUE if highlight(label) else BASELINE_GREY
              for label, _ in bars]
    ax.barh(ys, med, xerr=err if any(map(any, err)) else None, color=colors,
            capsize=3, error_kw={"linewidth": 0.8})
    ax.set_yticks(ys)
    ax.set_yticklabels([label for label, _ in bars], fontsize=8)
    if log:
        ax.set_xscale("log")
    readable_axis(ax.xaxis, log, [v for _, s in bars for v in s])
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="x", which="major", linewidth=0.3)


def new_figure(panels, width=7.0, height=2.6):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(panels, 1, figsize=(width, height * panels),
                             squeeze=False)
    return plt, fig, [a[0] for a in axes]


def finish(plt, fig, path, title, quick):
    if quick:
        title += "\n(quick smoke run: shows that the harness runs, not the speed)"
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_throughput(res, path, quick):
    """Trivial jobs, bulk and durable rates against their baselines."""
    trivial = spreads_by(read_csv(res, "trivial.csv"), "target", "jobs_per_s")
    bulk = spreads_by(read_csv(res, "bulk.csv"), "target", "jobs_per_s")
    durable = spreads_by(read_csv(res, "durable.csv"), "target",
                         "jobs_per_s")
    panels = [(t, rows, unit) for t, rows, unit in [
        ("Trivial jobs, one request per job (2 workers)",
         [(label, trivial.get(name)) for name, label in TRIVIAL_TARGETS],
         "jobs/s"),
        ("Bulk: 256 inputs per submit, against per-job actor_pool",
         [(label, bulk.get(name)) for name, label in BULK_TARGETS]
         + [("actor_pool, per-job", trivial.get("actor_pool"))], "inputs/s"),
        ("Durable queue: submit and complete",
         [(label, durable.get(name)) for name, label in DURABLE_TARGETS],
         "operations/s")] if any(s for _, s in rows)]
    if not panels:
        return False
    plt, fig, axes = new_figure(len(panels))
    for ax, (title, rows, unit) in zip(axes, panels):
        bar_panel(ax, title, rows, unit + " (median, bars: min–max)",
                  log=unit == "inputs/s")
    finish(plt, fig, path, "Throughput against the baselines", quick)
    return True


def plot_latency_idle(res, path, quick):
    """Idle round trip, p50 and p99, per target."""
    rows = read_csv(res, "latency_idle.csv")
    p50 = spreads_by(rows, "target", "p50_ns", 1e-3)
    p99 = spreads_by(rows, "target", "p99_ns", 1e-3)
    if not p50:
        return False
    plt, fig, axes = new_figure(2)
    bar_panel(axes[0], "p50", [(label, p50.get(name))
                               for name, label in IDLE_TARGETS],
              "µs, log scale (median, bars: min–max)", log=True)
    bar_panel(axes[1], "p99", [(label, p99.get(name))
                               for name, label in IDLE_TARGETS],
              "µs, log scale (median, bars: min–max)", log=True)
    finish(plt, fig, path, "Idle latency: one job at a time", quick)
    return True


def plot_sweep(res, path, quick):
    """Pool and actor_pool jobs/s over the worker count, one line per
    scheduler-thread setting."""
    rows = read_csv(res, "sweep.csv")
    if not rows:
        return False
    cells = group(rows, "threads_setting", "target", "workers")
    settings = []
    for r in rows:
        if r["threads_setting"] not in settings:
            settings.append(r["threads_setting"])
    plt, fig, axes = new_figure(1, height=3.4)
    ax = axes[0]
    cmap = plt.get_cmap("viridis")
    for i, setting in enumerate(settings):
        color = cmap(i / max(1, len(settings) - 1) * 0.85)
        for target, style in [("pool", "-o"), ("actor_pool", "--s")]:
            pts = sorted((int(k[2]), statistics.median(
                float(r["jobs_per_s"]) for r in v))
                for k, v in cells.items()
                if k[0] == setting and k[1] == target)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style,
                        color=color, markersize=4,
                        label=f"{target}, threads: {setting}")
    ax.set_xlabel("workers")
    ax.set_ylabel("jobs/s (median)")
    ax.set_xticks(sorted({int(r["workers"]) for r in rows}))
    readable_axis(ax.yaxis, False)
    ax.grid(True, linewidth=0.3)
    ax.legend(fontsize=7, ncol=2)
    finish(plt, fig, path, "Sweep: pool (solid) and actor_pool (dashed)",
           quick)
    return True


def plot_workers(res, path, quick):
    """Spawn time and idle memory against the number of workers."""
    rows = read_csv(res, "workers.csv")
    if not rows:
        return False
    cells = group(rows, "target", "workers")
    plt, fig, axes = new_figure(2, height=2.8)
    for ax, field, label in [(axes[0], "spawn_ms", "spawn ms"),
                             (axes[1], "bytes_per_worker",
                              "idle bytes per worker")]:
        for target, name, style in [("pool", "pool workers", "-o"),
                                    ("caf_actors", "plain CAF actors",
                                     "--s")]:
            pts = sorted((int(k[1]), spread(float(r[field]) for r in v))
                         for k, v in cells.items() if k[0] == target)
            if not pts:
                continue
            ax.errorbar([p[0] for p in pts], [p[1][0] for p in pts],
                        yerr=[[p[1][0] - p[1][1] for p in pts],
                              [p[1][2] - p[1][0] for p in pts]],
                        fmt=style, markersize=4, capsize=3, label=name,
                        color=POOL_BLUE if target == "pool"
                        else BASELINE_GREY)
        counts = [int(k[1]) for k in cells]
        values = [float(r[field]) for v in cells.values() for r in v]
        ax.set_xscale("log")
        readable_axis(ax.xaxis, True, counts)
        if field == "spawn_ms":
            ax.set_yscale("log")
        readable_axis(ax.yaxis, field == "spawn_ms", values)
        ax.set_xlabel("workers (log scale)")
        ax.set_ylabel(label)
        ax.grid(True, which="major", linewidth=0.3)
        ax.legend(fontsize=8)
    finish(plt, fig, path, "Many cooperative workers", quick)
    return True


def plot_ablation(res, path, quick):
    """Trivial jobs/s and idle p50 per variant of the ablation."""
    rows = read_csv(res, "ablation.csv")
    if not rows:
        return False
    cell = {(r["variant"], r["metric"]): float(r["median"]) for r in rows}
    names = []
    for r in rows:
        if r["variant"] not in names:
            names.append(r["variant"])
    panels = [(metric, title, scale) for metric, title, scale in [
        ("trivial_jobs_per_s", "trivial jobs/s (median)", 1.0),
        ("idle_p50_ns", "idle p50 µs (median)", 1e-3),
        ("uneven_p99_ns", "bimodal @ 0.7 p99 ms (median)", 1e-6)]
        if any((n, metric) in cell for n in names)]
    if not panels:
        return False
    plt, fig, axes = new_figure(len(panels), height=2.4)
    for ax, (metric, title, scale) in zip(axes, panels):
        bars = [(n, (cell[(n, metric)] * scale,) * 3)
                for n in names if (n, metric) in cell]
        bar_panel(ax, title, bars, title.split(" (")[0],
                  highlight=lambda label: label.startswith("all"))
    finish(plt, fig, path, "What each change was worth (all = the defaults)",
           quick)
    return True


TABLE_PLOTS = [("throughput", plot_throughput,
                "throughput of the pool and the baselines"),
               ("latency_idle", plot_latency_idle,
                "idle latency, p50 and p99, per target"),
               ("sweep", plot_sweep, "jobs/s over workers and threads"),
               ("workers", plot_workers,
                "spawn time and memory over the number of workers"),
               ("ablation", plot_ablation, "what each change was worth")]


def table_plots(res, png_dir, md_dir, quick):
    """{name: Markdown image line} for each table plot drawn into png_dir;
    empty without matplotlib."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return {}
    out = {}
    for name, fn, alt in TABLE_PLOTS:
        path = os.path.join(png_dir, name + ".png")
        if fn(res, path, quick):
            out[name] = f"![{alt}]({os.path.relpath(path, md_dir)})"
    return out


# -- the report ----------------------------------------------------------------


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

    targets = []  # (target, measured, verdict)
    out = []
    w = out.append
    figures = table_plots(res, args.png_dir,
                          os.path.dirname(os.path.abspath(args.md)),
                          meta.get("mode") == "quick")

    def figure(name):
        """The table plot `name` and a blank line, if it was drawn."""
        if name in figures:
            w(figures[name])
            w("")

    # -- trivial
    trivial = group(read_csv(res, "trivial.csv"), "target")
    rate = {k[0]: spread(r["jobs_per_s"] for r in v)
            for k, v in trivial.items()}
    med = {k: (v[0] if v else None) for k, v in rate.items()}

    def over(a, b, src=med):
        if src.get(a) is None or src.get(b) is None:
            return None
        return src[a] / src[b]

    trivial_ratio = over("pool", "actor_pool")
    targets.append(("trivial jobs, per-job submit: pool ≥ 1.0× actor_pool",
                    ratio(trivial_ratio),
                    verdict(None if trivial_ratio is None
                            else trivial_ratio >= 1.0)))

    # -- durable
    durable = group(read_csv(res, "durable.csv"), "target")
    durable_rate = {k[0]: spread(r["jobs_per_s"] for r in v)
                    for k, v in durable.items()}
    durable_med = {k: (v[0] if v else None) for k, v in durable_rate.items()}
    full_rate = durable_med.get("pool_durable_full")
    targets.append(("durable (SQLite FULL, grouped commits) ≥ 20,000 "
                    "operations/s",
                    f"{num(full_rate)} operations/s" if full_rate else "n/a",
                    verdict(None if full_rate is None
                            else full_rate >= 20000)))

    # -- bulk
    bulk = group(read_csv(res, "bulk.csv"), "target")
    bulk_rate = {k[0]: spread(r["jobs_per_s"] for r in v)
                 for k, v in bulk.items()}
    bulk_med = {k: v[0] for k, v in bulk_rate.items()}
    bulk_batch = next((r["jobs_per_request"] for v in bulk.values()
                       for r in v), "?")
    bulk_vs_perjob = (bulk_med["pool"] / med["actor_pool"]
                      if "pool" in bulk_med and med.get("actor_pool")
                      else None)
    targets.append((f"bulk ({bulk_batch} inputs per submit): pool ≥ 3× "
                    "actor_pool per-job", ratio(bulk_vs_perjob),
                    verdict(None if bulk_vs_perjob is None
                            else bulk_vs_perjob >= 3)))

    # -- uneven
    runs = read_csv(res, "uneven_runs.csv")
    uneven = group(runs, "scheduler", "distribution", "load", "variant")

    def u(sched, dist, load, variant, field):
        rows = uneven.get((sched, dist, load, variant), [])
        # (Results from before a column existed leave it out.)
        return spread(r[field] for r in rows if r.get(field))

    spin_pull = u("spin", "bimodal", "0.7", "pull", "p99_us")
    spin_rr = u("spin", "bimodal", "0.7", "round_robin", "p99_us")
    spin_ratio = spin_rr[0] / spin_pull[0] if spin_pull and spin_rr else None
    tgt = ("default", "bimodal", "0.7")
    pull_p99 = u(*tgt, "pull", "p99_us")
    rr_p99 = u(*tgt, "round_robin", "p99_us")
    ideal_p99 = u(*tgt, "pull", "ideal_p99_us")
    rr_over_pull = (rr_p99[0] / pull_p99[0]) if pull_p99 and rr_p99 else None
    pull_over_ideal = ((pull_p99[0] / ideal_p99[0])
                       if pull_p99 and ideal_p99 else None)
    targets.append(("bimodal @ load 0.7: p99 ≥ 1.6× lower than round-robin",
                    f"round-robin p99 ÷ pull p99 = {ratio(rr_over_pull)}",
                    verdict(None if rr_over_pull is None
                            else rr_over_pull >= 1.6)))
    targets.append(("bimodal @ load 0.7: p99 within 20% of the ideal replay",
                    f"pull p99 ÷ ideal p99 = {ratio(pull_over_ideal)}",
                    verdict(None if pull_over_ideal is None
                            else pull_over_ideal <= 1.2)))

    # -- idle latency
    lat = group(read_csv(res, "latency_idle.csv"), "target")
    lat50 = {k[0]: spread(r["p50_ns"] for r in v) for k, v in lat.items()}
    lat99 = {k[0]: spread(r["p99_ns"] for r in v) for k, v in lat.items()}
    idle50 = (lat50["pool"][0] / lat50["bare_actor"][0]
              if "pool" in lat50 and "bare_actor" in lat50 else None)
    idle99 = (lat99["pool"][0] / lat99["bare_actor"][0]
              if "pool" in lat99 and "bare_actor" in lat99 else None)
    targets.append(("idle single-job latency ≤ 1.5× bare CAF request "
                    "(p50 and p99)", f"p50 {ratio(idle50)}, p99 "
                    f"{ratio(idle99)}",
                    verdict(None if idle50 is None
                            else idle50 <= 1.5 and idle99 <= 1.5)))

    # -- queue
    queue = group(read_csv(res, "queue.csv"), "via", "entries")
    qcell = {k: {f: spread(r[f] for r in v)
                 for f in ("bytes_per_entry", "enqueue_ns_per_entry",
                           "dequeue_ns_per_entry")}
             for k, v in queue.items()}
    qn = next((r["n"] for v in queue.values() for r in v), "?")
    per_entry = qcell.get(("pool_dedicated", "queued"),
                          {}).get("bytes_per_entry")
    targets.append(("≤ 256 bytes per queued trivial entry (through the pool)",
                    f"{num(per_entry[0]) if per_entry else 'n/a'} B",
                    verdict(None if per_entry is None
                            else per_entry[0] <= 256)))

    # -- workers
    workers = group(read_csv(res, "workers.csv"), "target", "workers")
    wcell = {k: {f: spread(r[f] for r in v)
                 for f in ("spawn_ms", "bytes_per_worker", "stats_p50_us",
                           "stats_p99_us")}
             for k, v in workers.items()}
    spawn10k = wcell.get(("pool", "10000"), {}).get("spawn_ms")
    targets.append(("10,000 cooperative workers spawned in < 1 s",
                    f"{num(spawn10k[0], 1)} ms" if spawn10k else "n/a",
                    verdict(None if spawn10k is None
                            else spawn10k[0] < 1000)))

    # -- write ---------------------------------------------------------------
    quick = meta.get("mode") == "quick"
    w("# Benchmarks")
    w("")
    w("<!-- Generated by bench/report.py from the raw results of "
      "bench/pool_bench; do not edit by hand. Rerun everything with "
      "`bench/run`. -->")
    w("")
    if quick:
        w("> **Quick (smoke) mode**: small counts and one repetition; these "
          "numbers only show that the harness runs. Run `bench/run` for the "
          "full benchmark.")
        w("")
    w("The pool against named baselines, all measured in one run of one "
      "binary (`bench/pool_bench`) on one machine. Ratios compare medians "
      "over repetitions; ranges in parentheses are the minimum and maximum "
      "over repetitions.")
    w("")
    w("## Machine")
    w("")
    w(table(["", ""], [
        ["CPU", meta.get("cpu", "?")],
        ["cores", meta.get("cores", "?")],
        ["CAF", meta.get("caf_version", "?") + " (Debian libcaf-dev)"],
        ["compiler", "GCC " + meta.get("compiler", "?") +
         (", optimized (Release)" if meta.get("optimized") else
          ", not optimized")],
        ["library source", source],
        ["date (UTC)", meta.get("date", "?")],
        ["mode", meta.get("mode", "?")],
    ]))
    w("")
    load = read_csv(res, "machine_load.csv")
    if load:
        w("CPU share of the machine used while each workload ran (of all "
          "cores; *other* = every other process):")
        w("")
        w(table(["workload", "seconds", "this benchmark", "other processes"],
                [[r["workload"], f"{float(r['seconds']):.0f}",
                  f"{float(r['self_cpu_share']) * 100:.0f}%",
                  f"{float(r['other_cpu_share']) * 100:.0f}%"]
                 for r in load]))
        w("")
        busiest = max(float(r["other_cpu_share"]) for r in load)
        if busiest > 0.10:
            w(f"> **Warning**: other processes used up to "
              f"{busiest * 100:.0f}% of the machine during this run; "
              "figures for the workloads concerned are skewed (latency and "
              "the pull protocol's dispatch suffer most). Rerun `bench/run` "
              "on an idle machine.")
            w("")
    w("## Targets")
    w("")
    w(table(["target", "measured", "verdict"], targets))
    w("")
    # -- findings, in numbers from this run
    findings = []
    sweep_pool = [float(r["jobs_per_s"]) for r in read_csv(res, "sweep.csv")
                  if r["target"] == "pool"]
    sweep_note = ""
    if sweep_pool:
        sweep_note = (f"Across the sweep (1–4 workers, 1–4 scheduler threads) "
                      f"the pool stays between {num(min(sweep_pool))} and "
                      f"{num(max(sweep_pool))} jobs/s: the single shepherd, "
                      "not the worker count, sets the pace. ")
    trivial_cpu_note = (
        "CAF's work stealing wakes no sleeping thread for a message sent "
        "from inside the scheduler, so the requesting actor, the shepherd "
        "and the workers mostly take turns on one thread (the pool alone, "
        "`POOL_BENCH_TARGETS=pool bench/pool_bench --only trivial` under "
        "`perf stat`, keeps about one core busy), and the pool's extra hops "
        "add to the time rather than overlapping it. ")
    if med.get("pool") and med.get("actor_pool"):
        findings.append(
            f"**Per-job cost.** A trivial operation costs the pool "
            f"{1e6 / med['pool']:.1f} µs of pipeline time "
            f"({num(med['pool'])} jobs/s) against "
            f"{1e6 / med['actor_pool']:.1f} µs through `caf::actor_pool` "
            f"({num(med['actor_pool'])} jobs/s). With adaptive batching "
            "the shepherd handles each operation's submit on its own, while "
            "the queue's answers to `add_work` and `get_work`, `give_work` "
            "and `status_rep` are shared by the jobs of a batch (up to 64); "
            "it still delivers every caller's reply, where `actor_pool` "
            "forwards one message in the sender's context and the worker "
            "answers the caller itself. "
            + trivial_cpu_note + sweep_note +
            "Batching by the caller goes further: one submit of "
            f"{bulk_batch} inputs makes the pool "
            f"{ratio(bulk_vs_perjob)} faster per input than per-job "
            "`actor_pool`.")
    ded = qcell.get(("pool_dedicated", "queued"), {}).get(
        "dequeue_ns_per_entry")
    coop = qcell.get(("pool_cooperative", "queued"), {}).get(
        "dequeue_ns_per_entry")
    if (ded and coop and "bare_detached_actor" in lat50
            and "bare_actor" in lat50):
        findings.append(
            f"**Threads outside the scheduler.** A request to a detached CAF "
            f"actor takes {lat50['bare_detached_actor'][0] / 1e3:.0f} µs "
            f"(p50) against {lat50['bare_actor'][0] / 1e3:.0f} µs for a "
            "scheduled one. With CAF's own settings an idle scheduler thread "
            "sleeps 50 µs between polls for its first 500 polls, so a "
            "message from outside the scheduler (a dedicated worker's status "
            "reply, a detached actor's answer) waited ~100 µs; "
            "`pool::configure` now sets `work-stealing.moderate-poll-attempts"
            " = 0`, so idle threads wait on their condition variable and an "
            "enqueue wakes them at once (see *What each change was worth*). "
            "With trivial jobs queued, a single dedicated worker turns one "
            f"over every {ded[0] / 1e3:.0f} µs, a single cooperative one "
            f"every {coop[0] / 1e3:.1f} µs"
            + (f"; at bimodal @ 0.7, round-robin p99 ÷ pull p99 is "
               f"{ratio(rr_over_pull)} (with polling scheduler threads: "
               f"{ratio(spin_ratio)})."
               if rr_over_pull is not None and spin_ratio is not None
               else "."))
    gap_pull = u(*tgt, "pull", "gap_mean_us")
    gap_rr = u(*tgt, "round_robin", "gap_mean_us")
    handoff_p99 = u(*tgt, "pull", "ideal_handoff_p99_us")
    cores = meta.get("cores", "?")
    # Per run: how much of pull's distance from the ideal p99 the replay
    # with the hand-off explains; the median over the runs.
    shares = [(float(r["ideal_handoff_p99_us"]) - float(r["ideal_p99_us"]))
              / (float(r["p99_us"]) - float(r["ideal_p99_us"]))
              for r in uneven.get(tgt + ("pull",), [])
              if r.get("ideal_handoff_p99_us")
              and float(r["p99_us"]) > float(r["ideal_p99_us"])]
    share = statistics.median(shares) if shares else None
    if gap_pull and gap_rr and handoff_p99 and pull_p99 and ideal_p99:
        findings.append(
            "**Pull's distance from the ideal: the hand-off between two "
            "jobs.** In plain pulling, when a dedicated worker finishes a job "
            "while another waits, the next job starts only after the "
            "worker's report has crossed to the shepherd (a scheduler thread "
            "is woken) and the shepherd's `work_to_do` has crossed back (the "
            "worker's thread is woken). With *lookahead* (on by default; "
            "docs/protocol.md) the next waiting entry already sits in a "
            "busy worker's mailbox under a claim ticket, as a round-robin "
            "job would, and a worker that comes free while nothing else is "
            "ready takes it back, so nothing waits behind a long job: the "
            "hand-off is "
            f"{gap_pull[0]:.0f} µs on average at bimodal @ 0.7, against "
            f"{gap_rr[0]:.0f} µs for a round-robin worker (the ablation "
            "below has pull without lookahead and without hand-ahead). Replaying the ideal central "
            "queue once more, each job holding its worker for pull's mean "
            "hand-off longer and answered that much later, gives a p99 of "
            f"{handoff_p99[0] / 1e3:.2f} ms, against "
            f"{ideal_p99[0] / 1e3:.2f} ms without it and "
            f"{pull_p99[0] / 1e3:.2f} ms measured for pull (medians over the "
            "runs)"
            + ("" if share is None else
               ": per run, the hand-off accounts for "
               + ("all" if share >= 1 else f"{share * 100:.0f}%")
               + " of pull's distance from the ideal p99 (median over the "
               "runs; the rest is not the mean hand-off: the machine's own "
               "noise, which the ranges show, or waits this replay does not "
               "model)")
            + ". A worker that busy-waits for its next `work_to_do` instead "
            f"of sleeping was tried and dropped: on this {cores}-core "
            "machine it takes the core the shepherd needs.")
    if findings:
        w("## What the numbers say")
        w("")
        for f in findings:
            w("- " + f)
        w("")

    w("## Method")
    w("")
    w("- **Timing**: `std::chrono::steady_clock`; every workload starts with "
      "a short warm-up that is not recorded; throughput figures are medians "
      "over repetitions (5 in the full run, 3 for the sweep), run "
      "interleaved across targets so that drift hits all of them alike.")
    w("- **Pool**: `pool::spawn_pool(sys, fn, pool_options{}.workers(n))` "
      "(cooperative workers unless marked *dedicated*), submits with "
      "`self->request(pool, caf::infinite, pool::submit_atom_v, x)` from one "
      "event-based actor.")
    w("- **Baselines**: `caf::actor_pool::make(..., n, factory, "
      "caf::actor_pool::round_robin())` over event-based actors running the "
      "same job code, request/reply per job; a *bare actor* (one CAF "
      "request to one actor: the messaging floor); `cv_thread_pool`, a "
      "plain thread pool with one mutex and one condition variable, driven "
      "from a plain thread; for uneven durations, round-robin push: the "
      "same `actor_pool` over 2 *detached* actors running the same sleeping "
      "job.")
    w("- **Window**: trivial jobs keep 512 requests outstanding; bulk keeps "
      "64 batches outstanding.")
    w("- **Memory**: RSS delta from `/proc/self/statm`, after `malloc_trim` "
      "and a 200 ms pause so that workers have initialized.")
    w("- **CAF scheduler**: CAF's defaults (`scheduler.max-threads` = "
      "max(cores, 4) = 4 here, work stealing) plus what `pool::configure` "
      "sets (`work-stealing.moderate-poll-attempts` = 0), for the pool and "
      "every baseline alike, unless the sweep or a row says otherwise.")
    w("")

    w("## Trivial jobs, one request per job")
    w("")
    w("`int32_t -> int32_t` (x → 2x), 2 workers everywhere, 512 requests "
      "outstanding from one requesting actor (the thread pool: from one "
      "thread).")
    w("")
    rows = []
    for name, label in TRIVIAL_TARGETS:
        if name in rate:
            rows.append([label, with_spread(rate[name]),
                         ratio(over(name, "actor_pool")),
                         ratio(over("pool", name))])
    w(table(["target", "jobs/s", "target ÷ actor_pool",
             "pool (cooperative) ÷ target"], rows))
    w("")

    w("## Bulk: many inputs per submit")
    w("")
    w(f"A job over a batch: `std::vector<int32_t>` of {bulk_batch} inputs in, "
      "the vector of results out; the same for `actor_pool`. Jobs/s counts "
      "inputs.")
    w("")
    rows = []
    for name, label in BULK_TARGETS:
        if name in bulk_rate:
            rows.append([label, with_spread(bulk_rate[name]),
                         ratio(bulk_med["pool"] / bulk_med[name]),
                         ratio(bulk_med[name] / med["actor_pool"])
                         if med.get("actor_pool") else "n/a"])
    if "actor_pool" in rate:
        rows.append(["actor_pool, per-job (from above)",
                     with_spread(rate["actor_pool"]), ratio(
                         bulk_med.get("pool", 0) / med["actor_pool"]), "1.00×"])
    w(table(["target", "inputs/s", "pool bulk ÷ target",
             "target ÷ actor_pool per-job"], rows))
    w("")

    if durable_rate:
        w("## Durable queue: submit and complete")
        w("")
        w("Trivial jobs as above (2 cooperative workers, 512 outstanding), "
          "each acknowledged only once on disk and its outcome recorded, "
          "over an SQLite file in /tmp; commits are grouped (at most one "
          "per `commit_interval`, default 1 ms).")
        extra = os.path.join(res, "durable_source.txt")
        if os.path.exists(extra):
            with open(extra) as f:
                w("")
                w(f"(This table was measured in a separate run, at "
                  f"`{f.read().strip()}`.)")
        w("")
        rows = []
        for name, label in DURABLE_TARGETS:
            if name in durable_rate:
                rows.append([label, with_spread(durable_rate[name]),
                             ratio(durable_med[name] /
                                   durable_med["pool_memory"])
                             if durable_med.get("pool_memory") else "n/a"])
        w(table(["store", "operations/s", "÷ in memory"], rows))
        w("")
    figure("throughput")

    w("## Idle latency: one job at a time")
    w("")
    w("One request at a time, the next 200 µs after the previous reply, so "
      "the pool's workers are asleep again; round trip as seen by the "
      "requesting actor.")
    w("")
    rows = []
    for name, label in IDLE_TARGETS:
        if name in lat50:
            rows.append([label, with_spread(lat50[name], 1, 1e-3),
                         with_spread(lat99[name], 1, 1e-3),
                         ratio(lat50[name][0] / lat50["bare_actor"][0]),
                         ratio(lat99[name][0] / lat99["bare_actor"][0])])
    w(table(["target", "p50 µs", "p99 µs", "p50 ÷ bare", "p99 ÷ bare"], rows))
    w("")
    figure("latency_idle")
    w("The cooperative pool's round trip (in-memory store) is four messages "
      "(`submit`, `work_to_do`, `status_rep`, the reply) against the bare "
      "request's two, so about 2× the bare request is its floor; with the "
      "short cuts nothing else is on the path (the worker's `give_work` "
      "after its report is answered by `go_sleep` without the queue; "
      "docs/protocol.md, \"Speed mechanisms\"). A dedicated worker adds two "
      "crossings between its own thread and the scheduler's, each like the "
      "bare request to a detached actor.")
    w("")

    w("## Uneven durations: the connection-limit case")
    w("")
    w("2 dedicated workers whose jobs sleep (like a database call); Poisson "
      "arrivals; durations bimodal (95% × 250 µs, 5% × 5,250 µs) or "
      "exponential (mean 500 µs). Timers overshoot, more so under load, so "
      "each point starts with a calibration run at the target load (which "
      "also warms both variants up) that measures the mean service time the "
      "jobs really take; the arrival rate is then `load × 2 / that mean`. "
      "*Actual load* is Σ observed durations / (2 × arrival span) of each "
      "run. Each point runs pull and round-robin alternately "
      "(pull, round-robin, pull, …) over the same arrival trace per pair. "
      "*Ideal* replays each pull run's arrival times and observed durations "
      "through an FCFS central queue with 2 servers and no messaging cost "
      "(M/G/2), computed by the benchmark. Latency is arrival to reply, "
      "measured by the requesting actor.")
    w("")
    calib = read_csv(res, "uneven_calibration.csv")
    jobs = next((r["jobs"] for r in runs), "?")
    nruns = {}
    for r in runs:
        nruns.setdefault((r["scheduler"], r["distribution"], r["load"],
                          r["variant"]), set()).add(r["run"])
    rows = []
    points = []
    for r in runs:
        key = (r["scheduler"], r["distribution"], r["load"])
        if key not in points:
            points.append(key)
    for key in points:
        sched, dist, load = key
        pm, rm = u(*key, "pull", "mean_us"), u(*key, "round_robin", "mean_us")
        pp, rp = u(*key, "pull", "p99_us"), u(*key, "round_robin", "p99_us")
        im, ip = u(*key, "pull", "ideal_mean_us"), u(*key, "pull",
                                                       "ideal_p99_us")
        al = u(*key, "pull", "actual_load")
        n = len(nruns.get(key + ("pull",), ()))
        label = f"{dist} @ {load}" + ("" if sched == "default"
                                      else " (polling scheduler)")
        rows.append([label, f"{n} × {jobs}", with_spread(al, 2),
                     with_spread(pm, 2, 1e-3), with_spread(rm, 2, 1e-3),
                     num(im[0] / 1e3, 2) if im else "n/a",
                     with_spread(pp, 2, 1e-3), with_spread(rp, 2, 1e-3),
                     num(ip[0] / 1e3, 2) if ip else "n/a",
                     ratio(rp[0] / pp[0]) if pp and rp else "n/a",
                     ratio(pp[0] / ip[0]) if pp and ip else "n/a"])
    w(table(["point", "runs × jobs", "actual load", "mean ms pull",
             "mean ms round-robin", "mean ms ideal", "p99 ms pull",
             "p99 ms round-robin", "p99 ms ideal", "round-robin p99 ÷ pull",
             "pull p99 ÷ ideal"], rows))
    w("")
    if calib:
        w("Calibration (mean service time under load, µs; requested mean "
          "500): " + "; ".join(
              f"{c['distribution']} @ {c['load']}"
              f"{'' if c['scheduler'] == 'default' else ' polling'}: "
              f"{float(c['mean_service_us']):.0f} (idle overshoot "
              f"{float(c['idle_overshoot_us']):.0f})" for c in calib) + ".")
        w("")
    rows = []
    for key in points:
        sched, dist, load = key
        label = f"{dist} @ {load}" + ("" if sched == "default"
                                      else " (polling scheduler)")
        gp = u(*key, "pull", "gap_mean_us")
        gr = u(*key, "round_robin", "gap_mean_us")
        if not gp or not gr:
            continue
        rows.append([label, with_spread(gp, 1), with_spread(
                         u(*key, "pull", "gap_p50_us"), 1),
                     with_spread(u(*key, "pull", "gap_p99_us"), 0),
                     with_spread(gr, 1),
                     with_spread(u(*key, "round_robin", "gap_p50_us"), 1),
                     num(u(*key, "pull", "ideal_p99_us")[0] / 1e3, 2),
                     with_spread(u(*key, "pull", "ideal_handoff_p99_us"), 2,
                                 1e-3),
                     with_spread(u(*key, "pull", "p99_us"), 2, 1e-3)])
    if rows:
        w("**Hand-off between jobs.** On each worker, from the end of one job "
          "to the start of the next, counted where the next job had already "
          "arrived when the first started (it surely waited), from "
          "the start and end times the jobs log themselves. *Ideal + "
          "hand-off* replays the ideal central queue again with each job "
          "holding its server for the run's mean pull hand-off longer and "
          "answered that much later.")
        w("")
        w(table(["point", "pull mean µs", "pull p50 µs", "pull p99 µs",
                 "round-robin mean µs", "round-robin p50 µs",
                 "p99 ms ideal", "p99 ms ideal + hand-off", "p99 ms pull"],
                rows))
        w("")
    w(f"![latency CDF, pull vs round-robin vs ideal]({png_rel})")
    w("")
    w("The *polling scheduler* rows rerun the target case on an actor system "
      "with `work-stealing.aggressive-poll-attempts = 100000`: idle CAF "
      "scheduler threads keep polling instead of sleeping between polls. "
      "Messages from dedicated workers (threads outside the scheduler) to "
      "the shepherd are then picked up at once; compare the *detached actor* "
      "row of the idle-latency table. It burns CPU while idle, so it is a "
      "diagnosis, not a recommendation.")
    w("")

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

    ablation = read_csv(res, "ablation.csv")
    if ablation:
        cell = {(r["variant"], r["metric"]): float(r["median"])
                for r in ablation}
        names = []
        for r in ablation:
            if r["variant"] not in names:
                names.append(r["variant"])
        w("## What each change was worth")
        w("")
        if separate_run(res, "ablation"):
            w(separate_run(res, "ablation"))
            w("")
        w("The speed-ups of this version, each switched off (or its "
          "alternative switched on) in turn, on an actor system of its own "
          "per row; *none* is the pool as it was before them. Trivial jobs: "
          "cooperative workers, 512 outstanding; idle latency: one job at a "
          "time, 200 µs apart; both with the rows taking turns within each "
          "repetition (5 in the full run), so that drift hits them alike. "
          "Bimodal @ 0.7: the uneven target case, pull alone, against the "
          "ideal replay of its own runs (3 in the full run), one row after "
          "the other. Medians over the repetitions.")
        w("")
        w("Each row switches one field of `pool::dispatch_tuning` "
          "(docs/design.md \"Dispatch\"; docs/protocol.md has the "
          "messages):")
        w("")
        w("- *direct hand-out*: a submit on an idle pool goes straight to "
          "the most recent sleeper, past the queue.")
        w("- *sleeping past the queue*: a worker asking when nothing is due "
          "is told to sleep without a trip to the queue.")
        w("- *prefetch*: while every worker is busy, due entries are taken "
          "out of the queue ahead (hand-ahead and lookahead need it).")
        w("- *hand-ahead*: while jobs go one at a time and every worker is "
          "busy, the next due entry goes to all the busy workers under one "
          "claim ticket; the first whose job ends starts it.")
        w("- *lookahead*: a busy worker gets its next batch while it runs "
          "one and starts it without asking (docs/protocol.md "
          "\"Lookahead\").")
        w("- *batching* (`max_batch`, 64, and `batch_time`, 1 ms): while "
          "more is due than there are workers and jobs are short, several "
          "jobs go to a worker in one `work_to_do` and come back in one "
          "`status_rep`. *Without batching* is `max_batch(1)`.")
        w("- *grouped adds*: entries due now go to the queue in one "
          "`add_work` while another add is on its way.")
        w("- *CAF's default polling*: `work-stealing.moderate-poll-attempts`"
          " back at CAF's 500 instead of `pool::configure`'s 0.")
        w("")
        rows = []
        for n in names:
            def g(metric, scale=1.0, digits=1):
                x = cell.get((n, metric))
                return "n/a" if x is None else num(x / scale, digits)
            p99 = cell.get((n, "uneven_p99_ns"))
            ideal = cell.get((n, "uneven_ideal_p99_ns"))
            rows.append([n, g("trivial_jobs_per_s", digits=0),
                         g("idle_p50_ns", 1e3), g("idle_p99_ns", 1e3),
                         g("idle_dedicated_p50_ns", 1e3),
                         g("idle_dedicated_p99_ns", 1e3),
                         g("uneven_p99_ns", 1e6, 2),
                         ratio(p99 / ideal) if p99 and ideal else "n/a"])
        w(table(["variant", "trivial jobs/s", "idle p50 µs", "idle p99 µs",
                 "idle dedicated p50 µs", "idle dedicated p99 µs",
                 "bimodal @ 0.7 p99 ms", "p99 ÷ ideal"], rows))
        w("")
        figure("ablation")
        # The defaults twice, each on an actor system of its own: their
        # gap in each column is this run's noise.
        metrics = [("trivial_jobs_per_s", "trivial jobs/s"),
                   ("idle_p50_ns", "idle p50"), ("idle_p99_ns", "idle p99"),
                   ("idle_dedicated_p50_ns", "idle dedicated p50"),
                   ("idle_dedicated_p99_ns", "idle dedicated p99"),
                   ("uneven_p99_ns", "bimodal p99")]
        gaps = []
        for m, label in metrics:
            a = cell.get(("all (the defaults)", m))
            b = cell.get(("all again (noise)", m))
            if a and b:
                gaps.append(f"{label} {abs(a - b) / min(a, b) * 100:.0f}%")
        if gaps:
            w("How much of a gap is noise: *all again* is the defaults a "
              "second time, on an actor system of its own, measured in the "
              "same turns. The two rows differ by " + ", ".join(gaps) +
              " in this run; a gap of that size between other rows in that "
              "column says nothing.")
            w("")
        w(REMOVED_AFTER_MEASURING)
        w("")
        w("Not switchable, so not in the table: a queued operation got "
          "smaller. A submit's payload is repacked into a message of its "
          "own (CAF's `message::drop` kept the whole submit alive behind an "
          "index table), and the rare fields of an operation (attempt "
          "history, unique key, watched caller) moved to a side table. "
          "Through a pool with one dedicated worker, 1,000,000 queued "
          "trivial entries took 425 B each before (the previous report) "
          "and take what the queue table above says now.")
        w("")

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


if __name__ == "__main__":
    sys.exit(main())
