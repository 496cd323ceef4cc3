// Operating a pool: the overload warning, the backlog alarm, event
// subscriptions, autoscaling and the logging hook, on the testing
// scheduler (simulated time; workers "stuck in a job" are frozen actors).
#include <doctest/doctest.h>

#include <memory>
#include <sstream>
#include <thread>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "deterministic.hpp"

using namespace std::chrono_literals;
using pool::test::deterministic;

namespace {

auto twice = [](int x) { return x * 2; };

/// Collects a pool's log lines.
struct log_capture {
  struct line {
    pool::log_level level;
    std::string text;
  };
  std::shared_ptr<std::vector<line>> lines =
      std::make_shared<std::vector<line>>();

  pool::log_hook hook() const {
    return [out = lines](pool::log_level level, const std::string&,
                         const std::string& text) {
      out->push_back(line{level, text});
    };
  }

  size_t count(pool::log_level level, const std::string& part) const {
    size_t n = 0;
    for (auto& x : *lines)
      if (x.level == level && x.text.find(part) != std::string::npos)
        ++n;
    return n;
  }
};

using event_list = std::shared_ptr<std::vector<pool::pool_event>>;

/// An actor that appends every event it receives to `out`.
caf::actor collector(caf::actor_system& sys, event_list out) {
  return sys.spawn([out](caf::event_based_actor*) -> caf::behavior {
    return {[out](pool::pool_event& ev) { out->push_back(std::move(ev)); }};
  });
}

size_t count_kind(const event_list& events, pool::event_kind kind) {
  size_t n = 0;
  for (auto& ev : *events)
    n += ev.kind == kind ? 1 : 0;
  return n;
}

void subscribe(deterministic& t, const caf::actor& pool, const caf::actor& who,
               uint32_t mask = pool::event_mask::all) {
  CHECK(!t.ask(pool, caf::make_message(pool::subscribe_atom_v, who, mask)));
}

void check_invariant(const pool::pool_stats& st) {
  CHECK(st.busy + st.waiting + st.sleeping == st.workers);
}

} // namespace

TEST_CASE_FIXTURE(deterministic,
                  "overload warning: above 100 x workers for 5 s by default, "
                  "at most once per interval" *
                      doctest::timeout(30)) {
  log_capture logs;
  auto pool = pool::spawn_pool(
      sys, twice, pool::pool_options{}.workers(1).log(logs.hook()));
  REQUIRE(pool);
  auto events = std::make_shared<std::vector<pool::pool_event>>();
  auto sub = collector(sys, events);
  subscribe(*this, *pool, sub);
  // Delayed operations wait without running: 100 is not yet too many.
  for (int i = 0; i < 100; ++i)
    self->send(*pool, pool::submit_after_atom_v, caf::timespan{1h}, i);
  run();
  CHECK(stats_of(*pool).overload_warnings == 0);
  for (int i = 0; i < 50; ++i)
    self->send(*pool, pool::submit_after_atom_v, caf::timespan{1h}, i);
  run();
  // Above the threshold, but not yet for long: a burst warns nobody.
  CHECK(stats_of(*pool).overload_warnings == 0);
  advance(5s - 1ns);
  CHECK(stats_of(*pool).overload_warnings == 0);
  advance(1ns);
  auto st = stats_of(*pool);
  CHECK(st.overload_warnings == 1); // 150 waiting for 5 s: one line
  CHECK(st.waiting_high == 150);
  CHECK(logs.count(pool::log_level::warning,
                   "overloaded: 150 operations waiting for 5s") == 1);
  CHECK(count_kind(events, pool::event_kind::overload) == 1);
  advance(59s);
  self->send(*pool, pool::submit_after_atom_v, caf::timespan{1h}, 0);
  run();
  CHECK(stats_of(*pool).overload_warnings == 1);
  // The interval is over: its timer warns again, with no submit needed.
  advance(1s);
  CHECK(stats_of(*pool).overload_warnings == 2);
  CHECK(logs.count(pool::log_level::warning, "overloaded") == 2);
  CHECK(count_kind(events, pool::event_kind::overload) == 2);
  CHECK(events->back().count == 151);
  caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
}

