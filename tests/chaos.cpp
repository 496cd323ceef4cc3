// Chaos on the real scheduler, bounded to a minute: 20,000 operations while
// attempts throw, break their worker or overrun the timeout, and the queue
// actor crashes at random moments. Every operation must end exactly once
// with the right outcome, retry counts must add up, the pool must end at
// its configured size, and no actor may leak.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include <caf/all.hpp>

#include "faulty_store.hpp"
#include "pool/all.hpp"
#include "real_system.hpp"

using namespace std::chrono_literals;

namespace {

using config = pool::test::real_config;

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

constexpr int operations = 20'000;
constexpr uint32_t max_attempts = 8;
constexpr auto timeout = 100ms;

/// Inputs divisible by this always fail: they must end as final failures.
constexpr int doomed = 500;

struct outcome_log {
  outcome_log() : attempts(operations), replies(operations) {
    // nop
  }
  std::vector<std::atomic<int>> attempts;
  std::vector<std::atomic<int>> replies;
  std::atomic<int> succeeded{0};
  std::atomic<int> failed_for_good{0};
  std::atomic<int> wrong{0};
  std::atomic<int> total{0};
  std::promise<void> done;
};

} // namespace

TEST_CASE("chaos: 20,000 operations with throwing, breaking and overrunning "
          "attempts and a crashing queue all end exactly once" *
          doctest::timeout(90)) {
  config cfg;
  caf::actor_system sys{cfg};
  auto baseline = sys.registry().running();
  auto log = std::make_shared<outcome_log>();
  auto job = [log](int x) {
    auto attempt = ++log->attempts[x];
    auto roll = splitmix64(uint64_t(x) * 1000003 + attempt) % 1000;
    if (x % doomed == 0 || roll < 100)
      throw std::runtime_error("flaky");
    if (roll < 110)
      throw pool::resource_broken("connection reset");
    if (roll < 115)
      std::this_thread::sleep_for(timeout + 50ms); // a stuck call
    return x * 2;
  };
  auto store = std::make_shared<pool::test::faulty_store>(
      [](uint64_t call) { return splitmix64(call) % 2000 == 0; });
  auto pool = pool::spawn_pool(sys, job,
                               pool::pool_options{}
                                   .workers(4)
                                   .kind(pool::worker_kind::dedicated)
                                   .max_attempts(max_attempts)
                                   .backoff(1ms, 10ms)
                                   .attempt_timeout(timeout)
                                   .restart_intensity(1'000'000, 1s),
                               store);
  REQUIRE(pool);
  sys.spawn([pool = *pool, log](caf::event_based_actor* self) {
    auto next = std::make_shared<int>(0);
    auto submit_next = std::make_shared<std::function<void()>>();
    *submit_next = [=] {
      if (*next == operations)
        return;
      auto x = (*next)++;
      auto finish = [=] {
        ++log->replies[x];
        if (++log->total == operations)
          log->done.set_value();
        (*submit_next)();
      };
      self->request(pool, caf::infinite, pool::submit_atom_v, x)
          .then(
              [=](int y) {
                ++(y == x * 2 && x % doomed != 0 ? log->succeeded : log->wrong);
                finish();
              },
              [=](caf::error& err) {
                auto history = pool::attempt_history(err);
                auto right = x % doomed == 0 &&
                             pool::is(err, pool::pool_errc::operation_failed) &&
                             history.size() == max_attempts;
                ++(right ? log->failed_for_good : log->wrong);
                finish();
              });
    };
    for (int i = 0; i < 256; ++i)
      (*submit_next)();
    self->attach_functor([submit_next] { *submit_next = nullptr; });
  });
  REQUIRE(log->done.get_future().wait_for(60s) == std::future_status::ready);
  CHECK(log->wrong == 0);
  CHECK(log->failed_for_good == operations / doomed);
  CHECK(log->succeeded == operations - operations / doomed);
  int duplicates = 0;
  long attempts = 0;
  for (int x = 0; x < operations; ++x) {
    duplicates += log->replies[x] != 1 ? 1 : 0;
    attempts += log->attempts[x];
  }
  CHECK(duplicates == 0);
  CHECK(store->crashes() > 0);
  caf::scoped_actor self{sys};
  self->request(*pool, 10s, pool::pool_stats_atom_v)
      .receive(
          [&](const pool::pool_stats& st) {
            MESSAGE(pool::to_string(st));
            // Every attempt but each operation's last was retried.
            CHECK(st.retried == static_cast<uint64_t>(attempts - operations));
            CHECK(st.timed_out > 0);
            CHECK(st.worker_restarts > 0);
            CHECK(st.queue_restarts == store->crashes());
            CHECK(st.workers == 4);
            CHECK(st.busy + st.waiting + st.sleeping == 4);
            CHECK(st.completed + st.failed == operations);
          },
          [](caf::error& err) { FAIL(pool::describe(err)); });
  // Once the pool is gone, every actor it started terminates.
  self->send_exit(*pool, caf::exit_reason::user_shutdown);
  pool = caf::actor{};
  auto all_gone = std::async(std::launch::async, [&sys, baseline] {
    sys.registry().await_running_count_equal(baseline + 1); // + scoped actor
  });
  CHECK(all_gone.wait_for(30s) == std::future_status::ready);
}
