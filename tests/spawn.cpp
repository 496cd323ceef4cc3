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
  auto pool = pool::spawn_pool(
      sys, [](int x) { return x; }, pool::pool_options{}.workers(1));
  REQUIRE(pool);
  auto wide = pool::blocking_submit<int>(sys, *pool, 10s, int64_t{7});
  REQUIRE(!wide);
  CHECK(pool::is(wide.error(), pool::pool_errc::wrong_input_type));
  auto text = pool::describe(wide.error());
  CHECK(contains(text, "expected int32_t, got "));
  CHECK(contains(text, "(7): submit exactly the types the job takes"));
  caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
}
