// Options per submit (`sub_with`, `enq_with`) through a real pool on CAF's
// testing scheduler: priority, max attempts, attempt timeout, delay,
// unique key and concurrency key override the pool's defaults for one
// operation; bad options are refused naming the field, and nothing
// accepted is lost.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "deterministic.hpp"

using namespace std::chrono_literals;
using pool::job_options;
using pool::test::deterministic;

using pool::test::outcome_of;

TEST_CASE_FIXTURE(deterministic,
                  "sub_with: higher priorities run first, FIFO within one, "
                  "and concurrency keys take turns" *
                      doctest::timeout(30)) {
  auto order = std::make_shared<std::vector<int>>();
  auto pool = spawn_with(
      [order](int x) {
        order->push_back(x);
        return x;
      },
      pool::pool_options{}.workers(1));
  run();
  CHECK(!ask(pool, caf::make_message(pool::pause_atom_v)));
  auto with = [&](int x, job_options opts) {
    self->send(pool, pool::submit_with_atom_v, std::move(opts), x);
  };
  with(1, job_options{});
  with(2, job_options{}.priority(5));
  with(3, job_options{}.priority(1));
  with(4, job_options{}.priority(5));
  // Priority 9: three of key a, then one of key b.
  with(5, job_options{}.priority(9).concurrency_key("a"));
  with(6, job_options{}.priority(9).concurrency_key("a"));
  with(7, job_options{}.priority(9).concurrency_key("a"));
  with(8, job_options{}.priority(9).concurrency_key("b"));
  run();
  CHECK(order->empty());
  CHECK(!ask(pool, caf::make_message(pool::resume_atom_v)));
  run();
  CHECK(*order == std::vector<int>{5, 8, 6, 7, 2, 4, 3, 1});
  for (int i = 0; i < 8; ++i)
    CHECK(outcome_of(*this));
}

TEST_CASE_FIXTURE(deterministic,
                  "sub_with: max attempts, attempt timeout and delay of one "
                  "operation override the pool's" *
                      doctest::timeout(30)) {
  auto runs = std::make_shared<int>(0);
  auto pool = spawn_with(
      [runs](int x) -> caf::expected<int> {
        ++*runs;
        if (x < 0)
          return caf::make_error(pool::pool_errc::job_failed,
                                 std::string{"no"});
        return x;
      },
      pool::pool_options{}.workers(1).max_attempts(1).backoff(1s, 1s, 1.0)
          .jitter(0));
  run();
  // The pool allows one attempt; this operation four.
  self->send(pool, pool::submit_with_atom_v, job_options{}.max_attempts(4),
             -1);
  run();
  for (int i = 0; i < 3; ++i)
    advance(1s);
  auto failed = outcome_of(*this);
  REQUIRE(!failed);
  CHECK(pool::attempt_history(failed.error()).size() == 4);
  CHECK(*runs == 4);
  // A delay of one minute: not a second earlier.
  self->send(pool, pool::submit_with_atom_v, job_options{}.delay(1min), 3);
  run();
  advance(59s);
  CHECK(*runs == 4);
  advance(1s);
  CHECK(*runs == 5);
  CHECK(outcome_of(*this) == 3);
  // The job sees the operation's own timeout as its budget.
  auto budget = std::make_shared<bool>(false);
  auto timed = spawn_with(
      [budget](int x) {
        *budget = pool::current_job()->deadline.has_value();
        return x;
      },
      pool::pool_options{}.workers(1));
  run();
  self->send(timed, pool::submit_with_atom_v,
             job_options{}.attempt_timeout(5s), 1);
  run();
  CHECK(outcome_of(*this) == 1);
  CHECK(*budget);
}

TEST_CASE_FIXTURE(deterministic,
                  "a stuck attempt times out after the operation's own "
                  "timeout when the pool has none" *
                      doctest::timeout(30)) {
  auto pool = spawn_with([](int x) { return x; },
                         pool::pool_options{}.workers(1));
  run();
  frozen = "pool.worker"; // the worker never answers
  self->send(pool, pool::submit_with_atom_v,
             job_options{}.attempt_timeout(2s).max_attempts(1), 1);
  run();
  advance(1s);
  CHECK(stats_of(pool).timed_out == 0);
  frozen.clear();
  advance(1s);
  auto res = outcome_of(*this);
  REQUIRE(!res);
  auto history = pool::attempt_history(res.error());
  REQUIRE(history.size() == 1);
  CHECK(pool::is(history[0].reason, pool::pool_errc::timed_out));
  CHECK(pool::describe(history[0].reason).find("2s") != std::string::npos);
}

TEST_CASE_FIXTURE(deterministic,
                  "enq_with a unique key answers the id of the operation "
                  "there already, and bad options are refused naming the field" *
                      doctest::timeout(30)) {
  auto pool = spawn_with([](int x) { return x; },
                         pool::pool_options{}.workers(1));
  run();
  CHECK(!ask(pool, caf::make_message(pool::pause_atom_v)));
  auto enq = [&](job_options opts) {
    uint64_t id = 0;
    auto r = self->request(pool, caf::infinite, pool::enqueue_with_atom_v,
                           std::move(opts), 1);
    run();
    r.receive([&](uint64_t x) { id = x; },
              [](caf::error& err) { FAIL(pool::describe(err)); });
    return id;
  };
  auto first = enq(job_options{}.unique_key("report-7").priority(3));
  CHECK(first != 0);
  CHECK(enq(job_options{}.unique_key("report-7")) == first);
  CHECK(enq(job_options{}) != first);
  auto refused = [&](caf::message msg, const std::string& field) {
    auto err = ask(pool, std::move(msg));
    REQUIRE(pool::is(err, pool::pool_errc::invalid_option));
    CHECK(err.context().get_as<std::string>(0) == field);
  };
  refused(caf::make_message(pool::submit_with_atom_v,
                            job_options{}.priority(-2), 1),
          "priority");
  refused(caf::make_message(pool::enqueue_with_atom_v,
                            job_options{}.delay(-1s), 1),
          "delay");
  refused(caf::make_message(pool::submit_with_atom_v,
                            job_options{}.unique_key("k"), 1),
          "unique_key");
  // Nothing accepted is lost: both enqueued operations run.
  CHECK(!ask(pool, caf::make_message(pool::resume_atom_v)));
  run();
  CHECK(stats_of(pool).completed == 2);
}
