// The pool's benchmark: every workload against its named baselines, in one
// run on this machine. `--quick` is a smoke version (< 30 s); `--out DIR`
// writes raw results (CSV per workload, meta.json) for bench/report.py.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

#include <caf/config.hpp>

#include "workloads.hpp"

namespace {

void usage() {
  std::puts(
      "usage: pool_bench [--quick] [--out DIR] [--only W[,W...]]\n"
      "workloads: trivial bulk latency sweep workers resize queue durable uneven "
      "saturation scaling ablation http flow keys\n"
      "environment, for trying a change (a report wants none of them):\n"
      "  POOL_BENCH_UNEVEN=target       uneven: only bimodal @ 0.7\n"
      "  POOL_BENCH_TARGETS=a,b         trivial/bulk/latency/saturation: only these targets\n"
      "  POOL_BENCH_SATURATION=20x2,... saturation: only these points (us x workers)\n"
      "  POOL_BENCH_SCALING=0x2,20x15   scaling: only these points (us x workers)\n"
      "  POOL_BENCH_ABLATION=all,with.. ablation: only variants named so (prefixes)\n"
      "  POOL_BENCH_ABLATION_REPS=N     ablation: N repetitions (default 5)\n"
      "  POOL_BENCH_MAX_THROUGHPUT=N    scheduler.max-throughput\n"
      "  POOL_BENCH_MODERATE=N          work-stealing.moderate-poll-attempts\n"
      "  POOL_BENCH_RELAXED_US=N        work-stealing.relaxed-sleep-duration\n"
      "  POOL_BENCH_WATCHDOG_S=N        end the run when one workload takes N s\n"
      "                                 (default 90 quick, 3600 full)");
}

/// Ends the process when one workload runs far past its usual time, saying
/// which one: a lost outcome would otherwise hang the run (and CI) without
/// a word. The limit is generous (quick sections take at most ~12 s).
class watchdog {
public:
  explicit watchdog(std::chrono::seconds limit) : limit_(limit) {
    thread_ = std::thread{[this] { watch(); }};
  }

