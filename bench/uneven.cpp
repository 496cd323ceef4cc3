// Uneven job durations on a connection-limited resource: 2 dedicated
// workers whose jobs sleep (like a database call), Poisson arrivals. Pull
// (the pool) against round-robin push (caf::actor_pool over 2 detached
// actors running the same job), and an ideal central FCFS queue replayed
// over the same arrival times and the durations the jobs actually took.

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_pool.hpp>
#include <caf/all.hpp>
#include <pool/all.hpp>

#include "workloads.hpp"

namespace bench {

namespace {

constexpr size_t servers = 2;

/// `work-stealing.aggressive-poll-attempts` of the "spin" scheduler.
constexpr size_t spin_polls = 100000;

enum class distribution { bimodal, exponential };

const char* name_of(distribution x) {
  return x == distribution::bimodal ? "bimodal" : "exponential";
}

/// Requested duration of one job: bimodal 95% x 250 us, 5% x 5,250 us
/// (mean 500 us), or exponential with mean 500 us.
int64_t draw_duration(distribution d, std::mt19937_64& rng) {
  if (d == distribution::bimodal) {
    std::uniform_real_distribution<double> u{0.0, 1.0};
    return u(rng) < 0.05 ? 5'250'000 : 250'000;
  }
  std::exponential_distribution<double> e{1.0 / 500'000.0};
  return static_cast<int64_t>(e(rng));
}

/// The job: sleeps for the requested time and returns how long it took.
int64_t sleep_job(int64_t ns) {
  auto t0 = clock_type::now();
  std::this_thread::sleep_for(std::chrono::nanoseconds{ns});
  return ns_between(t0, clock_type::now());
}

/// Where and when each job of the current run ran, by its sequence number:
/// the jobs write it, `drive` installs it for one run.
struct job_log {
  std::vector<time_point> start;
  std::vector<time_point> end;
  std::vector<uint32_t> thread;
};

std::atomic<job_log*> current_log{nullptr};

/// A small number naming the calling thread (a worker's).
uint32_t thread_number() {
  static std::atomic<uint32_t> next{0};
  thread_local uint32_t number = next++;
  return number;
}

/// `sleep_job` that also logs where and when job `seq` ran.
int64_t logged_sleep_job(int64_t ns, uint32_t seq) {
  auto t0 = clock_type::now();
  auto took = sleep_job(ns);
  if (auto log = current_log.load(); log != nullptr && seq < log->start.size()) {
    log->start[seq] = t0;
    log->end[seq] = t0 + std::chrono::nanoseconds{took};
    log->thread[seq] = thread_number();
  }
  return took;
}

caf::behavior sleeper() {
  return {[](int64_t ns, uint32_t seq) { return logged_sleep_job(ns, seq); }};
}

/// Planned arrivals (offsets from the start) and requested durations.
struct trace {
  std::vector<int64_t> offset_ns;
  std::vector<int64_t> duration_ns;
};

trace make_trace(distribution d, size_t n, double rate_per_ns, uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::exponential_distribution<double> gap{rate_per_ns};
  trace result;
  double t = 0;
  for (size_t i = 0; i < n; ++i) {
    t += gap(rng);
    result.offset_ns.push_back(static_cast<int64_t>(t));
    result.duration_ns.push_back(draw_duration(d, rng));
  }
  return result;
}

/// What one run observed, per job.
struct run_record {
  std::vector<time_point> arrival;
  std::vector<time_point> reply;
  std::vector<int64_t> service;
  job_log jobs;
  size_t errors = 0;
};

/// Sends the trace's jobs at their arrival times from this thread to a
/// collector actor, which requests each from `target` (with `submit` when
/// `pull`) and stamps its reply. Blocks until every job has answered.
run_record drive(caf::actor_system& sys, const caf::actor& target, bool pull,
                 const trace& tr) {
  struct state {
    run_record rec;
    std::vector<int64_t> duration;
    size_t done = 0;
    std::promise<void> finished;
  };
  auto n = tr.offset_ns.size();
  auto st = std::make_shared<state>();
  st->rec.arrival.resize(n);
  st->rec.reply.resize(n);
  st->rec.service.resize(n);
  st->duration = tr.duration_ns;
  st->rec.jobs.start.resize(n);
  st->rec.jobs.end.resize(n);
  st->rec.jobs.thread.resize(n);
  current_log = &st->rec.jobs;
  auto finished = st->finished.get_future();
  auto collector = sys.spawn([st, target, pull, n](caf::event_based_actor* self)
                                 -> caf::behavior {
    return {
        [=](arrive_atom, uint32_t i) {
          auto step = [self, st, n] {
            if (++st->done == n) {
              st->finished.set_value();
              self->quit();
            }
          };
          auto on_reply = [st, i, step](int64_t observed) {
            st->rec.reply[i] = clock_type::now();
            st->rec.service[i] = observed;
            step();
          };
          auto on_error = [st, i, step](caf::error&) {
            st->rec.reply[i] = clock_type::now();
            st->rec.service[i] = 0;
            ++st->rec.errors;
            step();
          };
          auto d = st->duration[i];
          if (pull)
            self->request(target, caf::infinite, pool::submit_atom_v, d, i)
                .then(on_reply, on_error);
          else
            self->request(target, caf::infinite, d, i).then(on_reply, on_error);
        },
    };
  });
  auto start = clock_type::now() + std::chrono::milliseconds{1};
  for (size_t i = 0; i < n; ++i) {
    std::this_thread::sleep_until(start +
                                  std::chrono::nanoseconds{tr.offset_ns[i]});
    st->rec.arrival[i] = clock_type::now();
    caf::anon_send(collector, arrive_atom::value, static_cast<uint32_t>(i));
  }
  finished.get();
  current_log = nullptr;
  return std::move(st->rec);
}

/// Latencies (ns) of one run: arrival to reply, per job.
std::vector<double> latencies_of(const run_record& rec) {
  std::vector<double> result;
  result.reserve(rec.arrival.size());
  for (size_t i = 0; i < rec.arrival.size(); ++i)
    result.push_back(
        static_cast<double>(ns_between(rec.arrival[i], rec.reply[i])));
  return result;
}

/// Latencies (ns) of an ideal FCFS central queue with `servers` servers over
/// the observed arrivals and service times.
/// With `handoff` > 0, each job also holds its server that much longer and
/// is answered that much later: a central queue that pays a dispatch cost
/// per job.
std::vector<double> ideal_replay(const run_record& rec, int64_t handoff = 0) {
  std::vector<int64_t> free_at(servers, std::numeric_limits<int64_t>::min());
  std::vector<double> result;
  result.reserve(rec.arrival.size());
  for (size_t i = 0; i < rec.arrival.size(); ++i) {
    auto a = ns_between(rec.arrival.front(), rec.arrival[i]);
    auto k = std::min_element(free_at.begin(), free_at.end());
    auto start = std::max(a, *k);
    auto done = start + rec.service[i];
    *k = done + handoff;
    result.push_back(static_cast<double>(done + handoff - a));
  }
  return result;
}

/// Hand-off gaps (ns) of one run: on each worker, from the end of one job
/// to the start of the next, where the next one had already arrived when
/// the first started (so it surely waited in the queue, not on its way to
/// it, and only dispatch stood between the two). Failed jobs are left out.
std::vector<double> handoff_gaps(const run_record& rec) {
  std::vector<size_t> order;
  for (size_t i = 0; i < rec.arrival.size(); ++i)
    if (rec.service[i] > 0)
      order.push_back(i);
  auto& log = rec.jobs;
  std::sort(order.begin(), order.end(), [&log](size_t a, size_t b) {
    return log.thread[a] != log.thread[b] ? log.thread[a] < log.thread[b]
                                          : log.start[a] < log.start[b];
  });
  std::vector<double> result;
  for (size_t k = 1; k < order.size(); ++k) {
    auto prev = order[k - 1];
    auto next = order[k];
    if (log.thread[prev] == log.thread[next] &&
        rec.arrival[next] <= log.start[prev])
      result.push_back(
          static_cast<double>(ns_between(log.end[prev], log.start[next])));
  }
  return result;
}

/// Requested mean duration of both distributions.
constexpr double requested_mean_ns = 500'000.0;

/// Mean overshoot (observed - requested duration) of `n` jobs of
/// distribution `d`, slept on this thread while the machine is idle.
double idle_overshoot(distribution d, size_t n) {
  std::mt19937_64 rng{42};
  std::vector<double> xs;
  for (size_t i = 0; i < n; ++i) {
    auto requested = draw_duration(d, rng);
    xs.push_back(static_cast<double>(sleep_job(requested) - requested));
  }
  return mean_of(xs);
}

/// Mean overshoot of the jobs of one run.
double overshoot_of(const trace& tr, const run_record& rec) {
  std::vector<double> xs;
  for (size_t i = 0; i < rec.service.size(); ++i)
    xs.push_back(static_cast<double>(rec.service[i] - tr.duration_ns[i]));
  return mean_of(xs);
}

struct run_summary {
  double mean = 0;
  double p99 = 0;
  double ideal_mean = 0;
  double ideal_p99 = 0;
  double gap_mean = 0;
  double handoff_p99 = 0;
};

/// The two variants under test, on one actor system.
struct variants {
  caf::actor pull;
  caf::actor push;

  explicit variants(caf::actor_system& sys) {
    pull = spawn_checked(pool::spawn_pool(
        sys, logged_sleep_job,
        pool::pool_options{}.workers(servers).kind(
            pool::worker_kind::dedicated)));
    push = caf::actor_pool::make(
        sys.dummy_execution_unit(), servers,
        [&sys] { return sys.spawn<caf::detached>(sleeper); },
        caf::actor_pool::round_robin());
  }

  ~variants() {
    caf::anon_send_exit(pull, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(push, caf::exit_reason::user_shutdown);
  }

  /// Warms both variants up with `jobs` jobs each at `load`, assuming the
  /// mean service time `mean_ns`, and returns the mean service time
  /// observed under that load: the requested mean plus the timers'
  /// overshoot, which grows with load. (The requested mean is exact; the
  /// sample mean of a bimodal trace is not.)
  double calibrate(caf::actor_system& sys, distribution d, double load,
                   double mean_ns, size_t jobs) {
    auto tr = make_trace(d, jobs, load * servers / mean_ns, 7);
    auto a = overshoot_of(tr, drive(sys, pull, true, tr));
    auto b = overshoot_of(tr, drive(sys, push, false, tr));
    return requested_mean_ns + (a + b) / 2;
  }
};

/// `runs` alternating pull / round-robin runs of `jobs` jobs each at
/// `load`, every pair over the same trace; writes per-run summaries and
/// every latency sample, prints the medians.
void run_point(const settings& cfg, caf::actor_system& sys, variants& vs,
               csv_file& runs_out, const char* scheduler, distribution d,
               double load, double observed, size_t jobs, size_t runs) {
  auto rate = load * servers / observed;
  char raw_name[80];
  std::snprintf(raw_name, sizeof(raw_name), "uneven_raw_%s_%.1f%s.csv",
                name_of(d), load,
                std::string{scheduler} == "default" ? "" : "_spin");
  csv_file raw{cfg, raw_name,
               "run,variant,seq,arrival_us,service_us,latency_us,ideal_us"};
  std::vector<run_summary> sums[2];
  for (size_t run = 0; run < runs; ++run) {
    auto seed = 1000 * run + (d == distribution::bimodal ? 1 : 2) +
                static_cast<uint64_t>(load * 10) * 10;
    auto tr = make_trace(d, jobs, rate, seed);
    for (int v = 0; v < 2; ++v) {
      auto variant = v == 0 ? "pull" : "round_robin";
      auto rec = v == 0 ? drive(sys, vs.pull, true, tr)
                        : drive(sys, vs.push, false, tr);
      auto lat = latencies_of(rec);
      double service_sum = 0;
      for (auto x : rec.service)
        service_sum += static_cast<double>(x);
      auto ideal = ideal_replay(rec);
      for (size_t i = 0; i < jobs; ++i)
        raw.rowf("%zu,%s,%zu,%.1f,%.1f,%.1f,%.1f", run, variant, i,
                 ns_between(rec.arrival.front(), rec.arrival[i]) / 1e3,
                 rec.service[i] / 1e3, lat[i] / 1e3, ideal[i] / 1e3);
      auto span = static_cast<double>(
          ns_between(rec.arrival.front(), rec.arrival.back()));
      auto actual_load = service_sum / (servers * span);
      run_summary s;
      s.mean = mean_of(lat);
      s.ideal_mean = mean_of(ideal);
      auto p50 = quantile(lat, 0.5);
      s.p99 = quantile(lat, 0.99);
      auto max = lat.back(); // quantile() sorted it
      auto ideal_p50 = quantile(ideal, 0.5);
      s.ideal_p99 = quantile(ideal, 0.99);
      // The hand-off between two jobs on one worker, and the central queue
      // replayed again with that cost per job.
      auto gaps = handoff_gaps(rec);
      s.gap_mean = mean_of(gaps);
      auto gap_p50 = gaps.empty() ? 0.0 : quantile(gaps, 0.5);
      auto gap_p99 = gaps.empty() ? 0.0 : quantile(gaps, 0.99);
      auto handoff = ideal_replay(rec, static_cast<int64_t>(s.gap_mean));
      s.handoff_p99 = quantile(handoff, 0.99);
      sums[v].push_back(s);
      runs_out.rowf("%s,%s,%.1f,%zu,%s,%zu,%zu,%.2f,%.4f,%.1f,%.1f,%.1f,%.1f,"
                    "%.1f,%.1f,%.1f,%.1f,%zu,%.1f,%.1f,%.1f,%.1f",
                    scheduler, name_of(d), load, run, variant, jobs, rec.errors,
                    load, actual_load, service_sum / jobs / 1e3, s.mean / 1e3,
                    p50 / 1e3, s.p99 / 1e3, max / 1e3, s.ideal_mean / 1e3,
                    ideal_p50 / 1e3, s.ideal_p99 / 1e3, gaps.size(),
                    s.gap_mean / 1e3, gap_p50 / 1e3, gap_p99 / 1e3,
                    s.handoff_p99 / 1e3);
      if (rec.errors > 0)
        std::printf("  !! %s: %zu errors\n", variant, rec.errors);
    }
  }
  auto med = [](const std::vector<run_summary>& xs, double run_summary::*f) {
    std::vector<double> ys;
    for (auto& x : xs)
      ys.push_back(x.*f);
    return spread_of(ys).median / 1e3;
  };
  auto pull_p99 = med(sums[0], &run_summary::p99);
  auto rr_p99 = med(sums[1], &run_summary::p99);
  auto ideal_p99 = med(sums[0], &run_summary::ideal_p99);
  std::printf("  %s @%.1f (%s scheduler): mean pull %.0f / rr %.0f / ideal "
              "%.0f us; p99 pull %.0f / rr %.0f / ideal %.0f us; rr/pull "
              "%.2fx, pull/ideal %.2fx\n",
              name_of(d), load, scheduler, med(sums[0], &run_summary::mean),
              med(sums[1], &run_summary::mean),
              med(sums[0], &run_summary::ideal_mean), pull_p99, rr_p99,
              ideal_p99, rr_p99 / pull_p99, pull_p99 / ideal_p99);
  std::printf("    hand-off between jobs: pull %.1f / rr %.1f us mean; ideal "
              "with pull's hand-off: p99 %.0f us\n",
              med(sums[0], &run_summary::gap_mean),
              med(sums[1], &run_summary::gap_mean),
              med(sums[0], &run_summary::handoff_p99));
  std::fflush(stdout);
}

} // namespace

uneven_result uneven_pull(caf::actor_system& sys, pool::pool_options opts,
                          size_t jobs, size_t runs) {
  auto pool = spawn_checked(pool::spawn_pool(sys, logged_sleep_job,
                                            opts.workers(servers)));
  constexpr double load = 0.7;
  auto d = distribution::bimodal;
  // Calibrate (and warm up) as run_uneven does, with this pool alone.
  auto guess = requested_mean_ns + idle_overshoot(d, 50);
  auto warm = make_trace(d, std::max<size_t>(jobs / 10, 200),
                         load * servers / guess, 7);
  auto observed =
      requested_mean_ns + overshoot_of(warm, drive(sys, pool, true, warm));
  std::vector<double> means, p99s, ideal_means, ideal_p99s;
  for (size_t run = 0; run < runs; ++run) {
    auto tr = make_trace(d, jobs, load * servers / observed,
                         1000 * run + 1 + 70);
    auto rec = drive(sys, pool, true, tr);
    auto lat = latencies_of(rec);
    auto ideal = ideal_replay(rec);
    means.push_back(mean_of(lat));
    p99s.push_back(quantile(lat, 0.99));
    ideal_means.push_back(mean_of(ideal));
    ideal_p99s.push_back(quantile(ideal, 0.99));
  }
  caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
  uneven_result result;
  result.mean = spread_of(means);
  result.p99 = spread_of(p99s);
  result.ideal_mean = spread_of(ideal_means).median;
  result.ideal_p99 = spread_of(ideal_p99s).median;
  return result;
}

void run_uneven(const settings& cfg) {
  auto jobs = cfg.count(20000, 1000);
  auto runs = cfg.count(5, 1);
  std::printf("== uneven durations: 2 dedicated workers, %zu jobs x %zu "
              "alternating runs per variant\n",
              jobs, runs);
  csv_file runs_out{cfg, "uneven_runs.csv",
                    "scheduler,distribution,load,run,variant,jobs,errors,"
                    "target_load,actual_load,mean_service_us,mean_us,p50_us,"
                    "p99_us,max_us,ideal_mean_us,ideal_p50_us,ideal_p99_us,"
                    "gaps,gap_mean_us,gap_p50_us,gap_p99_us,"
                    "ideal_handoff_p99_us"};
  csv_file calib_out{cfg, "uneven_calibration.csv",
                     "scheduler,distribution,load,requested_mean_us,"
                     "idle_overshoot_us,mean_service_us"};
  auto calibration_jobs = cfg.count(2000, 200);
  // POOL_BENCH_UNEVEN=target: only the target case (bimodal @ 0.7), for
  // trying a change; the report wants every point.
  auto only = std::getenv("POOL_BENCH_UNEVEN");
  bool target_only = only != nullptr && std::string{only} == "target";
  // Timers overshoot, more so under load: the arrival rate is set from the
  // service time that jobs take at the target load, measured by a
  // calibration run (which also warms up both variants).
  auto point = [&](caf::actor_system& sys, variants& vs, const char* scheduler,
                   distribution d, double load, size_t point_runs) {
    auto idle = idle_overshoot(d, cfg.count(500, 50));
    auto mean =
        vs.calibrate(sys, d, load, requested_mean_ns + idle, calibration_jobs);
    calib_out.rowf("%s,%s,%.1f,%.1f,%.1f,%.1f", scheduler, name_of(d), load,
                   requested_mean_ns / 1e3, idle / 1e3, mean / 1e3);
    std::printf("  %s @%.1f: mean service %.1f us under load (requested "
                "500, idle overshoot %.1f us)\n",
                name_of(d), load, mean / 1e3, idle / 1e3);
    run_point(cfg, sys, vs, runs_out, scheduler, d, load, mean, jobs,
              point_runs);
  };
  {
    system_config sys_cfg;
    caf::actor_system sys{sys_cfg};
    variants vs{sys};
    for (auto d : {distribution::bimodal, distribution::exponential})
      for (auto load : {0.5, 0.7})
        if (!target_only || (d == distribution::bimodal && load == 0.7))
          point(sys, vs, "default", d, load, runs);
  }
  if (!target_only) {
    // The target case again on a scheduler whose idle threads keep polling
    // instead of sleeping between polls: messages from dedicated workers
    // (which run outside the scheduler) are then picked up at once.
    system_config sys_cfg{std::nullopt, spin_polls};
    caf::actor_system sys{sys_cfg};
    variants vs{sys};
    point(sys, vs, "spin", distribution::bimodal, 0.7, cfg.count(2, 1));
  }
}

} // namespace bench
