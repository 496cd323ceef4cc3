// The spawn façade and the submit helpers: void jobs, a result type other
// than the job's, an input the pool does not take. (Jobs without one fixed
// signature are refused at compile time: tests/compile_fail/.)
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <string>

#include <caf/all.hpp>

#include "pool/all.hpp"
#include "real_system.hpp"

using namespace std::chrono_literals;

namespace {

using config = pool::test::real_config;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// A pool of one worker whose job returns its `int` input.
caf::actor echo_pool(caf::actor_system& sys) {
  auto pool = pool::spawn_pool(
      sys, [](int x) { return x; }, pool::pool_options{}.workers(1));
  REQUIRE(pool);
  return *pool;
}

} // namespace

TEST_CASE("a void job runs for blocking_submit<void>, submit_future<void> "
          "and a request answered with caf::unit_t" *
          doctest::timeout(30)) {
  config cfg;
  caf::actor_system sys{cfg};
  std::atomic<int> sum{0};
  auto pool = pool::spawn_pool(
      sys, [&sum](int x) { sum += x; }, pool::pool_options{}.workers(2));
  REQUIRE(pool);
  auto blocking = pool::blocking_submit<void>(sys, *pool, 10s, 1);
  CHECK_MESSAGE(blocking, pool::describe(blocking.error()));
  auto future = pool::submit_future<void>(sys, *pool, 2);
  REQUIRE(future.wait_for(10s) == std::future_status::ready);
  auto later = future.get();
  CHECK_MESSAGE(later, pool::describe(later.error()));
  caf::scoped_actor self{sys};
  bool answered = false;
  self->request(*pool, 10s, pool::submit_atom_v, 4)
      .receive([&](caf::unit_t) { answered = true; },
               [](caf::error& err) { FAIL(pool::describe(err)); });
  CHECK(answered);
  CHECK(sum == 7);
  caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
}

