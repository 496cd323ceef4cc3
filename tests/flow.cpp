// Flow control at pool level, step by step on CAF's testing scheduler:
// pause and resume, waiting for the submits so far, the idle event, and
// the start-rate limit (measured on simulated time).
#include <doctest/doctest.h>

#include <memory>

#include "deterministic.hpp"

using namespace std::chrono_literals;
using pool::test::deterministic;

namespace {

auto triple = [](int x) { return x * 3; };

size_t count_tag(const std::vector<pool::test::event>& events,
                 const std::string& tag) {
  size_t n = 0;
  for (auto& ev : events)
    n += ev.tag == tag ? 1 : 0;
  return n;
}

/// Receives `n` outcomes of `submit` requests (ints) from the mailbox.
size_t results(deterministic& t) {
  size_t n = 0;
  while (t.replies() > 0)
    t.self->receive([&](int) { ++n; }, [](caf::error&) {});
  return n;
}

} // namespace

TEST_CASE_FIXTURE(deterministic,
                  "a paused pool starts nothing, and its queued work runs once "
                  "resumed" *
                      doctest::timeout(30)) {
  auto pool = spawn(triple, 2);
  run();
  CHECK(!ask(pool, caf::make_message(pool::pause_atom_v)));
  for (int i = 1; i <= 5; ++i)
    self->send(pool, pool::submit_atom_v, i);
  auto events = run();
  CHECK(count_tag(events, "work_to_do") == 0);
  auto st = stats_of(pool);
  CHECK(st.available == 5);
  CHECK(st.busy == 0);
  CHECK(st.paused); // the snapshot (page, /metrics, pooltop) says so
  {
    auto query = self->request(pool, caf::infinite, pool::pool_metrics_atom_v);
    run();
    query.receive([](pool::pool_metrics& m) { CHECK(m.stats.paused); },
                  [](caf::error& err) { FAIL(pool::describe(err)); });
  }
  CHECK(pool::summary(st).find("PAUSED") != std::string::npos);
  CHECK(results(*this) == 0);
  // Time passing changes nothing.
  CHECK(count_tag(advance(10s), "work_to_do") == 0);
  CHECK(!ask(pool, caf::make_message(pool::resume_atom_v)));
  run();
  CHECK(results(*this) == 5);
  CHECK(stats_of(pool).completed == 5);
  CHECK_FALSE(stats_of(pool).paused);
  // The caller's expected total travels with the stats (page, pooltop).
  CHECK(!ask(pool, caf::make_message(pool::expect_total_atom_v, uint64_t{9})));
  CHECK(stats_of(pool).expected_total == 9);
  CHECK(pool::summary(stats_of(pool)).find("of 9 expected") != std::string::npos);
}

TEST_CASE_FIXTURE(deterministic,
                  "pausing lets a running attempt finish and holds the next" *
                      doctest::timeout(30)) {
  auto pool = spawn(triple, 1);
  run();
  frozen = "pool.worker"; // the worker is in its job
  self->send(pool, pool::submit_atom_v, 1);
  self->send(pool, pool::submit_atom_v, 2);
  run();
  CHECK(!ask(pool, caf::make_message(pool::pause_atom_v)));
  frozen.clear();
  auto events = run();
  CHECK(results(*this) == 1); // the running one finished
  CHECK(stats_of(pool).available == 1);
  CHECK(!ask(pool, caf::make_message(pool::resume_atom_v)));
  CHECK(results(*this) == 1);
}

