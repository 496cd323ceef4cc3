// The typed façade: a pool handle whose type is the job's signature
// (`pool::typed_pool<Out(In...)>`), typed outcome messages for `enq_typed`,
// and the blocking helpers deducing the result type from the handle. The
// mistakes it turns into compile errors are in tests/compile_fail.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "deterministic.hpp"
#include "real_system.hpp"

using namespace std::chrono_literals;
using pool::job_options;
using pool::test::deterministic;

namespace {

/// A job that fails for negative inputs.
caf::expected<int32_t> halve(int32_t x) {
  if (x < 0)
    return caf::make_error(pool::pool_errc::job_failed,
                           std::string{"negative"});
  return x / 2;
}

using halving_pool = pool::typed_pool<int32_t(int32_t)>;

} // namespace

// The handle's type follows from the job: this does not compile when it
// does not.
static_assert(
    std::is_same_v<decltype(pool::spawn_typed_pool(
                       std::declval<caf::actor_system&>(), halve))::value_type,
                   halving_pool>);
int make_seat();
void use_seat(int&, std::string, int64_t);
static_assert(std::is_same_v<decltype(pool::spawn_typed_resource_pool(
                                 std::declval<caf::actor_system&>(),
                                 make_seat, use_seat))::value_type,
                             pool::typed_pool<void(std::string, int64_t)>>);

TEST_CASE_FIXTURE(deterministic,
                  "a typed pool answers submits with Out and sends typed "
                  "outcomes for enq_typed" *
                      doctest::timeout(30)) {
  auto spawned = pool::spawn_typed_pool(
      sys, halve, pool::pool_options{}.workers(2).max_attempts(1));
  REQUIRE_MESSAGE(spawned, caf::to_string(spawned.error()));
  halving_pool pool = *spawned;
  run();
  auto results = std::make_shared<std::vector<std::string>>();
  // An actor using the handle as a caller would: every handler's types
  // are checked against the job's signature at compile time.
  sys.spawn([pool, results](caf::event_based_actor* self) -> caf::behavior {
    auto note = [results](std::string x) { results->push_back(std::move(x)); };
    self->request(pool, 10s, pool::submit_atom_v, int32_t{84})
        .then([note](int32_t y) { note("submit " + std::to_string(y)); });
    self->request(pool, 10s, pool::submit_with_atom_v,
                  job_options{}.priority(3), int32_t{10})
        .then([note](int32_t y) { note("sub_with " + std::to_string(y)); });
    self->request(pool, 10s, pool::enqueue_typed_atom_v, int32_t{8})
        .then([note](uint64_t id) { note("id " + std::to_string(id)); });
    self->request(pool, 10s, pool::enqueue_typed_atom_v,
                  job_options{}.max_attempts(2), int32_t{-1})
        .then([note](uint64_t id) { note("id " + std::to_string(id)); });
    return {
      [note](pool::op_result_atom, uint64_t id, int32_t y) {
        note("result " + std::to_string(id) + " " + std::to_string(y));
      },
      [note](pool::op_failed_atom, uint64_t id, caf::error& err) {
        note("failed " + std::to_string(id) + " "
             + std::to_string(pool::attempt_history(err).size()));
      },
    };
  });
  run();
  for (int i = 0; i < 5; ++i)
    advance(1min); // the failing operation's retry
  std::sort(results->begin(), results->end());
  CHECK(*results
        == std::vector<std::string>{"failed 4 2", "id 3", "id 4",
                                    "result 3 4", "sub_with 5",
                                    "submit 42"});
  // The untyped handle still speaks the rest of the protocol.
  CHECK(stats_of(pool::untyped(pool)).completed == 3);
}

TEST_CASE_FIXTURE(deterministic,
                  "enq_typed of a void job sends op_result with unit_t, and "
                  "plain enqueue still sends op_done" *
                      doctest::timeout(30)) {
  auto seen = std::make_shared<std::vector<std::string>>();
  auto spawned = pool::spawn_typed_pool(
      sys, [seen](std::string x) { seen->push_back(std::move(x)); },
      pool::pool_options{}.workers(1));
  REQUIRE(spawned);
  auto pool = *spawned;
  run();
  self->send(pool, pool::enqueue_typed_atom_v, std::string{"typed"});
  self->send(pool::untyped(pool), pool::enqueue_atom_v, std::string{"plain"});
  run();
  std::vector<std::string> outcomes;
  for (int i = 0; i < 4; ++i)
    self->receive([&](uint64_t) { outcomes.emplace_back("id"); },
                  [&](pool::op_result_atom, uint64_t, caf::unit_t) {
                    outcomes.emplace_back("op_result");
                  },
                  [&](pool::op_done_atom, uint64_t, caf::message& m) {
                    outcomes.emplace_back("op_done " + caf::to_string(m));
                  });
  CHECK(outcomes
        == std::vector<std::string>{"id", "id", "op_result",
                                    "op_done (unit)"});
  CHECK(*seen == std::vector<std::string>{"typed", "plain"});
}