TEST_CASE_FIXTURE(deterministic,
                  "overload warning: a burst that drains within the sustain "
                  "time warns nobody" *
                      doctest::timeout(30)) {
  log_capture logs;
  auto pool = pool::spawn_pool(
      sys, twice, pool::pool_options{}.workers(1).log(logs.hook()));
  REQUIRE(pool);
  // 300 due in 1 s: far above 100 x 1 worker, but all done at once then.
  for (int i = 0; i < 300; ++i)
    self->send(*pool, pool::submit_after_atom_v, caf::timespan{1s}, i);
  run();
  advance(1s);
  CHECK(stats_of(*pool).completed == 300);
  advance(10s);
  auto st = stats_of(*pool);
  CHECK(st.overload_warnings == 0);
  CHECK(st.waiting_high == 300);
  CHECK(logs.count(pool::log_level::warning, "overloaded") == 0);
  caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
}

TEST_CASE_FIXTURE(deterministic,
                  "an explicit overload threshold replaces the default" *
                      doctest::timeout(30)) {
  log_capture logs;
  auto pool = pool::spawn_pool(sys, twice,
                               pool::pool_options{}
                                   .workers(4)
                                   .log(logs.hook())
                                   .overload_warning(3, 10s)
                                   .overload_sustain(0s));
  REQUIRE(pool);
  for (int i = 0; i < 3; ++i)
    self->send(*pool, pool::submit_after_atom_v, caf::timespan{1h}, i);
  run();
  CHECK(stats_of(*pool).overload_warnings == 0);
  self->send(*pool, pool::submit_after_atom_v, caf::timespan{1h}, 3);
  run();
  CHECK(stats_of(*pool).overload_warnings == 1);
  CHECK(logs.count(pool::log_level::warning, "threshold 3") == 1);
  caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
}

TEST_CASE_FIXTURE(deterministic,
                  "backlog alarm: raised when available stays above the "
                  "workers for the configured time, cleared below" *
                      doctest::timeout(30)) {
  log_capture logs;
  auto pool = pool::spawn_pool(
      sys, twice,
      pool::pool_options{}.workers(2).backlog_alarm(5s).log(logs.hook()));
  REQUIRE(pool);
  auto events = std::make_shared<std::vector<pool::pool_event>>();
  auto sub = collector(sys, events);
  subscribe(*this, *pool, sub, pool::event_mask::health);
  run();
  frozen = "pool.worker"; // both workers stuck
  // The first two go straight to the sleeping workers and stay there; the
  // other five wait in the queue.
  for (int i = 0; i < 7; ++i)
    self->send(*pool, pool::submit_atom_v, i);
  run();
  advance(4s);
  auto st = stats_of(*pool);
  CHECK(st.available == 5);
  CHECK(!st.backlog_alarm);
  advance(1s);
  st = stats_of(*pool);
  CHECK(st.backlog_alarm);
  CHECK(st.alarms_raised == 1);
  CHECK(logs.count(pool::log_level::warning, "backlog alarm") == 1);
  REQUIRE(count_kind(events, pool::event_kind::alarm_raised) == 1);
  CHECK(events->back().count == 5);
  frozen.clear(); // the workers take the work
  run();
  st = stats_of(*pool);
  CHECK(st.completed == 7);
  CHECK(!st.backlog_alarm);
  CHECK(st.alarms_raised == 1);
  CHECK(logs.count(pool::log_level::info, "backlog alarm cleared") == 1);
  CHECK(count_kind(events, pool::event_kind::alarm_cleared) == 1);
  // Outcomes were not subscribed to.
  CHECK(count_kind(events, pool::event_kind::completed) == 0);
}

