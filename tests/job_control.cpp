// What a job can know and say about its operation: its context (id,
// attempt, deadline), discarding it, snoozing it. Plain units without an
// actor system first, then the pool's part on CAF's testing scheduler.
#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <vector>

#include "deterministic.hpp"

using namespace std::chrono_literals;
using pool::test::deterministic;
using pool::test::outcome_of;

namespace {

pool::work_record record_of(uint64_t op, uint32_t attempt,
                            caf::timespan budget) {
  pool::work_record x{pool::attempt_id{op, attempt}, caf::make_message(1)};
  x.budget = budget;
  return x;
}

} // namespace

TEST_CASE("current_job describes the attempt running on this thread only "
          "while it runs" *
          doctest::timeout(10)) {
  CHECK(pool::current_job() == nullptr);
  {
    auto before = std::chrono::steady_clock::now();
    pool::detail::job_scope outer{record_of(7, 2, 3s)};
    auto ctx = pool::current_job();
    REQUIRE(ctx != nullptr);
    CHECK(ctx->operation == 7);
    CHECK(ctx->attempt == 2);
    REQUIRE(ctx->deadline);
    CHECK(*ctx->deadline >= before + 3s);
    CHECK(*ctx->deadline <= std::chrono::steady_clock::now() + 3s);
    CHECK(*ctx->time_left() <= caf::timespan{3s});
    {
      pool::detail::job_scope inner{record_of(8, 1, 0s)};
      CHECK(pool::current_job()->operation == 8);
      CHECK(!pool::current_job()->deadline); // no timeout: no deadline
      CHECK(!pool::current_job()->time_left());
    }
    CHECK(pool::current_job()->operation == 7); // restored
  }
  CHECK(pool::current_job() == nullptr);
}

TEST_CASE("snooze and discard errors say what they carry, and bad snooze "
          "delays are ordinary failures" *
          doctest::timeout(10)) {
  auto s = pool::snooze(2s);
  CHECK(pool::is(s, pool::pool_errc::snoozed));
  CHECK(pool::snooze_delay(s) == caf::timespan{2s});
  CHECK(pool::describe(s).find("2s") != std::string::npos);
  CHECK(pool::snooze_delay(pool::snooze(0s)) == caf::timespan{0});
  for (auto bad : {caf::timespan{-1ms}, caf::timespan{std::chrono::hours{
                                            24 * 367}}}) {
    auto err = pool::snooze(bad);
    CHECK(pool::is(err, pool::pool_errc::invalid_delay));
    CHECK(!pool::snooze_delay(err));
  }
  // A forged snoozed error without a proper delay is not a snooze.
  CHECK(!pool::snooze_delay(
      caf::make_error(pool::pool_errc::snoozed, std::string{"soon"})));
  CHECK(!pool::snooze_delay(caf::make_error(pool::pool_errc::snoozed,
                                            caf::timespan{-5s})));
  auto d = pool::discard("bad input");
  CHECK(pool::is_discard(d));
  CHECK(pool::describe(d).find("bad input") != std::string::npos);
  CHECK(!pool::is_discard(s));
  CHECK(pool::snooze_job{1s}.delay() == caf::timespan{1s});
}

TEST_CASE_FIXTURE(deterministic,
                  "a job sees its operation id, attempt number and deadline" *
                      doctest::timeout(30)) {
  struct seen {
    uint64_t op = 0;
    uint32_t attempt = 0;
    bool deadline = false;
  };
  auto log = std::make_shared<std::vector<seen>>();
  auto job = [log](int x) -> caf::expected<int> {
    auto ctx = pool::current_job();
    REQUIRE(ctx != nullptr);
    log->push_back({ctx->operation, ctx->attempt, ctx->deadline.has_value()});
    if (ctx->attempt < 3)
      return caf::make_error(pool::pool_errc::job_failed, std::string{"no"});
    return x;
  };
  auto pool = spawn_with(job, pool::pool_options{}
                                  .workers(1)
                                  .max_attempts(3)
                                  .backoff(1s, 1s, 1.0)
                                  .jitter(0)
                                  .attempt_timeout(1min));
  run();
  uint64_t id = 0;
  auto enq = self->request(pool, caf::infinite, pool::enqueue_atom_v, 5);
  run();
  enq.receive([&](uint64_t x) { id = x; }, [](caf::error&) {});
  REQUIRE(id != 0);
  advance(1s);
  advance(1s);
  self->receive([&](pool::op_done_atom, uint64_t x, caf::message& result) {
    CHECK(x == id);
    CHECK(result.get_as<int>(0) == 5);
  });
  REQUIRE(log->size() == 3);
  for (uint32_t i = 0; i < 3; ++i) {
    CHECK((*log)[i].op == id);
    CHECK((*log)[i].attempt == i + 1);
    CHECK((*log)[i].deadline);
  }
  // Without a timeout there is no deadline.
  auto plain = spawn(
      [](int) { return pool::current_job()->deadline.has_value() ? 1 : 0; },
      1);
  run();
  self->send(plain, pool::submit_atom_v, 0);
  run();
  CHECK(outcome_of(*this) == 0);
}