TEST_CASE_FIXTURE(deterministic,
                  "enq_typed with bad options is refused naming the field, "
                  "and a unique key answers the first operation's id" *
                      doctest::timeout(30)) {
  auto pool = *pool::spawn_typed_pool(sys, halve);
  run();
  auto refused = ask(pool::untyped(pool),
                     caf::make_message(pool::enqueue_typed_atom_v,
                                       job_options{}.priority(-1), 1));
  CHECK(pool::is(refused, pool::pool_errc::invalid_option));
  CHECK(caf::to_string(refused).find("priority") != std::string::npos);
  CHECK(!ask(pool::untyped(pool), caf::make_message(pool::pause_atom_v)));
  self->send(pool, pool::enqueue_typed_atom_v, job_options{}.unique_key("k"),
             int32_t{2});
  self->send(pool, pool::enqueue_typed_atom_v, job_options{}.unique_key("k"),
             int32_t{4});
  run();
  std::vector<uint64_t> ids;
  for (int i = 0; i < 2; ++i)
    self->receive([&](uint64_t id) { ids.push_back(id); });
  CHECK(ids[0] == ids[1]);
  CHECK(!ask(pool::untyped(pool), caf::make_message(pool::resume_atom_v)));
  run();
  self->receive([&](pool::op_result_atom, uint64_t id, int32_t y) {
    CHECK(id == ids[0]);
    CHECK(y == 1);
  });
  CHECK(stats_of(pool::untyped(pool)).completed == 1);
}

TEST_CASE("blocking_submit and submit_future take their result type from a "
          "typed handle" *
          doctest::timeout(60)) {
  pool::test::real_config cfg;
  caf::actor_system sys{cfg};
  auto pool = *pool::spawn_typed_pool(sys, halve,
                                      pool::pool_options{}.max_attempts(1));
  auto half = pool::blocking_submit(sys, pool, 10s, int32_t{10});
  static_assert(std::is_same_v<decltype(half), caf::expected<int32_t>>);
  REQUIRE(half);
  CHECK(*half == 5);
  auto failed = pool::blocking_submit(sys, pool, 10s, int32_t{-2});
  CHECK(pool::is(failed.error(), pool::pool_errc::operation_failed));
  auto later = pool::submit_future(sys, pool, int32_t{7});
  static_assert(
      std::is_same_v<decltype(later), std::future<caf::expected<int32_t>>>);
  REQUIRE(later.wait_for(10s) == std::future_status::ready);
  CHECK(*later.get() == 3);
  // A resource pool: the handle's signature is the job's without the
  // resource; a void job gives expected<void>.
  auto seats = std::make_shared<std::vector<std::string>>();
  auto licensed = *pool::spawn_typed_resource_pool(
      sys, [] { return std::string{"seat"}; },
      [seats](std::string& seat, std::string who) {
        seats->push_back(seat + ":" + who);
      },
      pool::pool_options{}.workers(1));
  auto done = pool::blocking_submit(sys, licensed, 10s, std::string{"ann"});
  static_assert(std::is_same_v<decltype(done), caf::expected<void>>);
  CHECK(done);
  CHECK(*seats == std::vector<std::string>{"seat:ann"});
  caf::anon_send_exit(pool::untyped(pool), caf::exit_reason::user_shutdown);
  caf::anon_send_exit(pool::untyped(licensed), caf::exit_reason::user_shutdown);
}

TEST_CASE("untyped and blocking_submit: a null typed handle is a null actor "
          "and answers an error at once" *
          doctest::timeout(30)) {
  pool::test::real_config cfg;
  caf::actor_system sys{cfg};
  halving_pool none;
  CHECK_FALSE(pool::untyped(none));
  auto res = pool::blocking_submit(sys, none, 20s, int32_t{4});
  REQUIRE_FALSE(res);
  CHECK(res.error() == caf::sec::invalid_argument);
}

TEST_CASE("submit_future: a null typed handle satisfies the future with an "
          "error" *
          doctest::timeout(30)) {
  pool::test::real_config cfg;
  caf::actor_system sys{cfg};
  auto future = pool::submit_future(sys, halving_pool{}, int32_t{4});
  REQUIRE(future.wait_for(10s) == std::future_status::ready);
  auto res = future.get();
  REQUIRE_FALSE(res);
  CHECK(res.error() == caf::sec::invalid_argument);
}

TEST_CASE("spawn_typed_pool: a null store is refused naming the field" *
          doctest::timeout(30)) {
  pool::test::real_config cfg;
  caf::actor_system sys{cfg};
  auto pool =
      pool::spawn_typed_pool(sys, halve, pool::pool_options{}, nullptr);
  REQUIRE_FALSE(pool);
  CHECK(pool::describe(pool.error()) ==
        "pool.invalid_option: store: must not be null");
}
