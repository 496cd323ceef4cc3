// The pool on CAF's real scheduler at its edges: inputs moved out of the
// submit, bad input and unknown messages, jobs that return errors or
// throw, stuck and blocked dedicated workers, and a terminated or killed
// pool. Every wait is bounded.
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

} // namespace

namespace {

/// An input CAF cannot serialize, allowed in messages: fine for an
/// in-process pool.
struct opaque {
  std::shared_ptr<int> value;
};

} // namespace

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(opaque)

TEST_CASE("inputs are moved out of the submit: strings, retried ones, and "
          "unsafe message types arrive intact" *
          doctest::timeout(30)) {
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  // A string input, failing its first attempt: the retry sees it whole.
  auto tries = std::make_shared<std::atomic<int>>(0);
  auto strings = pool::spawn_pool(
      sys,
      [tries](const std::string& x) -> caf::expected<size_t> {
        if (tries->fetch_add(1) == 0)
          return caf::make_error(caf::sec::runtime_error, "first try");
        return x.size();
      },
      pool::pool_options{}.workers(1).max_attempts(2).backoff(1ms, 1ms));
  REQUIRE(strings);
  std::string text(1000, 'x');
  self->request(*strings, 10s, pool::submit_atom_v, text)
      .receive([](size_t n) { CHECK(n == 1000); },
               [](caf::error& err) { FAIL(pool::describe(err)); });
  CHECK(tries->load() == 2);
  // An input CAF cannot serialize (but allows in messages).
  auto opaques = pool::spawn_pool(
      sys, [](opaque x) { return *x.value; }, pool::pool_options{}.workers(1));
  REQUIRE(opaques);
  for (int i = 0; i < 3; ++i)
    self->request(*opaques, 10s, pool::submit_atom_v,
                  opaque{std::make_shared<int>(i)})
        .receive([i](int y) { CHECK(y == i); },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
  self->send_exit(*strings, caf::exit_reason::user_shutdown);
  self->send_exit(*opaques, caf::exit_reason::user_shutdown);
}

TEST_CASE("a negative delay is refused with a clear error" *
          doctest::timeout(30)) {
  config cfg;
  caf::actor_system sys{cfg};
  auto pool = pool::spawn_pool(sys, [](int x) { return x; });
  REQUIRE(pool);
  caf::scoped_actor self{sys};
  self->request(*pool, 10s, pool::submit_after_atom_v, caf::timespan{-1s}, 1)
      .receive([](int) { FAIL("accepted a negative delay"); },
               [](caf::error& err) {
                 CHECK(pool::is(err, pool::pool_errc::invalid_delay));
               });
}

TEST_CASE("a message the shepherd does not know gets an error, not a crash" *
          doctest::timeout(30)) {
  config cfg;
  caf::actor_system sys{cfg};
  auto pool = pool::spawn_pool(sys, [](int x) { return x; });
  REQUIRE(pool);
  caf::scoped_actor self{sys};
  self->request(*pool, 10s, std::string{"hello"}, 3.5)
      .receive([] { FAIL("answered"); },
               [](caf::error& err) {
                 CHECK(pool::is(err, pool::pool_errc::unexpected_message));
               });
  CHECK(pool::blocking_submit<int>(sys, *pool, 10s, 5) == 5);
}

TEST_CASE("a submit to a terminated pool gets an error, never a hang" *
          doctest::timeout(30)) {
  config cfg;
  caf::actor_system sys{cfg};
  auto pool = pool::spawn_pool(sys, [](int x) { return x; });
  REQUIRE(pool);
  caf::scoped_actor self{sys};
  self->monitor(*pool);
  self->send_exit(*pool, caf::exit_reason::user_shutdown);
  self->receive([](caf::down_msg&) {});
  auto r = pool::blocking_submit<int>(sys, *pool, 10s, 1);
  REQUIRE(!r);
  CHECK(r.error() == caf::sec::request_receiver_down);
}

TEST_CASE("callers pending when the pool is killed get its termination error" *
          doctest::timeout(30)) {
  config cfg;
  caf::actor_system sys{cfg};
  auto release = std::make_shared<std::promise<void>>();
  auto released = release->get_future().share();
  auto started = std::make_shared<std::promise<void>>();
  auto job = [released, started](int x) {
    started->set_value();
    released.wait_for(30s);
    return x;
  };
  auto pool = pool::spawn_pool(
      sys, job,
      pool::pool_options{}.workers(1).kind(pool::worker_kind::dedicated));
  REQUIRE(pool);
  auto running = pool::submit_future<int>(sys, *pool, 1);
  auto queued = pool::submit_future<int>(sys, *pool, 2);
  REQUIRE(started->get_future().wait_for(10s) == std::future_status::ready);
  // The first may start before the pool has even read the second submit
  // (it goes straight to the sleeping worker): kill the pool only once it
  // holds both, or the second would bounce off a dead pool with CAF's
  // request_receiver_down instead.
  caf::scoped_actor self{sys};
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (pool::test::stats_now(self, *pool).submitted < 2 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
  for (auto* f : {&running, &queued}) {
    REQUIRE(f->wait_for(10s) == std::future_status::ready);
    auto r = f->get();
    REQUIRE(!r);
    CHECK(pool::is(r.error(), pool::pool_errc::pool_terminated));
  }
  release->set_value();
}

TEST_CASE("the pool handle is an ordinary actor: passed, monitored, linked" *
          doctest::timeout(30)) {
  config cfg;
  caf::actor_system sys{cfg};
  auto pool = pool::spawn_pool(sys, [](int x) { return -x; });
  REQUIRE(pool);
  auto result = std::make_shared<std::promise<int>>();
  auto exit_seen = std::make_shared<std::promise<caf::error>>();
  // A client receives the pool in a message and submits through it; it is
  // also linked to the pool and traps the exit when the pool goes away.
  auto client = sys.spawn([result, exit_seen](caf::event_based_actor* self) {
    self->set_exit_handler(
        [exit_seen](caf::exit_msg& msg) { exit_seen->set_value(msg.reason); });
    return caf::behavior{
        [self, result](caf::actor pool) {
          self->link_to(pool);
          self->request(pool, 10s, pool::submit_atom_v, 7)
              .then([result](int y) { result->set_value(y); });
        },
    };
  });
  caf::anon_send(client, *pool);
  auto answer = result->get_future();
  REQUIRE(answer.wait_for(10s) == std::future_status::ready);
  CHECK(answer.get() == -7);
  caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
  auto reason = exit_seen->get_future();
  REQUIRE(reason.wait_for(10s) == std::future_status::ready);
  CHECK(reason.get() == caf::exit_reason::user_shutdown);
  caf::anon_send_exit(client, caf::exit_reason::kill);
}

TEST_CASE("a job returning caf::expected delivers its value or its error" *
          doctest::timeout(30)) {
  config cfg;
  caf::actor_system sys{cfg};
  auto checked_sqrt = [](int x) -> caf::expected<int> {
    if (x < 0)
      return caf::make_error(caf::sec::invalid_argument,
                             std::string{"negative input"});
    int r = 0;
    while ((r + 1) * (r + 1) <= x)
      ++r;
    return r;
  };
  auto pool = pool::spawn_pool(sys, checked_sqrt);
  REQUIRE(pool);
  CHECK(pool::blocking_submit<int>(sys, *pool, 10s, 49) == 7);
  auto failed = pool::blocking_submit<int>(sys, *pool, 10s, -4);
  REQUIRE(!failed);
  CHECK(pool::is(failed.error(), pool::pool_errc::operation_failed));
  auto history = pool::attempt_history(failed.error());
  REQUIRE(history.size() == 1);
  CHECK(history[0].reason == caf::sec::invalid_argument);
}

TEST_CASE("a job that throws fails only its own caller" *
          doctest::timeout(30)) {
  config cfg;
  caf::actor_system sys{cfg};
  auto picky = [](int x) {
    if (x == 13)
      throw std::runtime_error("unlucky number");
    return x;
  };
  auto pool = pool::spawn_pool(sys, picky, pool::pool_options{}.workers(1));
  REQUIRE(pool);
  auto bad = pool::blocking_submit<int>(sys, *pool, 10s, 13);
  REQUIRE(!bad);
  CHECK(pool::is(bad.error(), pool::pool_errc::operation_failed));
  auto history = pool::attempt_history(bad.error());
  REQUIRE(history.size() == 1);
  CHECK(pool::is(history[0].reason, pool::pool_errc::job_failed));
  CHECK(pool::describe(bad.error()).find("unlucky number") !=
        std::string::npos);
  CHECK(pool::blocking_submit<int>(sys, *pool, 10s, 12) == 12);
}

TEST_CASE("a dedicated worker stuck past the timeout is abandoned and "
          "replaced, its late reply dropped" *
          doctest::timeout(60)) {
  config cfg;
  caf::actor_system sys{cfg};
  auto release = std::make_shared<std::promise<void>>();
  auto released = release->get_future().share();
  auto calls = std::make_shared<std::atomic<int>>(0);
  // The first call is stuck until the test releases it; later calls are
  // quick.
  auto job = [released, calls](int x) {
    if (++*calls == 1)
      released.wait_for(30s);
    return x + 1;
  };
  auto pool = pool::spawn_pool(sys, job,
                               pool::pool_options{}
                                   .workers(1)
                                   .kind(pool::worker_kind::dedicated)
                                   .max_attempts(2)
                                   .backoff(0s, 0s)
                                   .attempt_timeout(200ms));
  REQUIRE(pool);
  // Attempt 1 is stuck; at the timeout attempt 2 runs on a fresh worker.
  auto r = pool::blocking_submit<int>(sys, *pool, 20s, 1);
  REQUIRE(r);
  CHECK(*r == 2);
  caf::scoped_actor self{sys};
  auto stats = [&] { return pool::test::stats_now(self, *pool); };
  auto st = stats();
  CHECK(st.timed_out == 1);
  CHECK(st.abandoned == 1); // its thread is still inside the job
  CHECK(st.workers == 1);
  // Released, the stuck job returns; its reply is stale and the abandoned
  // worker terminates.
  release->set_value();
  for (int i = 0; i < 200 && stats().abandoned > 0; ++i)
    self->receive(caf::after(10ms) >> [] {});
  st = stats();
  CHECK(st.abandoned == 0);
  CHECK(st.stale_replies == 1);
  CHECK(st.completed == 1);
}

TEST_CASE("with every dedicated worker blocked, the shepherd still answers "
          "stats and accepts submits" *
          doctest::timeout(60)) {
  config cfg;
  caf::actor_system sys{cfg};
  auto release = std::make_shared<std::promise<void>>();
  auto released = release->get_future().share();
  auto job = [released](int x) {
    released.wait_for(30s);
    return x;
  };
  auto pool = pool::spawn_pool(
      sys, job,
      pool::pool_options{}.workers(2).kind(pool::worker_kind::dedicated));
  REQUIRE(pool);
  std::vector<std::future<caf::expected<int>>> results;
  for (int i = 0; i < 4; ++i)
    results.push_back(pool::submit_future<int>(sys, *pool, i));
  caf::scoped_actor self{sys};
  auto stats = [&] { return pool::test::stats_now(self, *pool); };
  // The four submits come from four senders: wait until all have arrived.
  auto settled = [&] {
    auto st = stats();
    return st.busy == 2 && st.available == 2;
  };
  for (int i = 0; i < 500 && !settled(); ++i)
    self->receive(caf::after(10ms) >> [] {});
  // Both workers are blocked in user code; the shepherd is not.
  auto st = stats();
  CHECK(st.busy == 2);
  CHECK(st.available == 2);
  auto accepted = self->request(*pool, 5s, pool::enqueue_atom_v, 99);
  accepted.receive([](uint64_t id) { CHECK(id == 5); },
                   [](caf::error& err) { FAIL(pool::describe(err)); });
  CHECK(stats().available == 3);
  release->set_value();
  for (auto& f : results) {
    REQUIRE(f.wait_for(10s) == std::future_status::ready);
    CHECK(f.get());
  }
  self->receive([](pool::op_done_atom, uint64_t, caf::message&) {},
                caf::after(10s) >> [] { FAIL("enqueued job did not finish"); });
}