  ~watchdog() {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  void enter(const char* name) {
    std::lock_guard<std::mutex> guard{mtx_};
    name_ = name;
    since_ = std::chrono::steady_clock::now();
    cv_.notify_all();
  }

private:
  void watch() {
    std::unique_lock<std::mutex> guard{mtx_};
    while (!done_) {
      auto deadline = since_ + limit_;
      if (cv_.wait_until(guard, deadline) == std::cv_status::timeout
          && !done_ && std::chrono::steady_clock::now() >= since_ + limit_) {
        std::fflush(stdout);
        std::fprintf(stderr,
                     "!! pool_bench: workload '%s' still running after %lld "
                     "s (its usual time is far less): a lost outcome or a "
                     "hang; ending the run\n",
                     name_, static_cast<long long>(limit_.count()));
        std::fflush(stderr);
        std::_Exit(3);
      }
    }
  }

  std::chrono::seconds limit_;
  std::mutex mtx_;
  std::condition_variable cv_;
  const char* name_ = "start";
  std::chrono::steady_clock::time_point since_ =
      std::chrono::steady_clock::now();
  bool done_ = false;
  std::thread thread_;
};

std::string utc_now() {
  char buf[32];
  auto t = std::time(nullptr);
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

void write_meta(const bench::settings& cfg) {
  if (cfg.out_dir.empty())
    return;
  auto path = cfg.out_dir + "/meta.json";
  auto* f = std::fopen(path.c_str(), "w");
  if (f == nullptr)
    return;
  std::fprintf(f,
               "{\n  \"mode\": \"%s\",\n  \"date\": \"%s\",\n"
               "  \"cpu\": \"%s\",\n  \"cores\": %u,\n"
               "  \"caf_version\": \"%d.%d.%d\",\n  \"compiler\": \"%s\",\n"
               "  \"optimized\": %s\n}\n",
               cfg.quick ? "quick" : "full", utc_now().c_str(),
               bench::cpu_model().c_str(), std::thread::hardware_concurrency(),
               CAF_MAJOR_VERSION, CAF_MINOR_VERSION, CAF_PATCH_VERSION,
               __VERSION__,
#ifdef NDEBUG
               "true"
#else
               "false"
#endif
  );
  std::fclose(f);
}

} // namespace

int main(int argc, char** argv) {
  bench::settings cfg;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quick") {
      cfg.quick = true;
    } else if (arg == "--out" && i + 1 < argc) {
      cfg.out_dir = argv[++i];
    } else if (arg == "--only" && i + 1 < argc) {
      cfg.only = bench::split_list(argv[++i]);
    } else if (arg == "--help" || arg == "-h") {
      usage();
      return 0;
    } else {
      usage();
      return 2;
    }
  }
  if (!cfg.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(cfg.out_dir, ec);
    if (ec) {
      std::fprintf(stderr, "cannot create %s: %s\n", cfg.out_dir.c_str(),
                   ec.message().c_str());
      return 1;
    }
  }
  write_meta(cfg);
  std::printf("pool_bench (%s) on %s, %u cores, CAF %d.%d.%d\n",
              cfg.quick ? "quick" : "full", bench::cpu_model().c_str(),
              std::thread::hardware_concurrency(), CAF_MAJOR_VERSION,
              CAF_MINOR_VERSION, CAF_PATCH_VERSION);
  auto t0 = bench::clock_type::now();
  struct workload {
    const char* name;
    void (*run)(const bench::settings&);
  };
  const workload all[] = {
      {"trivial", bench::run_trivial}, {"bulk", bench::run_bulk},
      {"latency", bench::run_latency}, {"sweep", bench::run_sweep},
      {"workers", bench::run_workers}, {"resize", bench::run_resize},
      {"queue", bench::run_queue},
      {"durable", bench::run_durable}, {"uneven", bench::run_uneven},
      {"ablation", bench::run_ablation},
      {"saturation", bench::run_saturation},
      {"scaling", bench::run_scaling},
      {"http", bench::run_http},
      {"flow", bench::run_flow},
      {"keys", bench::run_keys},
  };
  // How busy the machine was meanwhile, with this process and without:
  // other load on the cores skews every figure.
  bench::csv_file load_out{cfg, "machine_load.csv",
                           "workload,seconds,self_cpu_share,other_cpu_share"};
  auto cores = std::max(1u, std::thread::hardware_concurrency());
  long limit_s = cfg.quick ? 90 : 3600;
  if (auto x = std::getenv("POOL_BENCH_WATCHDOG_S"))
    limit_s = std::strtol(x, nullptr, 10);
  watchdog dog{std::chrono::seconds{limit_s}};
  for (auto& w : all) {
    if (!cfg.wants(w.name))
      continue;
    dog.enter(w.name);
    auto start = bench::clock_type::now();
    auto ticks0 = bench::read_cpu_ticks();
    w.run(cfg);
    auto ticks1 = bench::read_cpu_ticks();
    auto seconds = bench::seconds_between(start, bench::clock_type::now());
    auto capacity = seconds * cores * bench::ticks_per_second();
    auto self = (ticks1.self - ticks0.self) / capacity;
    auto other = std::max(
        0.0, (ticks1.machine - ticks0.machine - (ticks1.self - ticks0.self)) /
                 capacity);
    load_out.rowf("%s,%.2f,%.3f,%.3f", w.name, seconds, self, other);
    std::printf("   (%s: %.1f s; CPU busy: this process %.0f%%, other "
                "processes %.0f%%)\n",
                w.name, seconds, self * 100, other * 100);
    std::fflush(stdout);
  }
  std::printf("done in %.1f s\n",
              bench::seconds_between(t0, bench::clock_type::now()));
  return 0;
}
