#pragma once

// Shared pieces of the benchmark: settings, timing and summary statistics,
// resident memory, CSV output, the actor systems each workload starts, the
// request drivers, and the mutex + condition-variable thread pool baseline.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/event_based_actor.hpp>

namespace bench {

using clock_type = std::chrono::steady_clock;
using time_point = clock_type::time_point;

/// The benchmark's own atoms (never sent to a pool).
using next_atom = caf::atom_constant<caf::atom("b_next")>;
using arrive_atom = caf::atom_constant<caf::atom("b_arrive")>;

/// Command-line settings shared by every workload.
struct settings {
  /// Smoke mode: small counts, one repetition.
  bool quick = false;
  /// Where raw results go; empty: print only.
  std::string out_dir;
  /// Workloads to run; empty: all.
  std::vector<std::string> only;

  bool wants(const std::string& workload) const;

  /// `full` normally, `small` in quick mode.
  size_t count(size_t full, size_t small) const {
    return quick ? small : full;
  }
};

/// Seconds between two instants.
inline double seconds_between(time_point t0, time_point t1) {
  return std::chrono::duration<double>(t1 - t0).count();
}

/// Nanoseconds between two instants.
inline int64_t ns_between(time_point t0, time_point t1) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
}

/// Median, minimum and maximum of repeated measurements.
struct spread {
  double median = 0;
  double min = 0;
  double max = 0;
};

spread spread_of(std::vector<double> xs);

/// The trivial job: x -> 2x.
int32_t twice(int32_t x);

/// The pool `x` holds; exits with the reason when spawning it failed.
caf::actor spawn_checked(caf::expected<caf::actor> x);

/// Nearest-rank quantile `q` in [0, 1] of `xs`; sorts `xs`.
double quantile(std::vector<double>& xs, double q);

/// Arithmetic mean; 0 for no samples.
double mean_of(const std::vector<double>& xs);

/// Resident set size of this process in bytes (from /proc/self/statm).
int64_t resident_bytes();

/// Hands freed heap pages back to the system, so that the next RSS delta
/// measures new allocations rather than reuse.
void trim_heap();

/// CPU time used so far, in clock ticks: by the whole machine (all cores,
/// from /proc/stat) and by this process (from /proc/self/stat).
struct cpu_ticks {
  int64_t machine = 0;
  int64_t self = 0;
};

cpu_ticks read_cpu_ticks();

/// Clock ticks per second (for `cpu_ticks`).
int64_t ticks_per_second();

/// "Intel(R) ..." from /proc/cpuinfo, or "unknown".
std::string cpu_model();

/// Appends rows to `<out_dir>/<name>`; does nothing without an out dir.
/// Not synchronized: one writer per file, from one thread.
class csv_file {
public:
  csv_file(const settings& cfg, const std::string& name,
           const std::string& header);
  ~csv_file();
  csv_file(const csv_file&) = delete;
  csv_file& operator=(const csv_file&) = delete;

  /// Writes one row; `row` has no trailing newline.
  void row(const std::string& row);

  /// printf-style row.
  template <class... Ts>
  void rowf(const char* fmt, Ts... xs) {
    if (file_ == nullptr)
      return;
    std::fprintf(file_, fmt, xs...);
    std::fputc('\n', file_);
  }

private:
  std::FILE* file_ = nullptr;
};

/// A CAF configuration with the pool's types registered; `threads` sets
/// `scheduler.max-threads`, `aggressive_polls` sets
/// `work-stealing.aggressive-poll-attempts` (how often an idle scheduler
/// thread polls before it starts sleeping between polls); otherwise CAF's
/// defaults apply.
struct system_config : caf::actor_system_config {
  explicit system_config(std::optional<size_t> threads = std::nullopt,
                         std::optional<size_t> aggressive_polls = std::nullopt);
};

/// Outcome of a windowed run.
struct window_result {
  double seconds = 0;
  size_t errors = 0;
};

namespace detail {

struct window_run {
  size_t n = 0;
  size_t window = 0;
  size_t sent = 0;
  size_t done = 0;
  size_t errors = 0;
  time_point start;
  std::promise<window_result> result;
};

template <class Reply, class Issue>
void window_pump(caf::event_based_actor* self, std::shared_ptr<window_run> run,
                 Issue issue) {
  while (run->sent < run->n && run->sent - run->done < run->window) {
    auto i = run->sent++;
    auto step = [self, run, issue] {
      if (++run->done == run->n) {
        run->result.set_value(
            {seconds_between(run->start, clock_type::now()), run->errors});
        self->quit();
      } else {
        window_pump<Reply>(self, run, issue);
      }
    };
    issue(self, i).then([step](Reply&) { step(); },
                        [run, step](caf::error&) {
                          ++run->errors;
                          step();
                        });
  }
}

} // namespace detail

/// Issues `n` requests from one event-based actor, keeping `window` of them
/// outstanding, and returns the elapsed time. `issue(self, i)` sends the
/// i-th request and returns its response handle, whose reply is `Reply`.
/// Blocks the calling (non-actor) thread until all replies arrived.
template <class Reply, class Issue>
window_result run_window(caf::actor_system& sys, size_t n, size_t window,
                         Issue issue) {
  auto run = std::make_shared<detail::window_run>();
  run->n = n;
  run->window = window;
  auto result = run->result.get_future();
  sys.spawn([run, issue](caf::event_based_actor* self) {
    run->start = clock_type::now();
    detail::window_pump<Reply>(self, run, issue);
  });
  return result.get();
}

/// How a driver thread sends the i-th request (`send`, no response
/// handler): to a pool `(submit, int32)`, to a plain actor `(int32)`.
using send_fn = void (*)(caf::blocking_actor& self, const caf::actor& dest,
                         size_t i);

