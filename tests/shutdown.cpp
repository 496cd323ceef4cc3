// Ending a program whose pool still has many dedicated workers: the actor
// system's destructor must not hang (CAF 0.17.6 stops its clock once the
// registry is empty, while cleanups of detached actors still push to it).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "real_system.hpp"

using namespace std::chrono_literals;

namespace {

/// In a child process: a pool of `workers` dedicated workers runs `jobs`
/// operations, its handle goes, and the actor system is destroyed. Exits 0
/// when every operation gave its result.
[[noreturn]] void run_and_exit(size_t workers, int jobs) {
  int status = 0;
  {
    pool::test::real_config cfg;
    caf::actor_system sys{cfg};
    auto opts =
        pool::pool_options{}.workers(workers).kind(pool::worker_kind::dedicated);
    auto pool = pool::spawn_pool(sys, [](int32_t x) { return x + 1; }, opts);
    if (!pool)
      _exit(2);
    std::vector<std::future<caf::expected<int32_t>>> results;
    for (int32_t i = 0; i < jobs; ++i)
      results.push_back(pool::submit_future<int32_t>(sys, *pool, i));
    for (int32_t i = 0; i < jobs; ++i) {
      auto x = results[static_cast<size_t>(i)].get();
      if (!x || *x != i + 1)
        status = 3;
    }
    *pool = caf::actor{};
  } // ~actor_system: waits for every worker's thread
  _exit(status);
}

/// In a child process: `n` dedicated workers, each slow in its cleanup
/// (an attached functor that sleeps), are told to exit, and the actor
/// system is destroyed at once. Before the fix its clock stopped while the
/// cleanups still had to cancel their timeouts: they blocked for ever.
[[noreturn]] void slow_cleanups_and_exit(size_t n) {
  {
    pool::test::real_config cfg;
    caf::actor_system sys{cfg};
    std::vector<caf::actor> workers;
    for (size_t i = 0; i < n; ++i) {
      auto worker = pool::spawn_dedicated_worker(
          sys, [](caf::stateful_actor<pool::worker_state>*) -> caf::behavior {
            return {[](int32_t) {}};
          });
      worker->attach_functor(
          [] { std::this_thread::sleep_for(std::chrono::milliseconds{50}); });
      workers.push_back(std::move(worker));
    }
    for (auto& worker : workers)
      caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
    workers.clear();
  }
  _exit(0);
}

/// Runs `child` in a forked process `rounds` times; each must end well
/// within 30 s.
template <class F>
void in_child_rounds(int rounds, F child) {
  for (int round = 0; round < rounds; ++round) {
    CAPTURE(round);
    auto pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0)
      child();
    auto status = pool::test::wait_for(pid, 30s);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
}

} // namespace

TEST_CASE("200 dedicated workers slow to clean up: the actor system ends, 5 "
          "times in a row, each within 30 s" *
          doctest::timeout(200)) {
  in_child_rounds(5, [] { slow_cleanups_and_exit(200); });
}

TEST_CASE("a program with 300 dedicated workers ends, 25 times in a row, "
          "each within 30 s" *
          doctest::timeout(300)) {
  in_child_rounds(25, [] { run_and_exit(300, 600); });
}