TEST_CASE("asking for another result type than the job's names both types" *
          doctest::timeout(30)) {
  config cfg;
  caf::actor_system sys{cfg};
  auto square = pool::spawn_pool(
      sys, [](int x) { return x * x; }, pool::pool_options{}.workers(1));
  auto nothing = pool::spawn_pool(
      sys, [](int) {}, pool::pool_options{}.workers(1));
  REQUIRE(square);
  REQUIRE(nothing);
  auto text = pool::blocking_submit<std::string>(sys, *square, 10s, 7);
  REQUIRE(!text);
  CHECK(pool::is(text.error(), pool::pool_errc::wrong_result_type));
  CHECK(pool::describe(text.error()) ==
        "pool.wrong_result_type: blocking_submit<std::string> expects "
        "std::string, but the pool replied int32_t (49): use the job's "
        "result type as the template argument (void for a job that returns "
        "nothing)");
  auto future = pool::submit_future<void>(sys, *square, 8);
  REQUIRE(future.wait_for(10s) == std::future_status::ready);
  auto none = future.get();
  REQUIRE(!none);
  CHECK(contains(pool::describe(none.error()),
                 "submit_future<void> expects no value, but the pool replied "
                 "int32_t (64)"));
  auto number = pool::blocking_submit<int>(sys, *nothing, 10s, 1);
  REQUIRE(!number);
  CHECK(contains(pool::describe(number.error()),
                 "expects int32_t, but the pool replied no value (the job "
                 "returns void)"));
  // The job's own errors pass unchanged.
  auto down = pool::blocking_submit<int>(sys, *square, 10s, std::string{"x"});
  REQUIRE(!down);
  CHECK(pool::is(down.error(), pool::pool_errc::wrong_input_type));
  caf::anon_send_exit(*square, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(*nothing, caf::exit_reason::user_shutdown);
}

TEST_CASE("a submit of another input type than the job's names the type the "
          "pool takes and what it got" *
          doctest::timeout(30)) {
  config cfg;
  caf::actor_system sys{cfg};
  auto pool = echo_pool(sys);
  auto wide = pool::blocking_submit<int>(sys, pool, 10s, int64_t{7});
  REQUIRE(!wide);
  CHECK(pool::is(wide.error(), pool::pool_errc::wrong_input_type));
  auto text = pool::describe(wide.error());
  CHECK(contains(text, "expected int32_t, got "));
  CHECK(contains(text, "(7): submit exactly the types the job takes"));
  caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
}

// -- empty values: null handles and stores answer at once, with an error.

TEST_CASE("spawn_pool: a null store is refused naming the field" *
          doctest::timeout(30)) {
  config cfg;
  caf::actor_system sys{cfg};
  auto pool = pool::spawn_pool(
      sys, [](int x) { return x; }, pool::pool_options{}, nullptr);
  REQUIRE_FALSE(pool);
  CHECK(pool::describe(pool.error()) ==
        "pool.invalid_option: store: must not be null");
}

TEST_CASE("spawn_resource_pool: a null store is refused naming the field" *
          doctest::timeout(30)) {
  config cfg;
  caf::actor_system sys{cfg};
  auto pool = pool::spawn_resource_pool(
      sys, [] { return 1; }, [](int& r, int x) { return r + x; },
      pool::pool_options{}, nullptr);
  REQUIRE_FALSE(pool);
  CHECK(pool::describe(pool.error()) ==
        "pool.invalid_option: store: must not be null");
}

TEST_CASE("blocking_submit: a null pool handle answers an error at once" *
          doctest::timeout(30)) {
  config cfg;
  caf::actor_system sys{cfg};
  auto t0 = std::chrono::steady_clock::now();
  auto res = pool::blocking_submit<int>(sys, caf::actor{}, 20s, 1);
  REQUIRE_FALSE(res);
  CHECK(res.error() == caf::sec::invalid_argument);
  CHECK(std::chrono::steady_clock::now() - t0 < 10s);
}

TEST_CASE("submit_future: a null pool handle satisfies the future with an "
          "error" *
          doctest::timeout(30)) {
  config cfg;
  caf::actor_system sys{cfg};
  auto future = pool::submit_future<int>(sys, caf::actor{}, 1);
  REQUIRE(future.wait_for(10s) == std::future_status::ready);
  auto res = future.get();
  REQUIRE_FALSE(res);
  CHECK(res.error() == caf::sec::invalid_argument);
}

TEST_CASE("an empty message, or a submit without input, is refused with "
          "what the pool takes" *
          doctest::timeout(30)) {
  config cfg;
  caf::actor_system sys{cfg};
  auto pool = echo_pool(sys);
  caf::scoped_actor self{sys};
  std::string empty;
  self->request(pool, 10s, caf::message{})
      .receive([&](caf::message&) { empty = "a reply"; },
               [&](caf::error& err) { empty = pool::describe(err); });
  CHECK(empty == "pool.unexpected_message: ()");
  auto bare = pool::blocking_submit<int>(sys, pool, 10s);
  REQUIRE_FALSE(bare);
  CHECK(
      contains(pool::describe(bare.error()), "expected int32_t, got no value"));
  caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
}

TEST_CASE("a job returning an empty error fails its attempt, and the pool "
          "lives on" *
          doctest::timeout(30)) {
  config cfg;
  caf::actor_system sys{cfg};
  auto pool = pool::spawn_pool(
      sys,
      [](int x) -> caf::expected<int> {
        if (x < 0)
          return caf::error{};
        return x;
      },
      pool::pool_options{}.workers(1));
  REQUIRE(pool);
  auto res = pool::blocking_submit<int>(sys, *pool, 10s, -1);
  REQUIRE_FALSE(res);
  CHECK(pool::is(res.error(), pool::pool_errc::operation_failed));
  auto history = pool::attempt_history(res.error());
  REQUIRE(history.size() == 1);
  CHECK(pool::is(history.front().reason, pool::pool_errc::job_failed));
  CHECK(pool::describe(history.front().reason).find("empty caf::error") !=
        std::string::npos);
  auto next = pool::blocking_submit<int>(sys, *pool, 10s, 2);
  REQUIRE(next);
  CHECK(*next == 2);
  caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
}
