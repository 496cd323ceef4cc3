"""The method and the per-job tables of docs/benchmarks.md, for
bench/report.py: trivial jobs, bulk submits, the durable queue, idle
latency and uneven durations.
"""

import os

from report_plots import (BULK_TARGETS, DURABLE_TARGETS, IDLE_TARGETS,
                          TRIVIAL_TARGETS)
from report_util import num, ratio, read_csv, table, with_spread


def method_and_throughput(ctx):
    """Method; trivial jobs, bulk and the durable queue, then their plot."""
    res, w, figure = ctx.res, ctx.w, ctx.figure
    rate, med, over = ctx.rate, ctx.med, ctx.over
    bulk_rate, bulk_med = ctx.bulk_rate, ctx.bulk_med
    bulk_batch = ctx.bulk_batch
    durable_rate, durable_med = ctx.durable_rate, ctx.durable_med
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


def idle_latency(ctx):
    """One job at a time: p50 and p99 against the bare CAF request."""
    w, figure, lat50, lat99 = ctx.w, ctx.figure, ctx.lat50, ctx.lat99
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


def uneven_durations(ctx):
    """The connection-limit case: pull against round-robin and the ideal
    central queue, the hand-off between jobs, and the link to the CDF plot
    (report.py draws it after the raw results)."""
    res, w, runs, u, png_rel = ctx.res, ctx.w, ctx.runs, ctx.u, ctx.png_rel
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
