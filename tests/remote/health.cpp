// Node health across the network (docs/remote.md, "Node health"), with the
// pool and its nodes in two actor systems of this process, on 127.0.0.1:
// a node whose workers fail every attempt at once among four honest ones,
// and a node that goes silent with attempts out. Every wait is bounded.
// POOL_HEALTH_OPS sets the operation count of the first case (default
// 6,000, the figure; bench/node_health runs it and prints figures).
#include <cstdlib>

#include "in_process.hpp"

namespace {

/// The demo job as the honest nodes of the first cases run it: slower than
/// a liar's answer.
int64_t honest_job(int32_t x) {
  std::this_thread::sleep_for(1ms);
  return remote_demo::hash_job(x);
}

/// Counts the pool's `retried` and `failed` events whose error holds
/// `marker`: attempts used up by such failures.
struct spent_counter {
  std::shared_ptr<std::atomic<int>> spent =
      std::make_shared<std::atomic<int>>(0);

  void attach(caf::actor_system& sys, const caf::actor& pool,
              std::string marker) {
    auto listener = sys.spawn(
        [spent = spent, marker](caf::event_based_actor*) -> caf::behavior {
          return {
              [=](pool::pool_event& ev) {
                if (pool::describe(ev.error).find(marker) != std::string::npos)
                  ++*spent;
              },
          };
        });
    caf::anon_send(pool, pool::subscribe_atom_v, listener,
                   pool::event_bit(pool::event_kind::retried) |
                       pool::event_bit(pool::event_kind::failed));
  }
};

/// What the gatekeeper logs when it quarantines an outlier.
constexpr const char* quarantine_line = "fails far more often";

int32_t ops_from_env(int32_t fallback) {
  if (auto text = std::getenv("POOL_HEALTH_OPS"))
    if (auto n = std::atoi(text); n > 0)
      return n;
  return fallback;
}

} // namespace

TEST_CASE("a node failing every attempt at once among four honest ones is "
          "quarantined, 99 percent of 6000 operations complete and no "
          "attempt is lost to it after its quarantine" *
          doctest::timeout(180)) {
  remote_config cfg;
  caf::actor_system sys{cfg};
  // A short quarantine: the node comes back several times during the run,
  // and each time its failures must cost nothing.
  published pub{sys, pool::remote_options{}.quarantine(3, 300ms),
                pool::pool_options{}
                    .workers(1)
                    .kind(pool::worker_kind::dedicated)
                    .max_attempts(3)
                    .backoff(1ms, 5ms),
                honest_job};
  spent_counter after_quarantine;
  after_quarantine.attach(sys, pub.pool, "after-quarantine");
  remote_config node_cfg;
  caf::actor_system node_sys{node_cfg};
  auto quiet = pool::node_options{}.log(pool::silent_log_hook());
  leave_at_exit leave{node_sys, {}};
  auto& nodes = leave.nodes;
  for (int i = 0; i < 4; ++i) {
    auto node = pool::join_remote_pool(
        node_sys, "127.0.0.1", pub.port, token, 4, honest_job,
        pool::node_options{quiet}.kind(pool::worker_kind::dedicated));
    REQUIRE(node);
    nodes.push_back(*node);
  }
  // The failing node: every attempt fails at once; its error says whether
  // the gatekeeper had quarantined it before the job ran.
  auto calls = std::make_shared<std::atomic<int>>(0);
  // (The gatekeeper logs the quarantine from its handler, after the
  // node's stand-ins were told to retire.)
  auto liar = [calls, log = pub.log](int32_t) -> caf::expected<int64_t> {
    ++*calls;
    auto after = log.contains(quarantine_line);
    return caf::make_error(
        pool::pool_errc::job_failed,
        std::string{after ? "hostile after-quarantine" : "hostile"});
  };
  auto bad = pool::join_remote_pool(node_sys, "127.0.0.1", pub.port, token, 4,
                                    liar, quiet);
  REQUIRE(bad);
  nodes.push_back(*bad);
  REQUIRE(eventually([&] { return pub.stats().joined == 20; }, 10s));
  auto n = ops_from_env(6000);
  auto started = std::chrono::steady_clock::now();
  auto right = pub.run(n, 150s);
  auto took = std::chrono::steady_clock::now() - started;
  auto stats = pub.stats();
  auto counters = pub.counters();
  MESSAGE(pool::to_string(counters));
  MESSAGE("ops=" << n << " right=" << right << " share=" << (100.0 * right / n)
                 << "% liar_calls=" << calls->load()
                 << " retried=" << stats.retried << " failed=" << stats.failed
                 << " snoozed=" << stats.snoozed << " spent_after_quarantine="
                 << after_quarantine.spent->load() << " took_ms="
                 << std::chrono::duration_cast<std::chrono::milliseconds>(took)
                        .count());
  CHECK(right * 100 >= n * 99);
  CHECK(counters.outliers >= 1);
  CHECK(pub.log.contains(quarantine_line));
  CHECK(counters.given_back >= 1);
  CHECK(after_quarantine.spent->load() == 0);
  // Before its first quarantine the node failed at most min_sample (16)
  // attempts that counted, plus those given back.
  CHECK(stats.retried + stats.failed <= 16);
}

