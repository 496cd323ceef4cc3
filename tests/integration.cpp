// The pool on CAF's real scheduler: many jobs at 1, 2 and 4 workers, the
// concurrency limit, joined workers, a payload of the wrong type. (Inputs,
// bad input, errors of jobs and a terminated pool:
// tests/integration_edges.cpp.) Every wait is bounded.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <thread>

#include <caf/all.hpp>

#include "pool/all.hpp"
#include "real_system.hpp"

using namespace std::chrono_literals;

namespace {

using config = pool::test::real_config;

struct tally {
  std::atomic<int> ok{0};
  std::atomic<int> wrong{0};
  std::atomic<int> errors{0};
  std::promise<void> done;
};

/// Submits `n` jobs at once from one actor and waits (bounded) for all.
void run_many(size_t workers, int n) {
  config cfg;
  caf::actor_system sys{cfg};
  auto pool = pool::spawn_pool(
      sys, [](int x) { return x * 3 + 1; },
      pool::pool_options{}.workers(workers));
  REQUIRE(pool);
  auto counts = std::make_shared<tally>();
  auto finished = counts->done.get_future();
  // A window of outstanding requests, as a well-behaved caller keeps (CAF
  // 0.17's cost per response grows with the caller's outstanding requests).
  constexpr int window = 512;
  sys.spawn([pool = *pool, counts, n](caf::event_based_actor* self) {
    auto next = std::make_shared<int>(0);
    auto submit_next = std::make_shared<std::function<void()>>();
    *submit_next = [=] {
      if (*next == n)
        return;
      auto i = (*next)++;
      auto one_done = [=] {
        if (counts->ok + counts->wrong + counts->errors == n)
          counts->done.set_value();
        else
          (*submit_next)();
      };
      self->request(pool, caf::infinite, pool::submit_atom_v, i)
          .then(
              [=](int y) {
                ++(y == i * 3 + 1 ? counts->ok : counts->wrong);
                one_done();
              },
              [=](caf::error&) {
                ++counts->errors;
                one_done();
              });
    };
    for (int i = 0; i < window; ++i)
      (*submit_next)();
    // The closure refers to itself; break the cycle when the actor ends.
    self->attach_functor([submit_next] { *submit_next = nullptr; });
  });
  REQUIRE(finished.wait_for(120s) == std::future_status::ready);
  CHECK(counts->ok == n);
  CHECK(counts->wrong == 0);
  CHECK(counts->errors == 0);
  auto st = pool::blocking_submit<int>(sys, *pool, 10s, 1);
  REQUIRE(st);
  caf::scoped_actor self{sys};
  self->request(*pool, 10s, pool::pool_stats_atom_v)
      .receive(
          [&](const pool::pool_stats& x) {
            CHECK(x.completed == static_cast<uint64_t>(n) + 1);
            CHECK(x.processing.count == static_cast<uint64_t>(n) + 1);
            CHECK(x.queue_wait.count == static_cast<uint64_t>(n) + 1);
            CHECK(x.queue_wait.max > caf::timespan{0}); // jobs did wait
            CHECK(x.busy_high == workers);
            CHECK(x.workers == workers);
            CHECK(x.busy + x.waiting + x.sleeping == workers);
          },
          [](caf::error& err) { FAIL(pool::describe(err)); });
}

/// Runs `n` jobs that each hold their worker for a while and records how
/// many run at once.
int max_concurrency(size_t workers, int n) {
  config cfg;
  caf::actor_system sys{cfg};
  auto running = std::make_shared<std::atomic<int>>(0);
  auto highest = std::make_shared<std::atomic<int>>(0);
  auto job = [running, highest](int x) {
    auto now = ++*running;
    auto seen = highest->load();
    while (now > seen && !highest->compare_exchange_weak(seen, now))
      ; // retry
    // Hold the worker like a short database call would (busy, not asleep,
    // so the test does not depend on timer precision).
    auto until = std::chrono::steady_clock::now() + 100us;
    while (std::chrono::steady_clock::now() < until)
      ; // spin
    --*running;
    return x;
  };
  auto pool = pool::spawn_pool(
      sys, job,
      pool::pool_options{}.workers(workers).kind(pool::worker_kind::dedicated));
  REQUIRE(pool);
  std::vector<std::future<caf::expected<int>>> results;
  for (int i = 0; i < n; ++i)
    results.push_back(pool::submit_future<int>(sys, *pool, i));
  for (int i = 0; i < n; ++i) {
    REQUIRE(results[i].wait_for(60s) == std::future_status::ready);
    auto r = results[i].get();
    REQUIRE(r);
    CHECK(*r == i);
  }
  return highest->load();
}

/// Speaks the worker side of the protocol by hand, as a remote node would.
caf::behavior external_worker(caf::event_based_actor* self,
                              std::shared_ptr<std::atomic<int>> handled) {
  return {
      [self](pool::wake_up_atom) {
        self->send(caf::actor_cast<caf::actor>(self->current_sender()),
                   pool::give_me_work_atom_v);
      },
      [self, handled](pool::work_to_do_atom, pool::work_record& record) {
        auto shepherd = caf::actor_cast<caf::actor>(self->current_sender());
        ++*handled;
        auto x = record.payload.get_as<int>(0);
        self->send(shepherd, pool::status_reply_atom_v, record.id,
                   caf::make_message(x * 3 + 1));
        self->send(shepherd, pool::give_me_work_atom_v);
      },
      [](pool::go_to_sleep_atom) {},
  };
}

} // namespace