TEST_CASE_FIXTURE(deterministic,
                  "a backlog shorter than the alarm time raises nothing" *
                      doctest::timeout(30)) {
  log_capture logs;
  auto pool = pool::spawn_pool(
      sys, twice,
      pool::pool_options{}.workers(1).backlog_alarm(5s).log(logs.hook()));
  REQUIRE(pool);
  run();
  frozen = "pool.worker";
  for (int i = 0; i < 3; ++i)
    self->send(*pool, pool::submit_atom_v, i);
  run();
  advance(4s);
  frozen.clear();
  run();
  advance(10s);
  auto st = stats_of(*pool);
  CHECK(st.completed == 3);
  CHECK(st.alarms_raised == 0);
  CHECK(logs.lines->empty());
}

TEST_CASE_FIXTURE(deterministic,
                  "a cooperative job that blocks past slow_job_warning is "
                  "counted and warned about once a minute, a quick one not" *
                      doctest::timeout(30)) {
  log_capture logs;
  // The job really blocks its thread: the worker measures on its own clock.
  auto job = [](int ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return ms;
  };
  auto pool = pool::spawn_pool(
      sys, job,
      pool::pool_options{}.workers(1).slow_job_warning(20ms).log(logs.hook()));
  REQUIRE(pool);
  run();
  for (int ms : {0, 30, 30, 0})
    self->send(*pool, pool::submit_atom_v, ms);
  run();
  auto st = stats_of(*pool);
  CHECK(st.completed == 4);
  CHECK(st.slow_jobs == 2);
  CHECK(logs.count(pool::log_level::warning, "on a cooperative worker") == 1);
  advance(61s);
  self->send(*pool, pool::submit_atom_v, 30);
  run();
  CHECK(stats_of(*pool).slow_jobs == 3);
  CHECK(logs.count(pool::log_level::warning, "(2 over 20ms since the last "
                                             "warning)") == 1);
}

TEST_CASE_FIXTURE(deterministic,
                  "events: completed, retried, failed, worker restarted and "
                  "resized reach subscribers, each by its mask" *
                      doctest::timeout(30)) {
  auto job = [](int x) -> int {
    if (x == 0)
      throw pool::resource_broken("connection reset");
    if (x < 0)
      throw std::runtime_error("negative");
    return x * 2;
  };
  auto pool = pool::spawn_pool(sys, job,
                               pool::pool_options{}
                                   .workers(1)
                                   .max_attempts(2)
                                   .backoff(1s, 1s)
                                   .jitter(0)
                                   .log(pool::silent_log_hook()));
  REQUIRE(pool);
  auto all = std::make_shared<std::vector<pool::pool_event>>();
  auto outcomes = std::make_shared<std::vector<pool::pool_event>>();
  auto sub_all = collector(sys, all);
  auto sub_outcomes = collector(sys, outcomes);
  // (Every kind but `idle`, which tests/flow.cpp covers: it would come
  // between the others here.)
  subscribe(*this, *pool, sub_all,
            pool::event_mask::all & ~pool::event_bit(pool::event_kind::idle));
  subscribe(*this, *pool, sub_outcomes, pool::event_mask::outcomes);
  caf::anon_send(*pool, pool::submit_atom_v, 21);
  run();
  REQUIRE(all->size() == 1);
  CHECK(all->front().kind == pool::event_kind::completed);
  CHECK(all->front().result.get_as<int>(0) == 42);
  caf::anon_send(*pool, pool::submit_atom_v, -1);
  run();
  REQUIRE(all->size() == 2);
  CHECK(all->back().kind == pool::event_kind::retried);
  CHECK(all->back().attempt == 1);
  advance(1s);
  REQUIRE(all->size() == 3);
  CHECK(all->back().kind == pool::event_kind::failed);
  CHECK(pool::is(all->back().error, pool::pool_errc::operation_failed));
  caf::anon_send(*pool, pool::submit_atom_v, 0); // breaks the worker
  run();
  CHECK(count_kind(all, pool::event_kind::worker_restarted) == 1);
  CHECK(!ask(*pool, caf::make_message(pool::resize_atom_v, uint64_t{3})));
  REQUIRE(count_kind(all, pool::event_kind::resized) == 1);
  CHECK(all->back().count == 3);
  // The outcomes subscriber saw only completed and failed.
  REQUIRE(outcomes->size() == 2);
  CHECK(outcomes->at(0).kind == pool::event_kind::completed);
  CHECK(outcomes->at(1).kind == pool::event_kind::failed);
  // After unsubscribing, nothing more arrives.
  self->send(*pool, pool::unsubscribe_atom_v, sub_all);
  run();
  auto before = all->size();
  caf::anon_send(*pool, pool::submit_atom_v, 5);
  run();
  CHECK(all->size() == before);
  CHECK(outcomes->size() == 3);
}

