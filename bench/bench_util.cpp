#include "bench_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <malloc.h>
#include <numeric>
#include <sstream>
#include <unistd.h>

#include <caf/scoped_actor.hpp>

#include <pool/configure.hpp>
#include <pool/protocol.hpp>
#include <pool/errors.hpp>

namespace bench {

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> result;
  size_t pos = 0;
  while (pos <= list.size()) {
    auto comma = std::min(list.find(',', pos), list.size());
    if (comma > pos)
      result.push_back(list.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return result;
}

std::optional<std::vector<std::string>> env_list(const char* name) {
  auto value = std::getenv(name);
  if (value == nullptr || *value == '\0')
    return std::nullopt;
  return split_list(value);
}

bool settings::wants(const std::string& workload) const {
  return only.empty() ||
         std::find(only.begin(), only.end(), workload) != only.end();
}

int32_t twice(int32_t x) {
  return x * 2;
}

caf::actor spawn_checked(caf::expected<caf::actor> x) {
  if (!x) {
    std::fprintf(stderr, "cannot spawn pool: %s\n",
                 pool::describe(x.error()).c_str());
    std::exit(1);
  }
  return std::move(*x);
}

spread spread_of(std::vector<double> xs) {
  if (xs.empty())
    return {};
  std::sort(xs.begin(), xs.end());
  auto n = xs.size();
  auto median = n % 2 == 1 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
  return {median, xs.front(), xs.back()};
}

double quantile(std::vector<double>& xs, double q) {
  if (xs.empty())
    return 0;
  std::sort(xs.begin(), xs.end());
  auto rank =
      static_cast<size_t>(std::ceil(q * static_cast<double>(xs.size())));
  return xs[std::clamp<size_t>(rank, 1, xs.size()) - 1];
}

double mean_of(const std::vector<double>& xs) {
  if (xs.empty())
    return 0;
  return std::accumulate(xs.begin(), xs.end(), 0.0) /
         static_cast<double>(xs.size());
}

int64_t resident_bytes() {
  std::ifstream in{"/proc/self/statm"};
  int64_t size = 0;
  int64_t resident = 0;
  in >> size >> resident;
  return resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

void trim_heap() {
  malloc_trim(0);
}

cpu_ticks read_cpu_ticks() {
  cpu_ticks result;
  {
    // cpu  user nice system idle iowait irq softirq steal ...
    std::ifstream in{"/proc/stat"};
    std::string label;
    int64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0,
            softirq = 0, steal = 0;
    in >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >>
        steal;
    result.machine = user + nice + system + irq + softirq + steal;
  }
  {
    // pid (comm) state ... field 14 utime, 15 stime; comm may hold spaces.
    std::ifstream in{"/proc/self/stat"};
    std::string line;
    std::getline(in, line);
    auto close = line.rfind(')');
    if (close != std::string::npos) {
      std::istringstream rest{line.substr(close + 2)};
      std::string field;
      int64_t utime = 0;
      int64_t stime = 0;
      for (int i = 3; i <= 15 && rest >> field; ++i) {
        if (i == 14)
          utime = std::stoll(field);
        else if (i == 15)
          stime = std::stoll(field);
      }
      result.self = utime + stime;
    }
  }
  return result;
}

int64_t ticks_per_second() {
  return static_cast<int64_t>(sysconf(_SC_CLK_TCK));
}

std::string cpu_model() {
  std::ifstream in{"/proc/cpuinfo"};
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto first = line.find_first_not_of(' ', colon + 1);
        return first == std::string::npos ? std::string{} : line.substr(first);
      }
    }
  }
  return "unknown";
}

csv_file::csv_file(const settings& cfg, const std::string& name,
                   const std::string& header) {
  if (cfg.out_dir.empty())
    return;
  auto path = cfg.out_dir + "/" + name;
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return;
  }
  row(header);
}

csv_file::~csv_file() {
  if (file_ != nullptr)
    std::fclose(file_);
}

void csv_file::row(const std::string& row) {
  if (file_ == nullptr)
    return;
  std::fputs(row.c_str(), file_);
  std::fputc('\n', file_);
}

system_config::system_config(std::optional<size_t> threads,
                             std::optional<size_t> aggressive_polls) {
  pool::configure(*this);
  if (threads)
    set("scheduler.max-threads", *threads);
  if (aggressive_polls)
    set("work-stealing.aggressive-poll-attempts", *aggressive_polls);
  if (auto x = std::getenv("POOL_BENCH_MODERATE"))
    set("work-stealing.moderate-poll-attempts", std::stoul(x));
  if (auto x = std::getenv("POOL_BENCH_MAX_THROUGHPUT"))
    set("scheduler.max-throughput", std::stoul(x));
  if (auto x = std::getenv("POOL_BENCH_RELAXED_US"))
    set("work-stealing.relaxed-sleep-duration",
        caf::timespan{std::chrono::microseconds{std::stoul(x)}});
}

cv_thread_pool::cv_thread_pool(size_t n) {
  for (size_t i = 0; i < n; ++i)
    threads_.emplace_back([this] { run(); });
}

cv_thread_pool::~cv_thread_pool() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_)
    t.join();
}