TEST_CASE("100,000 jobs through 1 worker all complete correctly" *
          doctest::timeout(120)) {
  run_many(1, 100'000);
}

TEST_CASE("100,000 jobs through 2 workers all complete correctly" *
          doctest::timeout(120)) {
  run_many(2, 100'000);
}

TEST_CASE("100,000 jobs through 4 workers all complete correctly" *
          doctest::timeout(120)) {
  run_many(4, 100'000);
}

TEST_CASE("no more jobs run at once than 1 worker" * doctest::timeout(60)) {
  CHECK(max_concurrency(1, 1000) == 1);
}

TEST_CASE("no more jobs run at once than 2 workers" * doctest::timeout(60)) {
  auto highest = max_concurrency(2, 2000);
  CHECK(highest <= 2);
  CHECK(highest >= 2); // the limit is reached, not merely respected
}

TEST_CASE("no more jobs run at once than 4 workers" * doctest::timeout(60)) {
  auto highest = max_concurrency(4, 2000);
  CHECK(highest <= 4);
  CHECK(highest >= 2);
}

TEST_CASE("an external actor joins through the protocol and gets work" *
          doctest::timeout(60)) {
  config cfg;
  caf::actor_system sys{cfg};
  auto pool = pool::spawn_pool(
      sys, [](int x) { return x * 3 + 1; }, pool::pool_options{}.workers(1));
  REQUIRE(pool);
  auto handled = std::make_shared<std::atomic<int>>(0);
  auto outsider = sys.spawn(external_worker, handled);
  caf::scoped_actor self{sys};
  self->request(*pool, 10s, pool::join_pool_atom_v, outsider)
      .receive([] {}, [](caf::error& err) { FAIL(pool::describe(err)); });
  std::vector<std::future<caf::expected<int>>> results;
  for (int i = 0; i < 200; ++i)
    results.push_back(pool::submit_future<int>(sys, *pool, i));
  for (int i = 0; i < 200; ++i) {
    REQUIRE(results[i].wait_for(30s) == std::future_status::ready);
    auto r = results[i].get();
    REQUIRE(r);
    CHECK(*r == i * 3 + 1);
  }
  // It slept last, so the first submit woke it.
  CHECK(*handled >= 1);
  self->request(*pool, 10s, pool::pool_stats_atom_v)
      .receive(
          [](const pool::pool_stats& st) {
            CHECK(st.workers == 2);
            CHECK(st.joined == 1);
          },
          [](caf::error& err) { FAIL(pool::describe(err)); });
  self->send_exit(outsider, caf::exit_reason::user_shutdown);
}

TEST_CASE("a payload of the wrong type fails that caller only" *
          doctest::timeout(30)) {
  config cfg;
  caf::actor_system sys{cfg};
  auto pool = pool::spawn_pool(
      sys, [](int x) { return x + 1; }, pool::pool_options{}.workers(2));
  REQUIRE(pool);
  caf::scoped_actor self{sys};
  self->request(*pool, 10s, pool::submit_atom_v, std::string{"not an int"})
      .receive([](int) { FAIL("accepted a string"); },
               [](caf::error& err) {
                 CHECK(pool::is(err, pool::pool_errc::wrong_input_type));
                 CHECK(pool::describe(err).find("int") != std::string::npos);
               });
  self->request(*pool, 10s, pool::submit_atom_v, 1, 2)
      .receive([](int) { FAIL("accepted two ints"); },
               [](caf::error& err) {
                 CHECK(pool::is(err, pool::pool_errc::wrong_input_type));
               });
  auto ok = pool::blocking_submit<int>(sys, *pool, 10s, 41);
  REQUIRE(ok);
  CHECK(*ok == 42);
}
