// Remote workers that misbehave, with the pool and the node in two actor
// systems of this process (on 127.0.0.1): results of the wrong type, jobs
// that outlive the remote attempt timeout, and the quarantine that
// follows repeated faults. Callers still get every result right, exactly
// once. Every wait is bounded. Also what survives of an error from a node.
#include "in_process.hpp"

namespace {

/// The pool of these cases: one local worker, attempts enough to retry
/// every fault.
pool::pool_options fault_pool() {
  return pool::pool_options{}.workers(1).max_attempts(20).backoff(1ms, 5ms);
}

} // namespace

TEST_CASE("results of the wrong type from a node fail their attempts, which "
          "run again, and three in a row quarantine the node, which gets work "
          "again afterwards" *
          doctest::timeout(60)) {
  remote_config cfg;
  caf::actor_system sys{cfg};
  published pub{sys, pool::remote_options{}.quarantine(3, 500ms), fault_pool()};
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
  published pub{sys, pool::remote_options{}.attempt_timeout(200ms),
                fault_pool()};
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
                fault_pool().attempt_timeout(300ms)};
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