TEST_CASE("a node that goes silent with attempts out is dropped after "
          "silent_after, its attempts come back unstarted, and a node with "
          "long jobs that sends heartbeats stays" *
          doctest::timeout(60)) {
  remote_config cfg;
  caf::actor_system sys{cfg};
  published pub{sys, pool::remote_options{}.silent_after(1s),
                pool::pool_options{}.workers(1).max_attempts(1)};
  remote_config node_cfg;
  caf::actor_system node_sys{node_cfg};
  // An honest node whose first jobs run 2.5 s, longer than silent_after,
  // with a heartbeat every 200 ms (a fifth of silent_after).
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto slow = [calls](int32_t x) {
    if (++*calls <= 2)
      std::this_thread::sleep_for(2500ms);
    return remote_demo::hash_job(x);
  };
  auto node =
      pool::join_remote_pool(node_sys, "127.0.0.1", pub.port, token, 2, slow,
                             pool::node_options{}
                                 .kind(pool::worker_kind::dedicated)
                                 .heartbeat(200ms)
                                 .log(pool::silent_log_hook()));
  REQUIRE(node);
  leave_at_exit leave{node_sys, {*node}};
  // The silent node: it joins with the token for 4 workers, then never
  // answers anything; it hears the pool end its session.
  auto byes = std::make_shared<std::atomic<int>>(0);
  auto runs = std::make_shared<std::atomic<int>>(0);
  auto gk = node_sys.middleman().remote_actor("127.0.0.1", pub.port);
  REQUIRE(gk);
  auto silent = node_sys.spawn(
      [=, gk = *gk](caf::event_based_actor* self) -> caf::behavior {
        self->request(gk, 10s, pool::node_join_atom_v, std::string{token},
                      uint32_t{4})
            .then([](pool::node_join_atom, std::string&, uint32_t) {});
        return {
            [=](pool::node_run_atom, std::string&, uint32_t,
                pool::work_record&) { ++*runs; },
            [=](pool::node_bye_atom, std::string&) { ++*byes; },
        };
      });
  // (The silent actor never ends by itself: the actor system would wait.)
  auto stop_silent = std::shared_ptr<void>(nullptr, [silent](void*) {
    caf::anon_send_exit(silent, caf::exit_reason::user_shutdown);
  });
  REQUIRE(eventually([&] { return pub.stats().joined == 6; }, 10s));
  // With max_attempts(1), an attempt lost to the silent node would fail
  // its operation: every one must come back unstarted instead.
  auto started = std::chrono::steady_clock::now();
  auto right = pub.run(40, 30s);
  auto took = std::chrono::steady_clock::now() - started;
  auto counters = pub.counters();
  MESSAGE(pool::to_string(counters));
  auto ms = [](auto d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  auto dropped = pub.log.first("silent");
  REQUIRE(dropped);
  auto dropped_after = *dropped - started;
  MESSAGE("silent node held " << runs->load() << " attempts, dropped after "
                              << ms(dropped_after) << " ms; all 40 done in "
                              << ms(took) << " ms");
  // silent_after (1 s) plus at most one check interval (250 ms) and slack.
  CHECK(dropped_after >= 1s);
  CHECK(dropped_after < 3s);
  CHECK(right == 40);
  CHECK(runs->load() >= 1);
  CHECK(counters.silent == 1);
  auto stats = pub.stats();
  CHECK(stats.snoozed >= static_cast<uint64_t>(runs->load()));
  CHECK(stats.failed == 0);
  CHECK(stats.retried == 0);
  CHECK(eventually([&] { return byes->load() == 1; }, 5s));
  // The heartbeating node kept its session through its 2.5 s jobs.
  CHECK(calls->load() >= 1); // (its first job is one of 2.5 s)
  CHECK(counters.sessions == 1);
  CHECK(took < 10s);
}

TEST_CASE("an operation that failed on a node never runs there again while "
          "another node can take it, though the node is no outlier" *
          doctest::timeout(60)) {
  remote_config cfg;
  caf::actor_system sys{cfg};
  published pub{sys, pool::remote_options{},
                pool::pool_options{}
                    .workers(1)
                    .kind(pool::worker_kind::dedicated)
                    .max_attempts(2)
                    .backoff(1ms, 2ms),
                honest_job};
  remote_config node_cfg;
  caf::actor_system node_sys{node_cfg};
  auto quiet = pool::node_options{}.log(pool::silent_log_hook());
  leave_at_exit leave{node_sys, {}};
  auto honest = pool::join_remote_pool(
      node_sys, "127.0.0.1", pub.port, token, 2, honest_job,
      pool::node_options{quiet}.kind(pool::worker_kind::dedicated));
  REQUIRE(honest);
  leave.nodes.push_back(*honest);
  // Fails every input divisible by 5 (a fifth of its work: no outlier by
  // the margin of 0.5), and counts how often it saw each.
  auto mtx = std::make_shared<std::mutex>();
  auto seen = std::make_shared<std::map<int32_t, int>>();
  auto picky = [mtx, seen](int32_t x) -> caf::expected<int64_t> {
    {
      std::lock_guard<std::mutex> guard{*mtx};
      ++(*seen)[x];
    }
    if (x % 5 == 0)
      return caf::make_error(pool::pool_errc::job_failed,
                             std::string{"not here"});
    return honest_job(x);
  };
  auto node = pool::join_remote_pool(node_sys, "127.0.0.1", pub.port, token, 4,
                                     picky, quiet);
  REQUIRE(node);
  leave.nodes.push_back(*node);
  REQUIRE(eventually([&] { return pub.stats().joined == 6; }, 10s));
  auto right = pub.run(1000, 60s);
  auto counters = pub.counters();
  MESSAGE(pool::to_string(counters));
  // Each one failed there at most once, then ran elsewhere: with
  // max_attempts(2) every operation completes.
  CHECK(right == 1000);
  auto twice = 0;
  {
    std::lock_guard<std::mutex> guard{*mtx};
    for (auto& [x, n] : *seen)
      if (x % 5 == 0 && n > 1)
        ++twice;
  }
  CHECK(twice == 0);
  CHECK(counters.outliers == 0);
  MESSAGE("avoided=" << counters.avoided << " retried=" << pub.stats().retried);
}

TEST_CASE("remote_options: health bounds out of range are refused, naming "
          "the field" *
          doctest::timeout(10)) {
  auto valid = pool::remote_options{}.token(token);
  CHECK_FALSE(valid.validate());
  CHECK_FALSE(pool::remote_options{valid}.silent_after(0s).validate());
  CHECK(valid.health().window == 64);
  CHECK(valid.health().min_sample == 16);
  CHECK(valid.silent_after() == caf::timespan{10s});
  auto refused = [&](pool::remote_options opts, const std::string& what) {
    auto text = pool::describe(opts.validate());
    INFO(text);
    return text.find(what) != std::string::npos;
  };
  CHECK(
      refused(pool::remote_options{valid}.health(0, 1, 0.5), "health: window"));
  CHECK(refused(pool::remote_options{valid}.health(8, 9, 0.5),
                "health: min_sample"));
  CHECK(
      refused(pool::remote_options{valid}.health(8, 4, 0.0), "health: margin"));
  CHECK(
      refused(pool::remote_options{valid}.health(8, 4, 1.5), "health: margin"));
  CHECK(refused(pool::remote_options{valid}.silent_after(-1s),
                "silent_after: must not be negative"));
}