/// Issues `n` requests to `dest` from `callers` plain threads, each a
/// `caf::scoped_actor` that keeps its share of `window` outstanding with
/// `send` and counts the replies (int32 or error) with one `receive_while`.
/// No response handlers: CAF 0.17 keeps those in a flat list, so a driver
/// that uses them (`run_window`) becomes the bottleneck on many cores.
/// Returns the time from the first send to the last reply. Blocks the
/// calling (non-actor) thread.
window_result drive_threads(caf::actor_system& sys, const caf::actor& dest,
                            size_t n, size_t window, size_t callers,
                            send_fn issue);

/// `(submit, int32 i)`.
void send_submit(caf::blocking_actor& self, const caf::actor& dest, size_t i);

/// `(int32 i)`.
void send_plain(caf::blocking_actor& self, const caf::actor& dest, size_t i);

/// A named way of running `n` jobs (int32 in, int32 out).
struct target {
  std::string name;
  std::function<window_result(size_t n)> run;
};

/// Submits to `pool` from `callers` driver threads, keeping `window`
/// requests outstanding in all (`drive_threads`).
target pool_target(caf::actor_system& sys, std::string name, caf::actor pool,
                   size_t window, size_t callers = 1);

/// Asks the plain actor `dest` (an actor pool, a bare actor) the same way.
target actor_target(caf::actor_system& sys, std::string name,
                    caf::actor dest, size_t window, size_t callers = 1);

/// The items of a comma-separated list, empty ones left out.
std::vector<std::string> split_list(const std::string& list);

/// The items of the environment variable `name` (`split_list`); none when
/// it is unset or empty.
std::optional<std::vector<std::string>> env_list(const char* name);

/// POOL_BENCH_TARGETS=a,b keeps only the named targets (for profiling one).
template <class T, class Name>
void keep_chosen(std::vector<T>& targets, Name name_of) {
  auto only = env_list("POOL_BENCH_TARGETS");
  if (!only)
    return;
  targets.erase(std::remove_if(targets.begin(), targets.end(),
                               [&](const T& t) {
                                 return std::find(only->begin(), only->end(),
                                                  name_of(t)) == only->end();
                               }),
                targets.end());
}

/// Runs each target once with `warmup` jobs, then `reps` rounds of `n` jobs
/// each, the targets alternating within a round; reports each run to
/// `record(k, rep, result)` and prints the runs that had errors.
void alternate(std::vector<target>& targets, size_t warmup, size_t n,
               size_t reps,
               const std::function<void(size_t k, size_t rep,
                                        const window_result&)>& record);

/// `alternate` with a warm-up of n / 10, keeping each target's rate (jobs
/// per second) per round, in round order; writes a row
/// `target,rep,jobs,seconds,ops_per_s` per run to `out`.
std::vector<std::vector<double>> alternate_rates(std::vector<target>& targets,
                                                 size_t n, size_t reps,
                                                 csv_file& out);

/// The ratios `xs[i] / base[i]` of rates measured in the same rounds (so
/// that drifts of the machine cancel), as a spread.
spread ratio_spread(const std::vector<double>& xs,
                    const std::vector<double>& base);

/// Issues `n` requests one at a time, waiting `gap` after each reply so the
/// target is idle again, and returns each request's round-trip time in ns.
/// Blocks the calling (non-actor) thread until done.
template <class Reply, class Issue>
std::vector<double> run_sequential(caf::actor_system& sys, size_t n,
                                   std::chrono::microseconds gap, Issue issue) {
  struct state {
    std::vector<double> samples;
    std::promise<void> done;
    size_t i = 0;
  };
  auto st = std::make_shared<state>();
  st->samples.reserve(n);
  auto done = st->done.get_future();
  sys.spawn([st, n, gap, issue](caf::event_based_actor* self) {
    auto next = [self, st, n, gap, issue](next_atom) {
      auto t0 = clock_type::now();
      auto record = [self, st, n, gap, t0] {
        st->samples.push_back(
            static_cast<double>(ns_between(t0, clock_type::now())));
        if (++st->i == n) {
          st->done.set_value();
          self->quit();
        } else {
          self->delayed_send(self, gap, next_atom::value);
        }
      };
      issue(self, st->i)
          .then([record](Reply&) { record(); },
                [record](caf::error&) { record(); });
    };
    self->send(self, next_atom::value);
    return caf::behavior{next};
  });
  done.get();
  return std::move(st->samples);
}

/// Baseline (3): a plain thread pool, one mutex and one condition variable
/// around a FIFO of jobs. Jobs run in submission order on `n` threads.
class cv_thread_pool {
public:
  explicit cv_thread_pool(size_t n);
  ~cv_thread_pool();
  cv_thread_pool(const cv_thread_pool&) = delete;
  cv_thread_pool& operator=(const cv_thread_pool&) = delete;

  /// Queues `job`; never blocks for long. Any thread.
  void submit(std::function<void()> job);

private:
  void run();

  std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

/// Submits `n` jobs `x -> job(x)` (default `twice`) to `pool` from the
/// calling thread, keeping `window` outstanding; each job replies through a
/// mutex + condition variable channel. Returns the elapsed seconds.
double run_cv_window(cv_thread_pool& pool, size_t n, size_t window,
                     std::function<int32_t(int32_t)> job = twice);

/// Submits `n` jobs one at a time from the calling thread, sleeping `gap`
/// after each reply; returns each job's round-trip time in ns.
std::vector<double> run_cv_sequential(cv_thread_pool& pool, size_t n,
                                      std::chrono::microseconds gap);

} // namespace bench
