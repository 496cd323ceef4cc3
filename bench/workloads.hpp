#pragma once

// The benchmark's workloads. Each one starts its own actor system(s),
// prints a summary to stdout and, with an out dir, writes its raw results
// as CSV files there (described in docs/benchmarks.md).

#include <pool/all.hpp>

#include "bench_util.hpp"

namespace bench {

/// Trivial jobs, one request per job, a window of 512 outstanding: the
/// pool vs caf::actor_pool, one bare actor and a mutex + cv thread pool.
void run_trivial(const settings& cfg);

/// Bulk: a batch of inputs per submit, the pool vs caf::actor_pool.
void run_bulk(const settings& cfg);

/// Durable submit-and-complete throughput: SQLite FULL and NORMAL vs the
/// in-memory store, trivial jobs, a window of 512.
void run_durable(const settings& cfg);

/// Computing jobs of 20 us, 200 us and 2 ms on workers = cores and
/// cores - 1: the shipped pool vs caf::actor_pool, the mutex + cv pool and
/// the ideal; and the shepherd's ceiling with jobs that take no time.
void run_saturation(const settings& cfg);

/// Trivial and 20 us jobs on 1, 2, 4, ... workers up to the cores, every
/// system, driven by caller threads (`drive_threads`) whose own ceiling is
/// measured first; and the shepherd's ceiling from several callers.
void run_scaling(const settings& cfg);

/// The operators' HTTP endpoint's cost on a busy pool: served and scraped
/// every second vs plain, trivial jobs, alternating.
void run_http(const settings& cfg);
void run_flow(const settings& cfg);
void run_keys(const settings& cfg);

/// One job at a time on an idle pool: latency vs a bare CAF request.
void run_latency(const settings& cfg);

/// Trivial jobs at workers (1, 2, 4) x scheduler threads (1, 2, default).
void run_sweep(const settings& cfg);

/// Sleeping jobs with uneven durations at Poisson arrivals on 2 dedicated
/// workers: pull (the pool) vs round-robin push vs an ideal M/G/2 replay.
void run_uneven(const settings& cfg);

/// Pull alone at bimodal @ 0.7 on 2 dedicated workers of a pool spawned
/// with `opts` (as in run_uneven): latencies in ns, medians over `runs`.
struct uneven_result {
  spread mean;
  spread p99;
  double ideal_mean = 0;
  double ideal_p99 = 0;
};

uneven_result uneven_pull(caf::actor_system& sys, pool::pool_options opts,
                          size_t jobs, size_t runs);

/// What each speed-up is worth: trivial throughput, idle latency and the
/// uneven target case with all of them, without each one, and without any.
void run_ablation(const settings& cfg);

/// 1,000 and 10,000 cooperative workers: spawn time, idle memory, stats
/// reply latency.
void run_workers(const settings& cfg);

/// Resize 2 -> 200,000 -> 2 cooperative workers: time, and the longest
/// wait of a stats request meanwhile.
void run_resize(const settings& cfg);

/// 1,000,000 queued and delayed entries: memory and enqueue/dequeue cost,
/// in pool::memory_store and through a pool.
void run_queue(const settings& cfg);

} // namespace bench