void cv_thread_pool::submit(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void cv_thread_pool::run() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> guard{mtx_};
      cv_.wait(guard, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty())
        return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

double run_cv_window(cv_thread_pool& pool, size_t n, size_t window,
                     std::function<int32_t(int32_t)> job) {
  struct channel {
    std::mutex mtx;
    std::condition_variable cv;
    std::vector<int32_t> replies;
  } replies;
  size_t submitted = 0;
  size_t completed = 0;
  std::vector<int32_t> taken;
  auto t0 = clock_type::now();
  while (completed < n) {
    for (; submitted < n && submitted - completed < window; ++submitted) {
      auto x = static_cast<int32_t>(submitted);
      pool.submit([&replies, &job, x] {
        auto y = job(x);
        // Notified under the lock: once the waiter has the last reply it
        // returns and `replies` is gone, so nothing may touch it after
        // the unlock (a notify after it hung or crashed the bench, 1 run
        // in ~30).
        std::lock_guard<std::mutex> guard{replies.mtx};
        replies.replies.push_back(y);
        replies.cv.notify_one();
      });
    }
    {
      std::unique_lock<std::mutex> guard{replies.mtx};
      replies.cv.wait(guard, [&] { return !replies.replies.empty(); });
      taken.swap(replies.replies);
    }
    completed += taken.size();
    taken.clear();
  }
  return seconds_between(t0, clock_type::now());
}

std::vector<double> run_cv_sequential(cv_thread_pool& pool, size_t n,
                                      std::chrono::microseconds gap) {
  struct channel {
    std::mutex mtx;
    std::condition_variable cv;
    std::optional<int32_t> reply;
  } ch;
  std::vector<double> samples;
  samples.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    auto x = static_cast<int32_t>(i);
    auto t0 = clock_type::now();
    pool.submit([&ch, x] {
      // Under the lock, as in run_cv_window: `ch` ends with the loop.
      std::lock_guard<std::mutex> guard{ch.mtx};
      ch.reply = x * 2;
      ch.cv.notify_one();
    });
    {
      std::unique_lock<std::mutex> guard{ch.mtx};
      ch.cv.wait(guard, [&] { return ch.reply.has_value(); });
      ch.reply.reset();
    }
    samples.push_back(static_cast<double>(ns_between(t0, clock_type::now())));
    std::this_thread::sleep_for(gap);
  }
  return samples;
}

void send_submit(caf::blocking_actor& self, const caf::actor& dest,
                 size_t i) {
  self.send(dest, pool::submit_atom_v, static_cast<int32_t>(i));
}

void send_plain(caf::blocking_actor& self, const caf::actor& dest, size_t i) {
  self.send(dest, static_cast<int32_t>(i));
}

window_result drive_threads(caf::actor_system& sys, const caf::actor& dest,
                            size_t n, size_t window, size_t callers,
                            send_fn issue) {
  callers = std::max<size_t>(1, std::min(callers, n));
  window = std::max(window, callers);
  std::vector<size_t> errors(callers, 0);
  // Every thread sends its first request once all are ready.
  std::mutex mtx;
  std::condition_variable cv;
  size_t ready = 0;
  bool go = false;
  time_point start;
  auto run = [&](size_t k) {
    caf::scoped_actor self{sys};
    auto mine = n / callers + (k < n % callers ? 1 : 0);
    auto room = window / callers + (k < window % callers ? 1 : 0);
    size_t sent = 0;
    size_t done = 0;
    auto top_up = [&] {
      for (; sent < mine && sent - done < room; ++sent)
        issue(*self, dest, sent);
    };
    {
      std::unique_lock<std::mutex> guard{mtx};
      if (++ready == callers) {
        go = true;
        start = clock_type::now();
        cv.notify_all();
      } else {
        cv.wait(guard, [&] { return go; });
      }
    }
    top_up();
    self->receive_while([&] { return done < mine; })(
        [&](int32_t) {
          ++done;
          top_up();
        },
        [&](caf::error&) {
          ++done;
          ++errors[k];
          top_up();
        });
  };
  std::vector<std::thread> threads;
  for (size_t k = 1; k < callers; ++k)
    threads.emplace_back(run, k);
  run(0);
  for (auto& t : threads)
    t.join();
  window_result result;
  result.seconds = seconds_between(start, clock_type::now());
  for (auto x : errors)
    result.errors += x;
  return result;
}

target pool_target(caf::actor_system& sys, std::string name, caf::actor pool,
                   size_t window, size_t callers) {
  return {std::move(name), [&sys, pool, window, callers](size_t n) {
            return drive_threads(sys, pool, n, window, callers, send_submit);
          }};
}

target actor_target(caf::actor_system& sys, std::string name,
                    caf::actor dest, size_t window, size_t callers) {
  return {std::move(name), [&sys, dest, window, callers](size_t n) {
            return drive_threads(sys, dest, n, window, callers, send_plain);
          }};
}

void alternate(std::vector<target>& targets, size_t warmup, size_t n,
               size_t reps,
               const std::function<void(size_t k, size_t rep,
                                        const window_result&)>& record) {
  for (auto& t : targets)
    t.run(warmup);
  for (size_t rep = 0; rep < reps; ++rep) {
    for (size_t k = 0; k < targets.size(); ++k) {
      auto res = targets[k].run(n);
      record(k, rep, res);
      if (res.errors > 0)
        std::printf("  !! %s: %zu errors\n", targets[k].name.c_str(),
                    res.errors);
    }
  }
}

std::vector<std::vector<double>> alternate_rates(std::vector<target>& targets,
                                                 size_t n, size_t reps,
                                                 csv_file& out) {
  std::vector<std::vector<double>> rates(targets.size());
  alternate(targets, n / 10, n, reps,
            [&](size_t k, size_t rep, const window_result& res) {
              auto rate = n / res.seconds;
              rates[k].push_back(rate);
              out.rowf("%s,%zu,%zu,%.6f,%.1f", targets[k].name.c_str(), rep, n,
                       res.seconds, rate);
            });
  return rates;
}

spread ratio_spread(const std::vector<double>& xs,
                    const std::vector<double>& base) {
  std::vector<double> ratios;
  for (size_t i = 0; i < xs.size() && i < base.size(); ++i)
    ratios.push_back(xs[i] / base[i]);
  return spread_of(std::move(ratios));
}

} // namespace bench
