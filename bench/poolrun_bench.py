#!/usr/bin/env python3
"""poolrun against xargs -P and GNU parallel: per-command overhead of
`true` at -j 2, the journal's cost, and peak memory (docs/benchmarks.md,
section "poolrun").

Every round runs each tool once, in a rotating order (the tool that went
first goes last next round), so that slow spells of a shared machine hit
all tools alike; the report gives medians over rounds with the minimum and
maximum in parentheses, and ratios of medians.

  bench/poolrun_bench.py --poolrun build-bench/apps/poolrun/poolrun
  bench/poolrun_bench.py --quick            (a smoke run, < 1 minute)
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from md_section import write_section

BEGIN = "<!-- poolrun-bench:begin -->"
END = "<!-- poolrun-bench:end -->"


def run_once(argv, stdin_path, env=None):
    """Runs argv with stdin from a file; returns (wall s, cpu s, max RSS KiB).

    The peak RSS comes from /usr/bin/time (GNU time's %M): a process keeps
    the peak of the process it was forked from, so measuring from this
    Python process would report Python's size.
    """
    with tempfile.NamedTemporaryFile(prefix="poolrun-rss-") as rss_file:
        timed = ["/usr/bin/time", "-f", "%M", "-o", rss_file.name] + argv
        with open(stdin_path, "rb") as stdin:
            start = time.perf_counter()
            proc = subprocess.Popen(timed, stdin=stdin,
                                    stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, env=env)
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - start
        err = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            sys.exit(f"{argv[0]} failed ({code}): {err}")
        rss = int(open(rss_file.name).read().split()[-1])
    return wall, usage.ru_utime + usage.ru_stime, rss


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def lines_file(directory, count):
    path = os.path.join(directory, f"seq{count}")
    with open(path, "w") as f:
        f.write("".join(f"{i}\n" for i in range(1, count + 1)))
    return path


def median_range(xs):
    return statistics.median(xs), min(xs), max(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--poolrun", default="build-bench/apps/poolrun/poolrun")
    ap.add_argument("--parallel", default="/usr/bin/parallel")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--count", type=int, default=10000,
                    help="commands per run (xargs, poolrun)")
    ap.add_argument("--parallel-count", type=int, default=1000,
                    help="commands per GNU parallel run (it is slow)")
    ap.add_argument("--rss-count", type=int, default=100000,
                    help="commands of the memory run")
    ap.add_argument("--out", default="bench/results-poolrun")
    ap.add_argument("--md", default=None,
                    help="update the poolrun section of this file")
    ap.add_argument("--png", default=None)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.count, args.parallel_count = 2, 500, 100
        args.rss_count = 2000
    poolrun = os.path.abspath(args.poolrun)
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="poolrun-bench-")
    try:
        many = lines_file(work, args.count)
        few = lines_file(work, args.parallel_count)
        journal = os.path.join(work, "journal.db")
        tools = {
            "xargs": (["xargs", "-P2", "-n1", "true"], many, args.count),
            "poolrun": ([poolrun, "-j2", "true"], many, args.count),
            "poolrun --journal": ([poolrun, "-j2", "--journal", journal,
                                   "true"], many, args.count),
            "GNU parallel": ([args.parallel, "--will-cite", "-j2", "true"],
                             few, args.parallel_count),
        }
        names = list(tools)
        runs = {name: [] for name in names}
        load = [loadavg()]
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                argv, stdin, count = tools[name]
                if os.path.exists(journal):
                    os.remove(journal)
                wall, cpu, rss = run_once(argv, stdin)
                runs[name].append({"wall_s": wall, "cpu_s": cpu,
                                   "max_rss_kib": rss, "count": count,
                                   "us_per_command": wall / count * 1e6})
                print(f"round {r + 1} {name:18} {wall / count * 1e6:8.0f} "
                      f"us/command  cpu {cpu / count * 1e6:6.0f} us  "
                      f"rss {rss} KiB", flush=True)
            load.append(loadavg())
        rss_lines = lines_file(work, args.rss_count)
        wall, cpu, rss = run_once([poolrun, "-j2", "true"], rss_lines)
        print(f"memory run: {args.rss_count} lines in {wall:.1f} s, "
              f"max RSS {rss} KiB", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    per = {n: median_range([x["us_per_command"] for x in runs[n]])
           for n in names}
    result = {
        "machine": {"cpu": platform.processor() or platform.machine(),
                    "cores": os.cpu_count(), "loadavg": load},
        "rounds": args.rounds, "count": args.count,
        "parallel_count": args.parallel_count,
        "runs": runs, "per_command_us": per,
        "rss_run": {"count": args.rss_count, "wall_s": wall,
                    "max_rss_kib": rss},
        "quick": args.quick,
    }
    with open(os.path.join(args.out, "poolrun.json"), "w") as f:
        json.dump(result, f, indent=1)
    if args.md:
        write_report(result, args.md, args.png)


def write_report(res, md, png):
    per = res["per_command_us"]
    ratio = lambda a, b: per[a][0] / per[b][0]
    fmt = lambda name: (f"{per[name][0]:.0f} µs ({per[name][1]:.0f}–"
                        f"{per[name][2]:.0f})")
    rss_mib = res["rss_run"]["max_rss_kib"] / 1024
    targets = [
        ("per command: poolrun ≤ 1.0× xargs -P2 -n1",
         f"{ratio('poolrun', 'xargs'):.2f}×",
         ratio("poolrun", "xargs") <= 1.0),
        ("GNU parallel ÷ poolrun ≥ 5×",
         f"{ratio('GNU parallel', 'poolrun'):.1f}×",
         ratio("GNU parallel", "poolrun") >= 5),
        ("--journal ≤ 1.3× without",
         f"{ratio('poolrun --journal', 'poolrun'):.2f}×",
         ratio("poolrun --journal", "poolrun") <= 1.3),
        (f"{res['rss_run']['count']:,} lines: peak RSS ≤ 20 MiB",
         f"{rss_mib:.1f} MiB", rss_mib <= 20),
    ]
    out = [BEGIN, "## poolrun: against xargs -P and GNU parallel", "",
           "<!-- Generated by bench/poolrun_bench.py; rerun with "
           "`bench/run_poolrun`. -->", "",
           f"`true` as the command, at `-j 2`, input from a file: "
           f"{res['count']:,} commands per run for xargs and poolrun, "
           f"{res['parallel_count']:,} for GNU parallel (it is that much "
           f"slower). {res['rounds']} rounds; each round runs every tool "
           f"once, the order rotating. Per command = wall time ÷ commands; "
           f"median over rounds (minimum–maximum). Machine: "
           f"{res['machine']['cores']} cores, load average "
           f"{', '.join(f'{x:.1f}' for x in res['machine']['loadavg'])} "
           f"over the rounds (a shared machine)." +
           (" **Quick smoke run: figures not meaningful.**"
            if res["quick"] else ""), "",
           "| target | measured | verdict |", "| --- | --- | --- |"]
    for name, value, ok in targets:
        out.append(f"| {name} | {value} | {'met' if ok else '**not met**'} |")
    out += ["", "| tool | per command | CPU per command | peak RSS |",
            "| --- | --- | --- | --- |"]
    for name in per:
        runs = res["runs"][name]
        cpu = statistics.median(x["cpu_s"] / x["count"] * 1e6 for x in runs)
        rss = max(x["max_rss_kib"] for x in runs)
        out.append(f"| {name} | {fmt(name)} | {cpu:.0f} µs | {rss / 1024:.1f} "
                   f"MiB |")
    out += ["", f"Memory: {res['rss_run']['count']:,} lines of `true` through "
            f"`poolrun -j2` peaked at {rss_mib:.1f} MiB RSS "
            f"({res['rss_run']['wall_s']:.0f} s)."]
    if png and plot(res, png):
        rel = os.path.relpath(png, os.path.dirname(os.path.abspath(md)))
        out += ["", f"![per-command time of each tool]({rel})"]
    out += ["", END, ""]
    write_section(md, BEGIN, END, out)
    print(f"wrote the poolrun section of {md}")


def plot(res, png):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no matplotlib: no plot", file=sys.stderr)
        return False
    per = res["per_command_us"]
    names = list(per)
    med = [per[n][0] for n in names]
    low = [per[n][0] - per[n][1] for n in names]
    high = [per[n][2] - per[n][0] for n in names]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.barh(names, med, xerr=[low, high], color=["#888", "#1f77b4", "#6baed6",
                                                 "#d62728"], capsize=4)
    ax.set_xlabel("wall time per `true` at -j 2 (µs; bars: median, "
                  "whiskers: min–max)")
    ax.invert_yaxis()
    top = max(per[n][2] for n in names)
    for i, n in enumerate(names):
        ax.text(per[n][2] + top * 0.01, i, f"{per[n][0]:.0f} µs",
                va="center", fontsize=8)
    ax.set_xlim(0, top * 1.15)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(png)), exist_ok=True)
    fig.savefig(png, dpi=110)
    return True


if __name__ == "__main__":
    main()