TEST_CASE_FIXTURE(deterministic,
                  "bad subscriptions are refused with a clear error" *
                      doctest::timeout(30)) {
  auto pool = spawn(twice, 1);
  auto sub = collector(sys, std::make_shared<std::vector<pool::pool_event>>());
  auto err =
      ask(pool, caf::make_message(pool::subscribe_atom_v, sub, uint32_t{0}));
  CHECK(pool::is(err, pool::pool_errc::invalid_option));
  CHECK(pool::describe(err).find("mask") != std::string::npos);
  err = ask(pool,
            caf::make_message(pool::subscribe_atom_v, sub, uint32_t{1u << 9}));
  CHECK(pool::is(err, pool::pool_errc::invalid_option));
  err = ask(pool, caf::make_message(pool::subscribe_atom_v, caf::actor{}));
  CHECK(pool::is(err, pool::pool_errc::unexpected_message));
}

TEST_CASE_FIXTURE(deterministic, "a subscriber that terminates is forgotten" *
                                     doctest::timeout(30)) {
  auto pool = spawn(twice, 1);
  auto events = std::make_shared<std::vector<pool::pool_event>>();
  auto sub = collector(sys, events);
  subscribe(*this, pool, sub);
  caf::anon_send_exit(sub, caf::exit_reason::user_shutdown);
  run();
  sub = nullptr;
  self->send(pool, pool::submit_atom_v, 1);
  auto delivered = run();
  CHECK(events->empty());
  // No event message was sent to the dead subscriber.
  for (auto& ev : delivered)
    CHECK(!ev.content.match_element<pool::pool_event>(0));
}

