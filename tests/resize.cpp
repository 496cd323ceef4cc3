// Resize without restart: grow, shrink (idle workers at once, busy ones
// after their attempt), refuse 0; nothing lost, the stats invariant holds.
#include <set>

#include <doctest/doctest.h>

#include <atomic>
#include <future>

#include "deterministic.hpp"
#include "real_system.hpp"

using namespace std::chrono_literals;
using pool::test::deterministic;

namespace {

auto twice = [](int x) { return x * 2; };

/// Holds at every moment; after a resize has been answered, also
/// `workers == configured + joined`.
void check_invariant(const pool::pool_stats& st) {
  CHECK(st.busy + st.waiting + st.sleeping == st.workers);
}

caf::error resize(deterministic& t, const caf::actor& pool, uint64_t n) {
  return t.ask(pool, caf::make_message(pool::resize_atom_v, n));
}

} // namespace

TEST_CASE_FIXTURE(deterministic,
                  "growing from 1 to 3 workers: new workers pull at once" *
                      doctest::timeout(30)) {
  auto pool = pool::spawn_pool(sys, twice, pool::pool_options{}.workers(1));
  REQUIRE(pool);
  run();
  CHECK(!resize(*this, *pool, 3));
  auto st = stats_of(*pool);
  CHECK(st.configured == 3);
  CHECK(st.workers == 3);
  CHECK(st.sleeping == 3);
  check_invariant(st);
  for (int i = 0; i < 3; ++i)
    self->send(*pool, pool::submit_atom_v, i);
  auto events = run();
  // Each of the three gets one (the new ones straight while asleep).
  std::set<caf::actor_addr> takers;
  for (auto& ev : events)
    if (ev.tag == "work_to_do")
      takers.insert(ev.to);
  CHECK(count(events, "work_to_do") == 3);
  CHECK(takers.size() == 3);
}

TEST_CASE_FIXTURE(deterministic,
                  "shrinking idle workers from 4 to 2 stops two of them" *
                      doctest::timeout(30)) {
  auto baseline = sys.registry().running();
  auto pool = pool::spawn_pool(sys, twice, pool::pool_options{}.workers(4));
  REQUIRE(pool);
  run();
  CHECK(sys.registry().running() == baseline + 6);
  CHECK(!resize(*this, *pool, 2));
  run();
  CHECK(sys.registry().running() == baseline + 4);
  auto st = stats_of(*pool);
  CHECK(st.configured == 2);
  CHECK(st.workers == 2);
  CHECK(st.worker_restarts == 0); // stopping surplus is not a failure
  check_invariant(st);
  auto answer = self->request(*pool, caf::infinite, pool::submit_atom_v, 21);
  run();
  answer.receive([](int y) { CHECK(y == 42); },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
}

TEST_CASE_FIXTURE(deterministic,
                  "a big shrink stops the next step's workers only once the "
                  "last step's are gone" *
                      doctest::timeout(60)) {
  // (Without the wait, the shepherd put every worker it stopped on its own
  // scheduler thread's queue at once: 400,000 took 73 s to stop.)
  auto pool =
      pool::spawn_pool(sys, twice, pool::pool_options{}.workers(5000));
  REQUIRE(pool);
  run();
  frozen = "pool.worker"; // stopped workers do not get to terminate
  auto answer = self->request(*pool, caf::infinite, pool::resize_atom_v,
                              uint64_t{2});
  run();
  auto st = stats_of(*pool);
  CHECK(st.configured == 2);
  CHECK(st.workers == 3000); // one step of 2,000 stopped, none after it
  frozen.clear();
  run();
  answer.receive([] {}, [](caf::error& err) { FAIL(pool::describe(err)); });
  st = stats_of(*pool);
  CHECK(st.workers == 2);
  check_invariant(st);
}

TEST_CASE_FIXTURE(deterministic,
                  "resizing to 0 is refused, naming the field, pool unchanged" *
                      doctest::timeout(30)) {
  auto pool = pool::spawn_pool(sys, twice, pool::pool_options{}.workers(3));
  REQUIRE(pool);
  run();
  auto err = resize(*this, *pool, 0);
  CHECK(pool::is(err, pool::pool_errc::invalid_option));
  CHECK(pool::describe(err).find("workers") != std::string::npos);
  auto st = stats_of(*pool);
  CHECK(st.configured == 3);
  CHECK(st.workers == 3);
}

TEST_CASE("shrinking with busy workers replies once their attempts are done, "
          "losing nothing" *
          doctest::timeout(60)) {
  pool::test::real_config cfg;
  caf::actor_system sys{cfg};
  auto release = std::make_shared<std::promise<void>>();
  auto released = release->get_future().share();
  auto started = std::make_shared<std::atomic<int>>(0);
  auto job = [released, started](int x) {
    if (x < 0) { // the blocking kind
      ++*started;
      released.wait_for(30s);
    }
    return x;
  };
  auto pool = pool::spawn_pool(
      sys, job,
      pool::pool_options{}.workers(3).kind(pool::worker_kind::dedicated));
  REQUIRE(pool);
  auto blocked_a = pool::submit_future<int>(sys, *pool, -1);
  auto blocked_b = pool::submit_future<int>(sys, *pool, -2);
  caf::scoped_actor self{sys};
  auto stats = [&] { return pool::test::stats_now(self, *pool); };
  for (int i = 0; i < 500 && stats().busy < 2; ++i)
    self->receive(caf::after(10ms) >> [] {});
  REQUIRE(stats().busy == 2);
  // Shrink to 1: the idle worker stops now, one busy worker after its job.
  auto resized = std::make_shared<std::promise<caf::error>>();
  sys.spawn([pool = *pool, resized](caf::event_based_actor* s) {
    s->request(pool, caf::infinite, pool::resize_atom_v, uint64_t{1})
        .then([resized] { resized->set_value(caf::none); },
              [resized](caf::error& err) { resized->set_value(err); });
  });
  auto resize_done = resized->get_future();
  for (int i = 0; i < 500 && stats().configured != 1; ++i)
    self->receive(caf::after(10ms) >> [] {});
  // Work submitted during the shrink is not lost.
  auto during = pool::submit_future<int>(sys, *pool, 7);
  auto st = stats();
  CHECK(st.configured == 1);
  CHECK(st.workers == 2); // the idle one stopped at once
  CHECK(st.busy == 2);    // the retiring one is still busy
  check_invariant(st);
  CHECK(resize_done.wait_for(100ms) == std::future_status::timeout);
  release->set_value();
  REQUIRE(resize_done.wait_for(10s) == std::future_status::ready);
  CHECK(!resize_done.get());
  for (auto* f : {&blocked_a, &blocked_b, &during})
    REQUIRE(f->wait_for(10s) == std::future_status::ready);
  CHECK(blocked_a.get() == -1);
  CHECK(blocked_b.get() == -2);
  CHECK(during.get() == 7);
  st = stats();
  CHECK(st.workers == 1);
  CHECK(st.workers == st.configured);
  CHECK(st.completed == 3);
  check_invariant(st);
}
