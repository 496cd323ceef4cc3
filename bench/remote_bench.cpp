// Remote worker nodes: throughput of CPU-bound jobs on one node vs two.
//
//   remote_bench [--quick] [--out DIR]
//
// Publishes a pool on 127.0.0.1 and starts worker nodes as child processes
// (this program again, in `--node` mode), each with one dedicated worker
// and pinned to its own core (sched_setaffinity) so that two nodes stand
// for two machines as far as one 2-core box can. The pool's one local
// worker (a pool needs at least one) is held by a parking job for the whole
// run, so every measured job runs on a node. Each repetition runs the same
// number of jobs with 1 node, then with 2 (alternating the order between
// repetitions); `--out DIR` writes `remote.csv` (one row per run) and
// `remote_meta.json` for bench/report.py.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <pool/all.hpp>
#include <pool/remote.hpp>

#include "bench_util.hpp"

namespace {

using namespace std::chrono_literals;

constexpr const char* token = "remote-bench-token";

/// The job: `rounds` rounds of splitmix64, CPU only; the same on any node.
int64_t cpu_job(int64_t rounds) {
  auto h = static_cast<uint64_t>(rounds);
  for (int64_t i = 0; i < rounds; ++i) {
    h += 0x9e3779b97f4a7c15ull;
    auto z = h;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    h = z ^ (z >> 31);
  }
  return static_cast<int64_t>(h);
}

/// Input of the parking job that holds the local worker.
constexpr int64_t park_input = -1;

struct remote_config : caf::actor_system_config {
  remote_config() {
    pool::configure_remote(*this);
    set("logger.verbosity", caf::atom("quiet"));
  }
};

bool pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

/// `--node PORT CPU`: joins with one dedicated worker pinned to `CPU`
/// (-1: not pinned) until SIGTERM or the pool stops.
int run_node(uint16_t port, int cpu) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Before the actor system starts: its threads inherit the affinity.
  if (cpu >= 0 && !pin_to(cpu))
    std::fprintf(stderr, "remote_bench node: cannot pin to CPU %d\n", cpu);
  remote_config cfg;
  caf::actor_system sys{cfg};
  auto node = pool::join_remote_pool(sys, "127.0.0.1", port, token, 1, cpu_job,
                                     pool::node_options{}
                                         .kind(pool::worker_kind::dedicated)
                                         .leave_when_pool_stops(true)
                                         .log(pool::silent_log_hook()));
  if (!node) {
    std::fprintf(stderr, "remote_bench node: cannot join: %s\n",
                 pool::describe_remote(node.error()).c_str());
    return 1;
  }
  caf::scoped_actor self{sys};
  self->monitor(*node);
  for (;;) {
    timespec poll{0, 20 * 1000 * 1000};
    if (sigtimedwait(&signals, nullptr, &poll) > 0) {
      if (auto err = pool::leave_remote_pool(sys, *node))
        std::fprintf(stderr, "remote_bench node: leaving: %s\n",
                     pool::describe_remote(err).c_str());
      return 0;
    }
    auto down = false;
    self->receive([&](caf::down_msg&) { down = true; },
                  caf::after(std::chrono::seconds(0)) >> [] {});
    if (down)
      return 0;
  }
}

