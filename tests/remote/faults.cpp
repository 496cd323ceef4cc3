// Remote workers that misbehave, with the pool and the node in two actor
// systems of this process (on 127.0.0.1): results of the wrong type, jobs
// that outlive the remote attempt timeout, and the quarantine that
// follows repeated faults. Callers still get every result right, exactly
// once. Every wait is bounded. Also what survives of an error from a node.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <pool/all.hpp>
#include <pool/remote.hpp>

#include "demo_job.hpp"

using namespace std::chrono_literals;

namespace {

struct remote_config : caf::actor_system_config {
  remote_config() {
    pool::configure_remote(*this);
    set("logger.verbosity", caf::atom("quiet"));
  }
};

constexpr const char* token = "faults-token";

bool eventually(std::function<bool()> pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

/// Log lines, kept for checks (the hook may be called after the test).
struct captured {
  std::shared_ptr<std::mutex> mtx = std::make_shared<std::mutex>();
  std::shared_ptr<std::vector<std::string>> lines =
      std::make_shared<std::vector<std::string>>();

  pool::log_hook hook() {
    return [mtx = mtx, lines = lines](pool::log_level, const std::string&,
                                      const std::string& x) {
      std::lock_guard<std::mutex> guard{*mtx};
      lines->push_back(x);
    };
  }

  bool contains(const std::string& text) const {
    std::lock_guard<std::mutex> guard{*mtx};
    for (auto& x : *lines)
      if (x.find(text) != std::string::npos)
        return true;
    return false;
  }
};

/// A pool of one local worker running the demo job, published.
struct published {
  caf::actor_system& sys;
  caf::actor pool;
  caf::actor gatekeeper;
  uint16_t port = 0;
  captured log;

  published(caf::actor_system& sys, pool::remote_options remote,
            pool::pool_options opts = pool::pool_options{})
      : sys(sys) {
    auto spawned =
        pool::spawn_pool(sys, remote_demo::hash_job,
                         opts.workers(1).max_attempts(20).backoff(1ms, 5ms).log(
                             pool::silent_log_hook()));
    REQUIRE(spawned);
    pool = *spawned;
    remote.token(token).log(log.hook());
    auto gk = pool::spawn_gatekeeper<decltype(remote_demo::hash_job)>(sys, pool,
                                                                      remote);
    REQUIRE(gk);
    gatekeeper = *gk;
    auto bound = pool::publish_gatekeeper(sys, gatekeeper, remote);
    REQUIRE_MESSAGE(bound, pool::describe_remote(bound.error()));
    port = *bound;
  }

  ~published() {
    caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
  }

  pool::pool_stats stats() {
    caf::scoped_actor self{sys};
    pool::pool_stats result;
    self->request(pool, 10s, pool::pool_stats_atom_v)
        .receive([&](pool::pool_stats& x) { result = x; },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
    return result;
  }

  pool::gatekeeper_stats counters() {
    caf::scoped_actor self{sys};
    pool::gatekeeper_stats result;
    self->request(gatekeeper, 10s, pool::control_atom_v, std::string{token},
                  pool::gatekeeper_stats_atom_v)
        .receive([&](pool::gatekeeper_stats& x) { result = x; },
                 [](caf::error& err) { FAIL(pool::describe_remote(err)); });
    return result;
  }

  /// Submits 1..n and checks every result (and that each came once).
  void run_and_check(int32_t n) {
    caf::scoped_actor self{sys};
    auto collector = caf::actor_cast<caf::actor>(self);
    sys.spawn([=, pool = pool](caf::event_based_actor* submitter) {
      for (int32_t x = 1; x <= n; ++x)
        submitter->request(pool, caf::infinite, pool::submit_atom_v, x)
            .then([=](int64_t y) { submitter->send(collector, x, y); },
                  [=](caf::error& err) { submitter->send(collector, x, err); });
    });
    std::map<int32_t, int> seen;
    for (int32_t i = 0; i < n; ++i)
      self->receive(
          [&](int32_t x, int64_t y) {
            CHECK(y == remote_demo::hash_job(x));
            ++seen[x];
          },
          [&](int32_t x, caf::error& err) {
            FAIL(x << ": " << pool::describe(err));
          },
          caf::after(30s) >> [] { FAIL("no result within 30 s"); });
    CHECK(seen.size() == static_cast<size_t>(n));
  }
};

} // namespace

TEST_CASE("results of the wrong type from a node fail their attempts, which "
          "run again, and three in a row quarantine the node, which gets work "
          "again afterwards" *
          doctest::timeout(60)) {
  remote_config cfg;
  caf::actor_system sys{cfg};
  published pub{sys, pool::remote_options{}.quarantine(3, 500ms)};
  remote_config node_cfg;
  caf::actor_system node_sys{node_cfg};
  // Same input, but a text instead of the pool's int64_t.
  auto liar = [](int32_t x) { return std::to_string(x); };
  auto node =
      pool::join_remote_pool(node_sys, "127.0.0.1", pub.port, token, 2, liar,
                             pool::node_options{}.log(pool::silent_log_hook()));
  REQUIRE(node);
  REQUIRE(eventually([&] { return pub.stats().joined == 2; }, 10s));
  // The pool's own worker may take nearly all of a round (it batches a fast
  // job) and leave the node fewer than three: more rounds, at most ten.
  pub.run_and_check(50);
  for (int round = 1; round < 10 && pub.counters().quarantines == 0; ++round)
    pub.run_and_check(50);
  auto counters = pub.counters();
  MESSAGE(pool::to_string(counters));
  CHECK(counters.wrong_results >= 3);
  CHECK(counters.quarantines >= 1);
  CHECK(counters.sessions == 1);
  CHECK(pub.log.contains("quarantined"));
  CHECK(pub.stats().retried >= 3);
  // Its time is up: the node's workers are back in the pool.
  CHECK(eventually([&] { return pub.stats().joined == 2; }, 10s));
  CHECK(!pool::leave_remote_pool(node_sys, *node));
  CHECK(eventually([&] { return pub.stats().joined == 0; }, 10s));
  CHECK(pub.counters().sessions == 0);
}

TEST_CASE("a remote attempt that outlives attempt_timeout fails and runs "
          "again, and the node replaces the stuck worker" *
          doctest::timeout(60)) {
  remote_config cfg;
  caf::actor_system sys{cfg};
  published pub{sys, pool::remote_options{}.attempt_timeout(200ms)};
  remote_config node_cfg;
  caf::actor_system node_sys{node_cfg};
  captured node_log;
  // The node's first two jobs hang for 1.5 s, the others are quick.
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto sleeper = [calls](int32_t x) {
    if (++*calls <= 2)
      std::this_thread::sleep_for(1500ms);
    return remote_demo::hash_job(x);
  };
  auto node =
      pool::join_remote_pool(node_sys, "127.0.0.1", pub.port, token, 2, sleeper,
                             pool::node_options{}
                                 .kind(pool::worker_kind::dedicated)
                                 .log(node_log.hook()));
  REQUIRE(node);
  REQUIRE(eventually([&] { return pub.stats().joined == 2; }, 10s));
  pub.run_and_check(20);
  auto counters = pub.counters();
  MESSAGE(pool::to_string(counters));
  CHECK(counters.timeouts >= 1);
  CHECK(counters.quarantines == 0);
  CHECK(pub.stats().retried >= 1);
  CHECK(calls->load() > 2); // the replaced workers ran jobs
  CHECK(node_log.contains("timed out on worker"));
  // Stuck workers finish their job, then stop; the node leaves cleanly.
  CHECK(!pool::leave_remote_pool(node_sys, *node));
}

TEST_CASE("when the pool's own attempt_timeout drops a stand-in, it joins "
          "again once its node answered" *
          doctest::timeout(60)) {
  remote_config cfg;
  caf::actor_system sys{cfg};
  // The shepherd gives up on an attempt after 300 ms; the stand-ins wait
  // for their node up to the remote attempt timeout (5 min by default).
  published pub{sys, pool::remote_options{},
                pool::pool_options{}.attempt_timeout(300ms)};
  remote_config node_cfg;
  caf::actor_system node_sys{node_cfg};
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto slow_start = [calls](int32_t x) {
    if (++*calls <= 2)
      std::this_thread::sleep_for(1s);
    return remote_demo::hash_job(x);
  };
  auto node = pool::join_remote_pool(node_sys, "127.0.0.1", pub.port, token, 2,
                                     slow_start,
                                     pool::node_options{}
                                         .kind(pool::worker_kind::dedicated)
                                         .log(pool::silent_log_hook()));
  REQUIRE(node);
  REQUIRE(eventually([&] { return pub.stats().joined == 2; }, 10s));
  pub.run_and_check(20);
  auto stats = pub.stats();
  CHECK(stats.timed_out >= 1);
  // Both slow answers came back: both stand-ins are members again.
  CHECK(eventually([&] { return pub.stats().joined == 2; }, 10s));
  CHECK(pub.counters().timeouts == 0); // the remote timeout never fired
  CHECK(!pool::leave_remote_pool(node_sys, *node));
}

TEST_CASE("errors from a node keep their code, category and plain values, "
          "and lose actor handles and anything past 16 elements" *
          doctest::timeout(5)) {
  auto err = caf::make_error(pool::pool_errc::job_failed, std::string{"exit"},
                             int32_t{3}, caf::actor_addr{}, caf::message{});
  auto clean = pool::detail::sanitize_remote_error(err);
  CHECK(clean.code() == err.code());
  CHECK(clean.category() == err.category());
  auto& ctx = clean.context();
  REQUIRE(ctx.size() == 4);
  CHECK(ctx.match_elements<std::string, int32_t, std::string, std::string>());
  CHECK(ctx.get_as<std::string>(0) == "exit");
  CHECK(ctx.get_as<int32_t>(1) == 3);
  caf::message many;
  for (int i = 0; i < 20; ++i)
    many = caf::message::concat(many, caf::make_message(i));
  auto long_one = pool::detail::sanitize_remote_error(
      caf::error{1, pool::pool_error_category, many});
  CHECK(long_one.context().size() == 16);
  // An empty error becomes a failed attempt, not a success.
  CHECK(pool::is(pool::detail::sanitize_remote_error(caf::error{}),
                 pool::pool_errc::job_failed));
}
