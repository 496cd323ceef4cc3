"""The top of docs/benchmarks.md, for bench/report.py: the figures the
targets are judged by (computed first; the later sections read them from
the context), the header with the machine and the targets table, and
"What the numbers say".
"""

import statistics

from report_util import group, num, ratio, read_csv, spread, table, verdict


def throughput_targets(ctx):
    """Trivial jobs, the durable queue and bulk submits: their targets, and
    on ctx the rates (rate, med, over, durable_rate, durable_med,
    bulk_rate, bulk_med, bulk_batch, bulk_vs_perjob)."""
    res, targets = ctx.res, ctx.targets
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
    ctx.rate, ctx.med, ctx.over = rate, med, over
    ctx.durable_rate, ctx.durable_med = durable_rate, durable_med
    ctx.bulk_rate, ctx.bulk_med = bulk_rate, bulk_med
    ctx.bulk_batch, ctx.bulk_vs_perjob = bulk_batch, bulk_vs_perjob


def latency_targets(ctx):
    """Uneven durations and idle latency: their targets, and on ctx the
    figures (runs, uneven, u, tgt, pull_p99, ideal_p99, rr_over_pull,
    spin_ratio, lat50, lat99)."""
    res, targets = ctx.res, ctx.targets
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
    ctx.runs, ctx.uneven, ctx.u, ctx.tgt = runs, uneven, u, tgt
    ctx.pull_p99, ctx.ideal_p99 = pull_p99, ideal_p99
    ctx.rr_over_pull, ctx.spin_ratio = rr_over_pull, spin_ratio
    ctx.lat50, ctx.lat99 = lat50, lat99


def capacity_targets(ctx):
    """Queued entries and many workers: their targets, and on ctx the
    cells (qcell, qn, wcell)."""
    res, targets = ctx.res, ctx.targets
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
    ctx.qcell, ctx.qn, ctx.wcell = qcell, qn, wcell


def compute_targets(ctx):
    """The rows of the targets table, in its order, into ctx.targets."""
    throughput_targets(ctx)
    latency_targets(ctx)
    capacity_targets(ctx)


def header(ctx):
    """Title, machine, machine load and the targets table."""
    res, meta, w, source = ctx.res, ctx.meta, ctx.w, ctx.source
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
    w(table(["target", "measured", "verdict"], ctx.targets))
    w("")


def what_the_numbers_say(ctx):
    """The findings, in numbers from this run."""
    res, meta, w = ctx.res, ctx.meta, ctx.w
    med, qcell, lat50, u, tgt = ctx.med, ctx.qcell, ctx.lat50, ctx.u, ctx.tgt
    bulk_batch, bulk_vs_perjob = ctx.bulk_batch, ctx.bulk_vs_perjob
    rr_over_pull, spin_ratio = ctx.rr_over_pull, ctx.spin_ratio
    uneven, pull_p99, ideal_p99 = ctx.uneven, ctx.pull_p99, ctx.ideal_p99
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