TEST_CASE_FIXTURE(deterministic,
                  "autoscaling grows while the backlog persists, up to the "
                  "maximum, and shrinks idle workers to the minimum" *
                      doctest::timeout(30)) {
  auto pool = pool::spawn_pool(sys, twice,
                               pool::pool_options{}
                                   .autoscale(1, 4, 2s, 10s)
                                   .log(pool::silent_log_hook()));
  REQUIRE(pool);
  auto events = std::make_shared<std::vector<pool::pool_event>>();
  auto sub = collector(sys, events);
  subscribe(*this, *pool, sub, pool::event_bit(pool::event_kind::resized));
  run();
  CHECK(stats_of(*pool).configured == 1); // starts at the minimum
  frozen = "pool.worker";
  for (int i = 0; i < 10; ++i)
    self->send(*pool, pool::submit_atom_v, i);
  run();
  advance(1s);
  CHECK(stats_of(*pool).configured == 1);
  advance(1s);
  CHECK(stats_of(*pool).configured == 2); // doubled
  advance(2s);
  CHECK(stats_of(*pool).configured == 4);
  advance(2s);
  auto st = stats_of(*pool);
  CHECK(st.configured == 4); // the maximum
  check_invariant(st);
  frozen.clear();
  run();
  st = stats_of(*pool);
  CHECK(st.completed == 10);
  CHECK(st.sleeping == 4);
  advance(9s);
  CHECK(stats_of(*pool).configured == 4);
  advance(1s);
  st = stats_of(*pool);
  CHECK(st.configured == 1);
  CHECK(st.workers == 1);
  check_invariant(st);
  REQUIRE(events->size() == 3);
  CHECK(events->at(0).count == 2);
  CHECK(events->at(1).count == 4);
  CHECK(events->at(2).count == 1);
  // The pool still works at its minimum.
  auto answer = self->request(*pool, caf::infinite, pool::submit_atom_v, 4);
  run();
  answer.receive([](int y) { CHECK(y == 8); },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
}

TEST_CASE_FIXTURE(deterministic,
                  "resizing outside the autoscale limits is refused, pool "
                  "unchanged" *
                      doctest::timeout(30)) {
  auto pool = pool::spawn_pool(
      sys, twice, pool::pool_options{}.workers(3).autoscale(2, 5, 1s, 1min));
  REQUIRE(pool);
  run();
  auto err = ask(*pool, caf::make_message(pool::resize_atom_v, uint64_t{1}));
  CHECK(pool::is(err, pool::pool_errc::invalid_option));
  CHECK(pool::describe(err).find("autoscale.min") != std::string::npos);
  err = ask(*pool, caf::make_message(pool::resize_atom_v, uint64_t{6}));
  CHECK(pool::is(err, pool::pool_errc::invalid_option));
  CHECK(stats_of(*pool).configured == 3);
  CHECK(!ask(*pool, caf::make_message(pool::resize_atom_v, uint64_t{5})));
  CHECK(stats_of(*pool).configured == 5);
}

TEST_CASE_FIXTURE(deterministic,
                  "cancelling a running operation frees its room in a bounded "
                  "queue" *
                      doctest::timeout(30)) {
  auto pool =
      pool::spawn_pool(sys, twice, pool::pool_options{}.workers(1).capacity(1));
  REQUIRE(pool);
  run();
  frozen = "pool.worker"; // the local worker never asks: we take the work
  join_as_worker(*pool);
  auto id = self->request(*pool, caf::infinite, pool::enqueue_atom_v, 1);
  run();
  uint64_t first = 0;
  id.receive([&](uint64_t x) { first = x; },
             [](caf::error& err) { FAIL(pool::describe(err)); });
  auto work = take_work(*pool);
  CHECK(work.id.operation == first);
  REQUIRE(stats_of(*pool).busy == 1);
  auto cancelled =
      self->request(*pool, caf::infinite, pool::cancel_op_atom_v, first);
  run();
  self->receive([&](pool::op_failed_atom, uint64_t x, caf::error& err) {
    CHECK(x == first);
    CHECK(pool::is(err, pool::pool_errc::cancelled));
  });
  cancelled.receive([] {}, [](caf::error& err) { FAIL(pool::describe(err)); });
  // The queue is empty: a new operation fits.
  auto second = self->request(*pool, caf::infinite, pool::enqueue_atom_v, 2);
  run();
  second.receive([](uint64_t) {},
                 [](caf::error& err) { FAIL(pool::describe(err)); });
  CHECK(stats_of(*pool).rejected == 0);
  frozen.clear();
}

TEST_CASE("with pool::spdlog linked the default logging hook writes through "
          "spdlog's logger \"pool\"" *
          doctest::timeout(30)) {
  spdlog::drop("pool"); // made by the default hook in earlier tests
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  auto logger = std::make_shared<spdlog::logger>("pool", sink);
  spdlog::register_logger(logger);
  pool::pool_options{}.log()(pool::log_level::warning, "orders",
                             "overloaded: 401 operations waiting");
  spdlog::drop("pool");
  CHECK(out.str().find("[orders] overloaded: 401") != std::string::npos);
  CHECK(out.str().find("warning") != std::string::npos);
}

TEST_CASE("to_string(pool_event): a default event and one with an empty "
          "error read plainly" *
          doctest::timeout(10)) {
  CHECK(pool::to_string(pool::pool_event{}) ==
        "completed op#0 result=<empty-message>");
  pool::pool_event failed;
  failed.kind = pool::event_kind::failed;
  CHECK(pool::to_string(failed) == "failed op#0: none");
  failed.kind = pool::event_kind::retried;
  CHECK(pool::to_string(failed) == "retried op#0 after attempt 0: none");
}
