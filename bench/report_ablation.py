"""The "What each change was worth" section of docs/benchmarks.md, for
bench/report.py, from ablation.csv.
"""

from report_util import num, ratio, read_csv, separate_run, table


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


def what_each_change_was_worth(ctx):
    """Each speed-up switched off in turn, the noise between two rows of
    defaults, and what was removed after measuring."""
    res, w, figure = ctx.res, ctx.w, ctx.figure
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