/// A node child process of this program.
class node_process {
public:
  node_process(uint16_t port, int cpu) {
    auto port_text = std::to_string(port);
    auto cpu_text = std::to_string(cpu);
    pid_ = fork();
    if (pid_ == 0) {
      execl("/proc/self/exe", "remote_bench", "--node", port_text.c_str(),
            cpu_text.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
  }

  node_process(const node_process&) = delete;
  node_process& operator=(const node_process&) = delete;

  /// SIGTERM, then waits (SIGKILL after 10 s).
  ~node_process() {
    if (pid_ <= 0)
      return;
    kill(pid_, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (waitpid(pid_, nullptr, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        return;
      }
      std::this_thread::sleep_for(5ms); // polling a child process
    }
  }

private:
  pid_t pid_ = -1;
};

uint64_t joined_workers(caf::actor_system& sys, const caf::actor& pool) {
  caf::scoped_actor self{sys};
  uint64_t result = 0;
  self->request(pool, 10s, pool::pool_stats_atom_v)
      .receive([&](pool::pool_stats& st) { result = st.joined; },
               [](caf::error&) {});
  return result;
}

/// Waits (at most 20 s) until exactly `n` node workers take part.
bool await_joined(caf::actor_system& sys, const caf::actor& pool, uint64_t n) {
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (joined_workers(sys, pool) != n) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(10ms); // polling the pool's stats
  }
  return true;
}

/// Rounds of `cpu_job` that take about `target` on this machine.
int64_t calibrate(std::chrono::microseconds target) {
  int64_t rounds = 100000;
  for (int i = 0; i < 3; ++i) {
    auto t0 = bench::clock_type::now();
    volatile auto sink = cpu_job(rounds);
    (void)sink;
    auto us =
        std::chrono::duration<double, std::micro>(bench::clock_type::now() - t0)
            .count();
    rounds = std::max<int64_t>(
        1000, static_cast<int64_t>(static_cast<double>(rounds) *
                                   static_cast<double>(target.count()) / us));
  }
  return rounds;
}

/// Median wall time of `cpu_job(rounds)` here, in microseconds.
double measure_job_us(int64_t rounds) {
  std::vector<double> samples;
  for (int i = 0; i < 7; ++i) {
    auto t0 = bench::clock_type::now();
    volatile auto sink = cpu_job(rounds);
    (void)sink;
    samples.push_back(
        std::chrono::duration<double, std::micro>(bench::clock_type::now() - t0)
            .count());
  }
  return bench::spread_of(samples).median;
}

/// CPU seconds used by this process and its reaped children (the nodes).
double own_cpu_seconds() {
  auto seconds = [](const rusage& x) {
    return static_cast<double>(x.ru_utime.tv_sec + x.ru_stime.tv_sec) +
           static_cast<double>(x.ru_utime.tv_usec + x.ru_stime.tv_usec) / 1e6;
  };
  rusage self{};
  rusage children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  return seconds(self) + seconds(children);
}

struct run_result {
  double seconds = 0;
  size_t errors = 0;
};

/// Submits `jobs` jobs of `rounds` rounds, all at once, and waits for every
/// result.
run_result run_jobs(caf::actor_system& sys, const caf::actor& pool, size_t jobs,
                    int64_t rounds) {
  auto outcome = bench::run_window<int64_t>(
      sys, jobs, jobs, [pool, rounds](caf::event_based_actor* self, size_t) {
        return self->request(pool, caf::infinite, pool::submit_atom_v, rounds);
      });
  return {outcome.seconds, outcome.errors};
}

int usage(int status) {
  std::puts("usage: remote_bench [--quick] [--out DIR]\n"
            "       remote_bench --node PORT CPU   (started by itself)");
  return status;
}

} // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--node") == 0)
    return run_node(static_cast<uint16_t>(std::atoi(argv[2])),
                    std::atoi(argv[3]));
  bench::settings cfg;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quick")
      cfg.quick = true;
    else if (arg == "--out" && i + 1 < argc)
      cfg.out_dir = argv[++i];
    else if (arg == "--help" || arg == "-h")
      return usage(0);
    else
      return usage(2);
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
  auto cores =
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  auto pinned = cores >= 2;
  auto job_time = 3000us;
  auto rounds = calibrate(job_time);
  auto job_us = measure_job_us(rounds);
  auto jobs = cfg.count(600, 100);
  auto repetitions = cfg.count(5, 1);
  std::printf("remote_bench (%s): %zu CPU-bound jobs of %.0f us, 1 vs 2 "
              "nodes of 1 worker each, %s, %zu repetitions\n",
              cfg.quick ? "quick" : "full", jobs, job_us,
              pinned ? "each node pinned to its own core" : "not pinned",
              repetitions);
  std::fflush(stdout);
  remote_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  // The parking job holds the one local worker until the end. Shared:
  // the worker thread may outlive this scope's locals.
  struct parking_gate {
    std::mutex mtx;
    std::condition_variable cv;
    bool open = false;
    std::atomic<bool> parked{false};
  };
  auto gate = std::make_shared<parking_gate>();
  auto job = [gate](int64_t x) -> int64_t {
    if (x != park_input)
      return cpu_job(x);
    gate->parked = true;
    std::unique_lock<std::mutex> guard{gate->mtx};
    gate->cv.wait(guard, [&] { return gate->open; });
    return 0;
  };
  auto pool = pool::spawn_pool(sys, job,
                               pool::pool_options{}
                                   .workers(1)
                                   .kind(pool::worker_kind::dedicated)
                                   .log(pool::silent_log_hook()));
  if (!pool) {
    std::fprintf(stderr, "cannot spawn the pool: %s\n",
                 pool::describe(pool.error()).c_str());
    return 1;
  }
  auto port = pool::publish_pool<int64_t(int64_t)>(
      sys, *pool,
      pool::remote_options{}.token(token).log(pool::silent_log_hook()));
  if (!port) {
    std::fprintf(stderr, "cannot publish the pool: %s\n",
                 pool::describe_remote(port.error()).c_str());
    return 1;
  }
  caf::anon_send(*pool, pool::enqueue_atom_v, park_input);
  auto park_deadline = bench::clock_type::now() + 10s;
  while (!gate->parked && bench::clock_type::now() < park_deadline)
    std::this_thread::sleep_for(1ms); // waiting for the local worker
  // How busy the machine was meanwhile with other processes: on a shared
  // box they take the nodes' cores.
  auto wall0 = bench::clock_type::now();
  auto machine0 = bench::read_cpu_ticks().machine;
  auto own0 = own_cpu_seconds();
  bench::csv_file out{cfg, "remote.csv",
                      "nodes,run,jobs,job_us,seconds,jobs_per_s,"
                      "efficiency,errors,pinned"};
  std::vector<double> rate[3];
  auto status = 0;
  for (size_t run = 0; run < repetitions && status == 0; ++run) {
    std::vector<int> order =
        run % 2 == 0 ? std::vector<int>{1, 2} : std::vector<int>{2, 1};
    for (auto nodes : order) {
      std::vector<std::unique_ptr<node_process>> children;
      for (int i = 0; i < nodes; ++i)
        children.push_back(
            std::make_unique<node_process>(*port, pinned ? i % cores : -1));
      if (!await_joined(sys, *pool, static_cast<uint64_t>(nodes))) {
        std::fprintf(stderr, "the nodes did not join in time\n");
        status = 1;
        break;
      }
      auto res = run_jobs(sys, *pool, jobs, rounds);
      auto per_s = static_cast<double>(jobs) / res.seconds;
      // Of what `nodes` workers doing nothing but jobs would reach.
      auto efficiency = per_s * job_us / 1e6 / nodes;
      rate[nodes].push_back(per_s);
      out.rowf("%d,%zu,%zu,%.0f,%.4f,%.1f,%.3f,%zu,%s", nodes, run, jobs,
               job_us, res.seconds, per_s, efficiency, res.errors,
               pinned ? "true" : "false");
      std::printf("  run %zu, %d node%s: %.0f jobs/s (%.2f s, %.0f%% of "
                  "ideal, %zu errors)\n",
                  run, nodes, nodes == 1 ? "" : "s", per_s, res.seconds,
                  efficiency * 100, res.errors);
      std::fflush(stdout);
      children.clear(); // SIGTERM: they leave
      if (!await_joined(sys, *pool, 0)) {
        std::fprintf(stderr, "the nodes did not leave in time\n");
        status = 1;
        break;
      }
    }
  }
  auto wall = bench::seconds_between(wall0, bench::clock_type::now());
  auto machine =
      static_cast<double>(bench::read_cpu_ticks().machine - machine0) /
      static_cast<double>(bench::ticks_per_second());
  auto own = own_cpu_seconds() - own0;
  auto other_share = std::max(0.0, (machine - own) / (wall * cores));
  std::printf("CPU busy meanwhile: this benchmark and its nodes %.0f%%, "
              "other processes %.0f%%\n",
              own / (wall * cores) * 100, other_share * 100);
  auto one = bench::spread_of(rate[1]);
  auto two = bench::spread_of(rate[2]);
  if (one.median > 0)
    std::printf("median: 1 node %.0f jobs/s, 2 nodes %.0f jobs/s: %.2fx\n",
                one.median, two.median, two.median / one.median);
  if (!cfg.out_dir.empty()) {
    auto path = cfg.out_dir + "/remote_meta.json";
    if (auto* f = std::fopen(path.c_str(), "w")) {
      std::fprintf(f,
                   "{\n  \"mode\": \"%s\",\n  \"cores\": %d,\n"
                   "  \"pinned\": %s,\n  \"job_us\": %.0f,\n"
                   "  \"jobs\": %zu,\n  \"repetitions\": %zu,\n"
                   "  \"seconds\": %.1f,\n  \"self_cpu_share\": %.3f,\n"
                   "  \"other_cpu_share\": %.3f\n}\n",
                   cfg.quick ? "quick" : "full", cores,
                   pinned ? "true" : "false", job_us, jobs, repetitions, wall,
                   own / (wall * cores), other_share);
      std::fclose(f);
    }
  }
  {
    std::lock_guard<std::mutex> guard{gate->mtx};
    gate->open = true;
  }
  gate->cv.notify_all();
  caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
  return status;
}