TEST_CASE_FIXTURE(deterministic,
                  "a discarded operation fails at once with its history, "
                  "whatever attempts were left" *
                      doctest::timeout(30)) {
  auto runs = std::make_shared<int>(0);
  auto job = [runs](int x) -> int {
    ++*runs;
    if (x < 0)
      throw pool::discard_job("negative input");
    return x;
  };
  auto pool = spawn_with(job, pool::pool_options{}.workers(1).max_attempts(5));
  run();
  self->send(pool, pool::submit_atom_v, -1);
  run();
  auto res = outcome_of(*this);
  REQUIRE(!res);
  CHECK(pool::is(res.error(), pool::pool_errc::operation_failed));
  auto history = pool::attempt_history(res.error());
  REQUIRE(history.size() == 1);
  CHECK(pool::is(history[0].reason, pool::pool_errc::discarded));
  CHECK(pool::describe(history[0].reason).find("negative input") !=
        std::string::npos);
  CHECK(*runs == 1);
  auto st = stats_of(pool);
  CHECK(st.retried == 0);
  CHECK(st.failed == 1);
  // The same from a job returning caf::expected.
  auto quiet = spawn_with(
      [](int) -> caf::expected<int> { return pool::discard("no"); },
      pool::pool_options{}.workers(1).max_attempts(3));
  run();
  self->send(quiet, pool::submit_atom_v, 1);
  run();
  auto res2 = outcome_of(*this);
  REQUIRE(!res2);
  CHECK(pool::attempt_history(res2.error()).size() == 1);
}

TEST_CASE_FIXTURE(deterministic,
                  "a snoozed operation runs again after the delay, using up "
                  "no attempt and leaving the backoff as it was" *
                      doctest::timeout(30)) {
  // Each operation snoozes twice (10 s), then fails twice, then succeeds:
  // with max_attempts 3 it succeeds on its fifth run. Backoff: 100 s,
  // then 200 s (a snooze that counted would make the first one 400 s).
  auto runs = std::make_shared<int>(0);
  auto job = [runs](int x) -> int {
    ++*runs;
    if (*runs <= 2)
      throw pool::snooze_job{10s};
    if (*runs <= 4)
      throw std::runtime_error("flaky");
    return x;
  };
  auto pool = spawn_with(job, pool::pool_options{}
                                  .workers(1)
                                  .max_attempts(3)
                                  .backoff(100s, 1h, 2.0)
                                  .jitter(0));
  run();
  self->send(pool, pool::submit_atom_v, 9);
  run();
  CHECK(*runs == 1);
  advance(9s);
  CHECK(*runs == 1); // not before the snooze ends
  advance(1s);
  CHECK(*runs == 2);
  advance(10s);
  CHECK(*runs == 3); // first real failure: backoff 100 s
  advance(99s);
  CHECK(*runs == 3);
  advance(1s);
  CHECK(*runs == 4); // second failure: backoff 200 s
  advance(199s);
  CHECK(*runs == 4);
  advance(1s);
  CHECK(*runs == 5);
  CHECK(outcome_of(*this) == 9);
  auto st = stats_of(pool);
  CHECK(st.snoozed == 2);
  CHECK(st.retried == 2);
}

TEST_CASE("snooze_delay: an empty error is no snooze" * doctest::timeout(10)) {
  CHECK_FALSE(pool::snooze_delay(caf::error{}));
  CHECK(pool::snooze_delay(pool::snooze(5ms)) == caf::timespan{5ms});
}

TEST_CASE("is_discard: an empty error is no discard, an empty reason is one" *
          doctest::timeout(10)) {
  CHECK_FALSE(pool::is_discard(caf::error{}));
  CHECK(pool::is_discard(pool::discard("")));
}

TEST_CASE_FIXTURE(deterministic,
                  "a job that enforces its own deadline counts its timeouts "
                  "once registered, and other failures not" *
                      doctest::timeout(30)) {
  auto mine = caf::atom("owndead");
  auto job = [mine](int x) -> caf::expected<int> {
    return caf::error{static_cast<uint8_t>(x), mine, caf::message{}};
  };
  auto p = spawn_with(job, pool::pool_options{}.workers(1).max_attempts(1));
  run();
  self->send(p, pool::submit_atom_v, 7);
  run();
  CHECK(!outcome_of(*this));
  CHECK(stats_of(p).timed_out == 0); // not registered yet
  pool::count_as_timeout(mine, 7);
  // The pool's own category is never counted this way (the shepherd counts
  // its own timeouts where they happen).
  pool::count_as_timeout(pool::pool_error_category,
                         static_cast<uint8_t>(pool::pool_errc::timed_out));
  CHECK_FALSE(pool::counts_as_timeout(
      caf::make_error(pool::pool_errc::timed_out, std::string{"1s"})));
  CHECK_FALSE(pool::counts_as_timeout(caf::error{}));
  self->send(p, pool::submit_atom_v, 7);
  self->send(p, pool::submit_atom_v, 8);
  run();
  CHECK(!outcome_of(*this));
  CHECK(!outcome_of(*this));
  auto st = stats_of(p);
  CHECK(st.timed_out == 1);
  CHECK(st.failed == 3);
}
