"""The plots of the tables in docs/benchmarks.md (throughput.png,
latency_idle.png, sweep.png, workers.png, ablation.png), drawn by
bench/report.py with matplotlib only, and the targets the tables and plots
name, in their order.
"""

import math
import os
import statistics

from report_util import group, num, read_csv, spread


# -- plots of the tables -------------------------------------------------------
# One function per plot, each reading the raw results itself; `table_plots`
# draws them all (with matplotlib only) and the sections of the report
# place each under its table with `ctx.figure(...)`.

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