TEST_CASE_FIXTURE(deterministic,
                  "wait_idle answers once the submits before it ended, "
                  "without stopping the pool or waiting for later ones" *
                      doctest::timeout(30)) {
  auto pool = spawn(triple, 2);
  run();
  // Nothing pending: at once.
  CHECK(!ask(pool, caf::make_message(pool::wait_idle_atom_v)));
  CHECK(!ask(pool, caf::make_message(pool::pause_atom_v)));
  for (int i = 1; i <= 3; ++i)
    self->send(pool, pool::enqueue_atom_v, i);
  run();
  auto waited = self->request(pool, caf::infinite, pool::wait_idle_atom_v);
  // Later work (delayed by an hour) does not hold the answer up.
  self->send(pool, pool::submit_after_atom_v, caf::timespan{1h}, 4);
  run();
  bool answered = false;
  auto check_answer = [&] {
    // The three ids and anything that came since; the answer last.
    while (replies() > 0)
      self->receive([&](uint64_t) {},
                    [&](pool::op_done_atom, uint64_t, caf::message&) {},
                    [&] { answered = true; });
  };
  CHECK(!answered);
  CHECK(!ask(pool, caf::make_message(pool::resume_atom_v)));
  run();
  waited.receive([&] { answered = true; },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
  CHECK(answered);
  check_answer();
  auto st = stats_of(pool);
  CHECK(st.completed == 3);
  CHECK(st.delayed == 1); // still pending, and the pool still runs
  self->send(pool, pool::submit_atom_v, 5);
  run();
  CHECK(stats_of(pool).completed == 4);
}

TEST_CASE_FIXTURE(deterministic,
                  "wait_idle waits for parked submits too" *
                      doctest::timeout(30)) {
  auto pool = spawn_with(triple, pool::pool_options{}.workers(1).capacity(1)
                                     .wait_when_full(10));
  run();
  CHECK(!ask(pool, caf::make_message(pool::pause_atom_v)));
  self->send(pool, pool::submit_atom_v, 1);
  self->send(pool, pool::submit_atom_v, 2); // parked: the queue is full
  run();
  CHECK(stats_of(pool).parked == 1);
  auto waited = self->request(pool, caf::infinite, pool::wait_idle_atom_v);
  run();
  CHECK(!ask(pool, caf::make_message(pool::resume_atom_v)));
  bool answered = false;
  waited.receive([&] { answered = true; },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
  CHECK(answered);
  CHECK(results(*this) == 2); // both ran before the answer came
}

TEST_CASE_FIXTURE(deterministic,
                  "the idle event goes out each time the pool runs dry" *
                      doctest::timeout(30)) {
  auto events = std::make_shared<std::vector<pool::pool_event>>();
  auto who = sys.spawn([events](caf::event_based_actor*) -> caf::behavior {
    return {[events](pool::pool_event& ev) { events->push_back(ev); }};
  });
  auto pool = spawn(triple, 2);
  run();
  CHECK(!ask(pool, caf::make_message(pool::subscribe_atom_v, who,
                                     pool::event_bit(pool::event_kind::idle))));
  for (int i = 1; i <= 4; ++i)
    self->send(pool, pool::submit_atom_v, i);
  run();
  CHECK(results(*this) == 4);
  REQUIRE(events->size() == 1);
  CHECK(events->front().kind == pool::event_kind::idle);
  CHECK(pool::to_string(events->front()) == "idle count=0");
  self->send(pool, pool::submit_atom_v, 5);
  run();
  CHECK(events->size() == 2);
  caf::anon_send_exit(who, caf::exit_reason::user_shutdown);
}

TEST_CASE_FIXTURE(deterministic,
                  "a rate limit starts at most N attempts in any window of "
                  "one period, and every attempt runs" *
                      doctest::timeout(30)) {
  auto pool = spawn_with(
      triple, pool::pool_options{}.workers(4).rate_limit(3, caf::timespan{1s}));
  run();
  for (int i = 1; i <= 10; ++i)
    self->send(pool, pool::submit_atom_v, i);
  // Starts on simulated time, in steps of 100 ms.
  std::vector<caf::timespan> starts;
  caf::timespan now{0};
  auto note = [&](const std::vector<pool::test::event>& events) {
    for (auto& ev : events) {
      if (ev.tag != "work_to_do")
        continue;
      // One attempt, or a batch of them (it runs at once here: jobs take
      // no simulated time).
      size_t n = 1;
      if (ev.content.match_element<std::vector<pool::work_record>>(1))
        n = ev.content.get_as<std::vector<pool::work_record>>(1).size();
      for (size_t i = 0; i < n; ++i)
        starts.push_back(now);
    }
  };
  note(run());
  CHECK(starts.size() == 3);
  for (int step = 0; step < 50 && starts.size() < 10; ++step) {
    now += 100ms;
    note(advance(100ms));
  }
  REQUIRE(starts.size() == 10);
  for (size_t i = 0; i + 3 < starts.size(); ++i)
    CHECK(starts[i + 3] - starts[i] >= caf::timespan{1s});
  // The last of ten at 3/s: after three full periods, not later.
  CHECK(starts.back() == caf::timespan{3s});
  CHECK(results(*this) == 10);
}

TEST_CASE("a bad rate limit fails at spawn naming it" * doctest::timeout(30)) {
  pool::test::testing_config cfg;
  caf::actor_system sys{cfg};
  auto zero = pool::spawn_pool(sys, triple,
                               pool::pool_options{}.rate_limit(0, 1s));
  REQUIRE(!zero);
  CHECK(pool::describe(zero.error()).find("rate_limit") != std::string::npos);
  auto no_period = pool::spawn_pool(sys, triple,
                                    pool::pool_options{}.rate_limit(5, 0s));
  REQUIRE(!no_period);
  CHECK(pool::describe(no_period.error()).find("period") != std::string::npos);
}
