#!/usr/bin/env python3
"""The functions of the pool that one submit on an idle pool runs.

Runs `pool_per_job pool N 2 1 1` (one job at a time, so each finds the pool
idle) under callgrind, and lists every function of the project's own code
(libpool/, actors/) that ran at least once per job, by file: the path a
submit crosses from the caller's message to its reply. Functions the
compiler inlined do not show (they cost no call).

  bench/idle_path.py [--build DIR] [--jobs N]
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile


def parse(path):
    """Call counts per (file, function) from a callgrind output file."""
    files, names = {}, {}
    calls = collections.Counter()
    where = {}
    cfl = cur_fl = None
    cfn = None
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        m = re.match(r"(c?f[lin]|cf[il]|fe|fi)=\((\d+)\)(?: (.*))?$", line)
        if m:
            key, ident, text = m.groups()
            table = files if key in ("fl", "fi", "fe", "cfl", "cfi") else names
            if text:
                table[ident] = text
            if key == "fl":
                cur_fl = files.get(ident)
                cfl = None
            elif key == "fn":
                where.setdefault(names.get(ident), cur_fl)
                cfl = None
            elif key in ("cfl", "cfi"):
                cfl = files.get(ident)
            elif key == "cfn":
                cfn = names.get(ident)
                if cfl is not None:
                    where.setdefault(cfn, cfl)
            continue
        if line.startswith("calls="):
            calls[cfn] += int(line.split("=")[1].split()[0])
    return calls, where


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(root, "build"))
    ap.add_argument("--jobs", type=int, default=2000)
    args = ap.parse_args()
    program = os.path.join(args.build, "bench", "pool_per_job")
    if not os.path.exists(program):
        sys.exit(f"{program} is missing: build the pool_per_job target")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        subprocess.run(["valgrind", "--tool=callgrind",
                        f"--callgrind-out-file={out}",
                        f"--log-file={os.path.join(tmp, 'log')}", program,
                        "pool", str(args.jobs), "2", "1", "1"],
                       check=True, stdout=subprocess.DEVNULL)
        calls, where = parse(out)
    own = ("/libpool/", "/actors/")
    by_file = collections.defaultdict(list)
    for fn, n in calls.items():
        fl = where.get(fn) or ""
        if fn is None or "pool::" not in fn or not any(x in fl for x in own):
            continue
        if n < args.jobs:
            continue
        short = fn.replace("(anonymous namespace)::", "")
        short = re.sub(r"<.*>", "<...>", re.sub(r"\(.*", "", short))
        by_file[os.path.relpath(fl, root) if fl.startswith(root) else fl] \
            .append((short, n / args.jobs))
    total = sum(len(v) for v in by_file.values())
    print(f"functions of the pool run per idle submit ({args.jobs} jobs one "
          f"at a time): {total} in {len(by_file)} files")
    for fl in sorted(by_file):
        print(f"  {fl}")
        for fn, per in sorted(by_file[fl]):
            print(f"    {per:5.2f}x  {fn}")


if __name__ == "__main__":
    main()
