// Reasons and causes reach the caller, on CAF's testing scheduler: the
// termination reason for enqueue callers, a resource factory that throws,
// attempt timeouts against the restart intensity, and a joined worker's
// result of the wrong type.
#include <doctest/doctest.h>

#include <stdexcept>

#include "deterministic.hpp"

using namespace std::chrono_literals;
using pool::test::deterministic;

namespace {

auto breaks_on_negative = [](int x) {
  if (x < 0)
    throw pool::resource_broken("connection reset");
  return x;
};

/// Collects a pool's log lines.
struct log_lines {
  std::shared_ptr<std::vector<std::string>> lines =
      std::make_shared<std::vector<std::string>>();

  pool::log_hook hook() const {
    return [out = lines](pool::log_level, const std::string&,
                         const std::string& text) { out->push_back(text); };
  }

  size_t count(const std::string& part) const {
    size_t n = 0;
    for (auto& x : *lines)
      n += x.find(part) != std::string::npos ? 1 : 0;
    return n;
  }
};

bool mentions(const caf::error& err, const std::string& part) {
  return pool::describe(err).find(part) != std::string::npos;
}

} // namespace

TEST_CASE_FIXTURE(deterministic,
                  "an enqueue caller gets the real termination reason, as a "
                  "submit caller does" *
                      doctest::timeout(30)) {
  auto pool = pool::spawn_pool(sys, breaks_on_negative,
                               pool::pool_options{}
                                   .workers(1)
                                   .max_attempts(5)
                                   .backoff(0s, 0s)
                                   .restart_intensity(2, 10s));
  REQUIRE(pool);
  run();
  // A submit caller waits on a delayed operation meanwhile.
  auto pending = self->request(*pool, caf::infinite, pool::submit_after_atom_v,
                               caf::timespan{1h}, 5);
  // Each attempt of -1 breaks its worker: the third restart is one too many.
  self->send(*pool, pool::enqueue_atom_v, -1);
  run();
  uint64_t id = 0;
  self->receive([&](uint64_t x) { id = x; });
  caf::error enqueued;
  self->receive([&](pool::op_failed_atom, uint64_t x, caf::error& err) {
    CHECK(x == id);
    enqueued = std::move(err);
  });
  CHECK(pool::is(enqueued, pool::pool_errc::pool_terminated));
  CHECK(mentions(enqueued, "restart_intensity"));
  CHECK(mentions(enqueued, "connection reset"));
  pending.receive([](int) { FAIL("delivered"); },
                  [&](caf::error& err) {
                    CHECK(pool::describe(err) == pool::describe(enqueued));
                  });
}

TEST_CASE_FIXTURE(deterministic,
                  "a resource factory that throws: its cause is logged once "
                  "per failure and reaches the callers, and the restart "
                  "intensity ends the pool" *
                      doctest::timeout(30)) {
  log_lines logs;
  auto make = []() -> int { throw std::runtime_error("database is down"); };
  auto job = [](int& conn, int x) { return conn + x; };
  auto pool = pool::spawn_resource_pool(
      sys, make, job,
      pool::pool_options{}.workers(1).restart_intensity(2, 10s).log(
          logs.hook()));
  REQUIRE(pool);
  self->monitor(*pool);
  auto answer = self->request(*pool, caf::infinite, pool::submit_atom_v, 1);
  run();
  caf::error exit_reason;
  self->receive([&](caf::down_msg& msg) { exit_reason = msg.reason; });
  CHECK(pool::is(exit_reason, pool::pool_errc::restart_intensity));
  CHECK(mentions(exit_reason, "the resource factory threw: database is down"));
  answer.receive([](int) { FAIL("delivered"); },
                 [](caf::error& err) {
                   // Its one attempt went to a worker whose factory threw.
                   CHECK(pool::is(err, pool::pool_errc::operation_failed));
                   CHECK(mentions(err, "database is down"));
                 });
  // The first worker and two replacements failed: one line each, then the
  // line that gives up.
  CHECK(logs.count("worker stopped: ") == 3);
  CHECK(logs.count("worker stopped: pool.resource_broken: the resource "
                   "factory threw: database is down") == 3);
  CHECK(logs.count("giving up") == 1);
}

TEST_CASE_FIXTURE(deterministic,
                  "attempt timeouts do not count as restarts: three stuck "
                  "operations with 5 attempts and a 1 s timeout fail, the "
                  "pool lives" *
                      doctest::timeout(30)) {
  // The pool's own workers are frozen (stuck in a job) the whole time.
  auto pool = pool::spawn_pool(
      sys, [](int x) { return x; },
      pool::pool_options{}
          .workers(2)
          .max_attempts(5)
          .backoff(0s, 0s)
          .attempt_timeout(1s)
          .restart_intensity(2, 10s));
  REQUIRE(pool);
  run();
  frozen = "pool.worker";
  frozen_work_only = true; // (replacements wake and ask, then stick too)
  for (int i = 0; i < 3; ++i)
    self->send(*pool, pool::enqueue_atom_v, i);
  run();
  for (int i = 0; i < 3; ++i)
    self->receive([](uint64_t) {});
  // Every second, each stuck attempt times out; its worker is killed and
  // replaced: 5 attempts x 3 operations = 15 timeouts within 6 s.
  for (int s = 0; s < 10; ++s)
    advance(1s);
  frozen.clear();
  run();
  size_t failed = 0;
  for (int i = 0; i < 3; ++i)
    self->receive([&](pool::op_failed_atom, uint64_t, caf::error& err) {
      CHECK(pool::is(err, pool::pool_errc::operation_failed));
      CHECK(mentions(err, "timed_out"));
      ++failed;
    });
  CHECK(failed == 3);
  auto st = stats_of(*pool); // answered: the pool is alive
  CHECK(st.timed_out == 15);
  CHECK(st.failed == 3);
  CHECK(st.workers == 2);
  // And it still works.
  auto answer = self->request(*pool, caf::infinite, pool::submit_atom_v, 7);
  run();
  answer.receive([](int y) { CHECK(y == 7); },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
}

TEST_CASE_FIXTURE(deterministic,
                  "a joined worker's result of the wrong type fails the "
                  "attempt: the caller gets the failure, never the value" *
                      doctest::timeout(30)) {
  auto pool = pool::spawn_pool(sys, [](int x) { return x * 2; },
                               pool::pool_options{}.workers(1));
  REQUIRE(pool);
  join_as_worker(*pool); // the scoped actor: woken first
  auto answer = self->request(*pool, caf::infinite, pool::submit_atom_v, 4);
  run();
  auto held = take_work(*pool);
  self->send(*pool, pool::status_reply_atom_v, held.id,
             caf::make_message(std::string{"eight"}));
  run();
  answer.receive([](int) { FAIL("a value was delivered"); },
                 [](caf::error& err) {
                   CHECK(pool::is(err, pool::pool_errc::operation_failed));
                   CHECK(mentions(err, "wrong_result_type"));
                   CHECK(mentions(err, "int32_t"));
                 });
  auto st = stats_of(*pool);
  CHECK(st.failed == 1);
  CHECK(st.completed == 0);
}
