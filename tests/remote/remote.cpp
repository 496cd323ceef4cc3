// Remote pools across processes, on 127.0.0.1 only: a pool published from
// the test process (or a pool_serve child), worker nodes (pool_node
// children) and the control tool (poolctl). The attacker's view is in
// attack.cpp. Every wait is bounded.
#include "fixture.hpp"

#include "../sqlite_files.hpp"

// -- publishing
// -----------------------------------------------------------------

namespace {

/// A type that never leaves the process: no type ID, no inspect.
struct local_only {
  int value = 0;
};

} // namespace

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(local_only)

TEST_CASE("publish and join refuse payload types the actor system cannot "
          "send and invalid options" *
          doctest::timeout(30)) {
  remote_config cfg;
  caf::actor_system sys{cfg};
  auto opts = pool::pool_options{}.workers(1).log(pool::silent_log_hook());
  auto in_job = [](local_only x) { return x.value; };
  auto out_job = [](int32_t x) { return local_only{x}; };
  auto in_pool = pool::spawn_pool(sys, in_job, opts);
  REQUIRE(in_pool);
  pool_guard in_guard{*in_pool};
  auto remote =
      pool::remote_options{}.token(token).log(pool::silent_log_hook());
  auto refused = pool::publish_pool<decltype(in_job)>(sys, *in_pool, remote);
  REQUIRE(!refused);
  CHECK(pool::is(refused.error(), pool::pool_errc::invalid_option));
  auto text = pool::describe(refused.error());
  CHECK(text.find("publish") != std::string::npos);
  CHECK(text.find("local_only") != std::string::npos);
  // The result type counts too; a signature works as well as a type.
  refused = pool::publish_pool<local_only(int32_t)>(sys, *in_pool, remote);
  REQUIRE(!refused);
  CHECK(pool::describe(refused.error()).find("local_only") !=
        std::string::npos);
  auto joined = pool::join_remote_pool(sys, "127.0.0.1", 1, token, 1, out_job);
  REQUIRE(!joined);
  CHECK(pool::describe(joined.error()).find("join") != std::string::npos);
  // Options: a token is required.
  auto no_token = pool::publish_pool<int64_t(int32_t)>(sys, *in_pool,
                                                       pool::remote_options{});
  REQUIRE(!no_token);
  CHECK(pool::describe(no_token.error()).find("token") != std::string::npos);
  auto no_workers = pool::join_remote_pool(sys, "127.0.0.1", 1, token, 0,
                                           remote_demo::hash_job);
  REQUIRE(!no_workers);
  CHECK(pool::describe(no_workers.error()).find("workers") !=
        std::string::npos);
  // Limits must leave room for something.
  auto bad_limit = pool::publish_pool<int64_t(int32_t)>(
      sys, *in_pool, pool::remote_options{remote}.max_connections(0));
  REQUIRE(!bad_limit);
  CHECK(pool::describe(bad_limit.error()).find("max_connections") !=
        std::string::npos);
  auto bad_deadlines = pool::publish_pool<int64_t(int32_t)>(
      sys, *in_pool, pool::remote_options{remote}.connection_deadlines(5s, 1s));
  REQUIRE(!bad_deadlines);
  CHECK(pool::describe(bad_deadlines.error()).find("connection_deadlines") !=
        std::string::npos);
  // A serializable pool publishes, on loopback by default.
  auto ok_pool = pool::spawn_pool(sys, remote_demo::hash_job, opts);
  REQUIRE(ok_pool);
  pool_guard ok_guard{*ok_pool};
  auto port = pool::publish_pool<decltype(remote_demo::hash_job)>(sys, *ok_pool,
                                                                  remote);
  REQUIRE_MESSAGE(port, pool::describe_remote(port.error()));
  CHECK(*port != 0);
}

// -- work across processes ----------------------------------------------------

TEST_CASE("two worker nodes run 10000 operations with correct results" *
          doctest::timeout(60)) {
  scratch_dir dir;
  remote_config cfg;
  caf::actor_system sys{cfg};
  served_pool served{sys, pool::pool_options{}.max_attempts(2)};
  child node_a{dir, "node_a", served.node_args(token, 4)};
  child node_b{dir, "node_b", served.node_args(token, 4)};
  served.await_joined(8);
  auto got = run_operations(sys, served.handle, 10000, 45s);
  check_all_done(got, 10000);
  auto stats = served.stats();
  CHECK(stats.completed == 10000);
  CHECK(stats.failed == 0);
  auto jobs_a = stop_node(node_a);
  auto jobs_b = stop_node(node_b);
  auto local = static_cast<long long>(served.local_runs->load());
  MESSAGE("node a ran " << jobs_a << ", node b " << jobs_b << ", local "
                        << local);
  CHECK(jobs_a > 0);
  CHECK(jobs_b > 0);
  CHECK(jobs_a + jobs_b + local >= 10000);
  // Both nodes left: their workers leave the stats.
  served.await_joined(0);
}

TEST_CASE("SIGKILL of a worker node mid-run: every operation still "
          "completes and none is lost while its workers leave the stats" *
          doctest::timeout(60)) {
  scratch_dir dir;
  remote_config cfg;
  caf::actor_system sys{cfg};
  served_pool served{sys,
                     pool::pool_options{}.max_attempts(3).backoff(10ms, 100ms)};
  // 1 ms a job keeps the run going long enough to kill a node in its middle.
  child victim{dir, "victim", served.node_args(token, 4, 1)};
  child survivor{dir, "survivor", served.node_args(token, 4, 1)};
  served.await_joined(8);
  joining_thread killer{[&] {
    // Once a fifth of the work is done, with attempts in flight.
    eventually([&] { return served.stats().completed >= 2000; }, 30s);
    victim.kill_now();
  }};
  auto got = run_operations(sys, served.handle, 10000, 50s);
  killer.join();
  check_all_done(got, 10000);
  auto stats = served.stats();
  MESSAGE("retried " << stats.retried << ", completed " << stats.completed);
  CHECK(stats.completed == 10000);
  CHECK(stats.failed == 0);
  // The victim held attempts when it died: they failed and ran elsewhere.
  CHECK(stats.retried > 0);
  // Only the survivor's workers remain.
  served.await_joined(4);
  CHECK(stop_node(survivor) > 0);
}

// -- admission and hostile input ---------------------------------------------

TEST_CASE("a node with a wrong token is refused and gets no work" *
          doctest::timeout(30)) {
  scratch_dir dir;
  remote_config cfg;
  caf::actor_system sys{cfg};
  served_pool served{sys, pool::pool_options{}};
  child intruder{dir, "intruder", served.node_args("wrong-token", 4)};
  CHECK(intruder.wait(15s) == 1);
  CHECK(intruder.err().find("refused") != std::string::npos);
  CHECK(number_after(intruder.out(), "jobs") == 0);
  auto counters = served.counters();
  CHECK(counters.joins_refused == 1);
  CHECK(counters.joins_accepted == 0);
  CHECK(counters.workers_joined == 0);
  CHECK(served.log.contains("refused node_join"));
  // The pool works on without it.
  auto got = run_operations(sys, served.handle, 20, 20s);
  check_all_done(got, 20);
  auto stats = served.stats();
  CHECK(stats.joined == 0);
  CHECK(stats.workers == 1);
}

namespace {

/// Joins the pool at `port` from `node_sys` with 8 dedicated workers.
caf::expected<caf::actor> join_with_8(caf::actor_system& node_sys,
                                      uint16_t port,
                                      const std::string& node_token) {
  return pool::join_remote_pool(node_sys, "127.0.0.1", port, node_token, 8,
                                remote_demo::hash_job,
                                pool::node_options{}
                                    .kind(pool::worker_kind::dedicated)
                                    .log(pool::silent_log_hook()));
}

} // namespace

TEST_CASE("a refused join starts no worker, so its actor system shuts "
          "down at once" *
          doctest::timeout(60)) {
  remote_config cfg;
  caf::actor_system sys{cfg};
  served_pool served{sys, pool::pool_options{}};
  for (int round = 0; round < 10; ++round) {
    CAPTURE(round);
    remote_config node_cfg;
    auto node_sys = std::make_unique<caf::actor_system>(node_cfg);
    auto before = node_sys->registry().running();
    auto node = join_with_8(*node_sys, served.port, "not-the-token");
    REQUIRE(!node);
    CHECK(node.error().category() == pool::remote_error_category);
    CHECK(node_sys->registry().running() == before);
    node_sys.reset(); // Returns (CTest's timeout would catch a hang).
  }
  CHECK(served.counters().joins_refused == 10);
}

TEST_CASE("a local exit stops a joined node once its workers stopped, so its "
          "actor system shuts down at once, and an anonymous kill, which a "
          "network peer could forge, is dropped" *
          doctest::timeout(60)) {
  remote_config cfg;
  caf::actor_system sys{cfg};
  served_pool served{sys, pool::pool_options{}};
  for (int round = 0; round < 5; ++round) {
    CAPTURE(round);
    remote_config node_cfg;
    auto node_sys = std::make_unique<caf::actor_system>(node_cfg);
    auto before = node_sys->registry().running();
    auto node = join_with_8(*node_sys, served.port, token);
    REQUIRE(node);
    served.await_joined(8);
    {
      caf::scoped_actor self{*node_sys, true};
      self->monitor(*node);
      // Not acted on: had it been, the down reason would be `kill`.
      caf::anon_send_exit(*node, caf::exit_reason::kill);
      self->send_exit(*node, caf::exit_reason::user_shutdown);
      auto down = false;
      self->receive(
          [&](caf::down_msg& msg) {
            down = true;
            CHECK(msg.reason == caf::exit_reason::user_shutdown);
          },
          caf::after(20s) >> [] {});
      REQUIRE(down);
    }
    // No worker runs once the node is gone (a dedicated worker leaves the
    // registry's count when it is destroyed, just after its node ended).
    for (int i = 0; i < 1000 && node_sys->registry().running() != before; ++i)
      std::this_thread::sleep_for(10ms);
    CHECK(node_sys->registry().running() == before);
    node_sys.reset(); // Returns (CTest's timeout would catch a hang).
    served.await_joined(0);
  }
}

TEST_CASE("a join answered with an error by an actor that is not a "
          "gatekeeper ends the node with that error" *
          doctest::timeout(60)) {
  remote_config cfg;
  caf::actor_system sys{cfg};
  auto seen = std::make_shared<std::atomic<int>>(0);
  auto fake = sys.spawn([seen](caf::event_based_actor* self) {
    self->set_default_handler(
        [seen](caf::scheduled_actor*,
               caf::message_view&) -> caf::result<caf::message> {
          ++*seen;
          return caf::make_error(caf::sec::unexpected_message);
        });
    return caf::behavior{[](int32_t) {}};
  });
  auto port = caf::io::publish(fake, 0, "127.0.0.1");
  REQUIRE(port);
  remote_config node_cfg;
  auto node_sys = std::make_unique<caf::actor_system>(node_cfg);
  auto before = node_sys->registry().running();
  auto node = pool::join_remote_pool(*node_sys, "127.0.0.1", *port, token, 3,
                                     remote_demo::hash_job,
                                     pool::node_options{}
                                         .kind(pool::worker_kind::dedicated)
                                         .join_timeout(5s)
                                         .log(pool::silent_log_hook()));
  REQUIRE(!node);
  CHECK(node.error() == caf::sec::unexpected_message);
  CHECK(seen->load() == 1); // node_join
  CHECK(node_sys->registry().running() == before);
  node_sys.reset();
  caf::anon_send_exit(fake, caf::exit_reason::user_shutdown);
}

TEST_CASE("malformed, unexpected and forged messages to the gatekeeper are "
          "dropped and counted without disturbing the pool" *
          doctest::timeout(45)) {
  scratch_dir dir;
  remote_config cfg;
  caf::actor_system sys{cfg};
  served_pool served{sys, pool::pool_options{}};
  child node{dir, "node", served.node_args(token, 4)};
  served.await_joined(4);
  child garbage{dir,
                "garbage",
                {REMOTE_GARBAGE, "127.0.0.1", std::to_string(served.port)}};
  REQUIRE_MESSAGE(garbage.wait(30s) == 0, garbage.out() << garbage.err());
  CHECK(garbage.out().find("dropped-sent 16 refused-joins 2 "
                           "refused-controls 1 forged-sent 3") !=
        std::string::npos);
  auto counters = served.counters();
  MESSAGE(pool::to_string(counters));
  CHECK(counters.dropped == 16);
  CHECK(counters.joins_refused == 2);
  CHECK(counters.controls_refused == 1);
  CHECK(counters.forged == 3);
  CHECK(counters.joins_accepted == 1);
  CHECK(counters.sessions == 1);
  CHECK(served.log.contains("refused node_join"));
  CHECK(served.log.contains("forged down message"));
  // Stats still answer, the node is still joined and work completes.
  auto stats = served.stats();
  CHECK(stats.joined == 4);
  auto got = run_operations(sys, served.handle, 1000, 30s);
  check_all_done(got, 1000);
  CHECK(stop_node(node) > 0);
}

// -- the control program ------------------------------------------------------

TEST_CASE("poolctl: stats match the pool stats and resize takes effect and "
          "errors exit 1 and drain finishes the work and stops the pool" *
          doctest::timeout(60)) {
  scratch_dir dir;
  remote_config cfg;
  caf::actor_system sys{cfg};
  served_pool served{sys, pool::pool_options{}};
  child node{dir, "node", served.node_args(token, 2, 5)};
  served.await_joined(2);
  // An idle pool: its figures do not change between the two snapshots.
  auto own = pool::to_string(served.stats());
  auto ctl = poolctl(dir, served.port, {"stats"});
  CHECK(ctl.status == 0);
  CHECK(ctl.out == own + "\n");
  ctl = poolctl(dir, served.port, {"resize", "3"});
  CHECK(ctl.status == 0);
  CHECK(served.stats().configured == 3);
  CHECK(served.stats().workers == 5);
  // Errors: the shepherd's own, and the gatekeeper's refusal.
  ctl = poolctl(dir, served.port, {"resize", "0"});
  CHECK(ctl.status == 1);
  CHECK(ctl.err.find("pool.invalid_option") != std::string::npos);
  ctl = poolctl(dir, served.port, {"cancel", "123456"});
  CHECK(ctl.status == 1);
  CHECK(ctl.err.find("pool.unknown_operation") != std::string::npos);
  ctl = poolctl(dir, served.port, {"stats"}, "wrong-token");
  CHECK(ctl.status == 1);
  CHECK(ctl.err.find("refused") != std::string::npos);
  ctl = poolctl(dir, served.port, {"resize"});
  CHECK(ctl.status == 2);
  // Drain while 300 operations are under way: all finish, then the pool
  // stops and poolctl returns.
  caf::scoped_actor watcher{sys};
  watcher->monitor(served.handle);
  outcomes got;
  joining_thread submit{
      [&] { got = run_operations(sys, served.handle, 300, 50s); }};
  eventually([&] { return served.stats().submitted == 300; }, 10s);
  ctl = poolctl(dir, served.port, {"drain"});
  submit.join();
  check_all_done(got, 300);
  CHECK(ctl.status == 0);
  CHECK(ctl.out == "ok\n");
  auto stopped = false;
  watcher->receive([&](caf::down_msg&) { stopped = true; },
                   caf::after(10s) >> [] {});
  CHECK(stopped);
  // The gatekeeper went with the pool: the port no longer answers.
  ctl = poolctl(dir, served.port, {"stats"});
  CHECK(ctl.status == 1);
  node.signal(SIGTERM);
  CHECK(node.wait(20s) == 0);
}

// -- the example programs together ------------------------------------------

TEST_CASE("pool_serve with pool_node and poolctl: serve and join and drain "
          "and a node rejoins a restarted server" *
          doctest::timeout(60)) {
  scratch_dir dir;
  auto token_file = secret_file(dir, "token", token);
  auto serve_args = [&](const std::string& port) {
    return std::vector<std::string>{
        POOL_SERVE, "--token-file",    token_file, "--port",
        port,       "--reuse-address", "--submit", "2000"};
  };
  auto server = std::make_unique<child>(dir, "serve1", serve_args("0"));
  auto port_text = first_line(*server);
  auto port = static_cast<uint16_t>(std::stoi(port_text));
  child node{dir,
             "node",
             {POOL_NODE, "--host", "127.0.0.1", "--port", port_text,
              "--token-file", token_file, "--workers", "4"}};
  auto joined = [&](uint16_t p) {
    return eventually(
        [&] {
          auto ctl = poolctl(dir, p, {"stats"});
          return ctl.status == 0 &&
                 ctl.out.find(" joined=4 ") != std::string::npos;
        },
        20s);
  };
  CHECK(joined(port));
  CHECK(eventually(
      [&] {
        return server->out().find("completed 2000 correct 2000") !=
               std::string::npos;
      },
      30s));
  // The server dies; a new one on the same port gets the node back.
  server->kill_now();
  server = std::make_unique<child>(dir, "serve2", serve_args(port_text));
  REQUIRE(first_line(*server) == port_text);
  CHECK(joined(port));
  CHECK(eventually(
      [&] {
        return server->out().find("completed 2000 correct 2000") !=
               std::string::npos;
      },
      30s));
  auto ctl = poolctl(dir, port, {"drain"});
  CHECK(ctl.status == 0);
  CHECK(server->wait(20s) == 0);
  CHECK(server->out().find("pool stopped") != std::string::npos);
  CHECK(stop_node(node) >= 0);
  CHECK(node.err().find("rejoin") != std::string::npos);
}

TEST_CASE("with the durable store, a restarted shepherd loses nothing: "
          "pool_serve SIGKILLed mid-run and restarted over the same file and "
          "port, the node rejoins, and each of 2000 unique operations ends "
          "done once with the right result" *
          doctest::timeout(60)) {
  constexpr int n = 2000;
  scratch_dir dir;
  auto file = dir.path + "/queue.db";
  auto token_file = secret_file(dir, "token", token);
  // 2 ms a job on 1 local + 2 node workers: about 1.5 s of work, so the
  // kill lands in the middle.
  auto serve_args = [&](const std::string& port) {
    return std::vector<std::string>{
        POOL_SERVE, "--token-file",    token_file,  "--port",
        port,       "--workers",       "1",         "--delay-ms",
        "2",        "--reuse-address", "--durable", file,
        "--submit", std::to_string(n)};
  };
  auto server = std::make_unique<child>(dir, "serve1", serve_args("0"));
  auto port_text = first_line(*server);
  auto port = static_cast<uint16_t>(std::stoi(port_text));
  child node{dir,
             "node",
             {POOL_NODE, "--host", "127.0.0.1", "--port", port_text,
              "--token-file", token_file, "--workers", "2", "--delay-ms", "2"}};
  // Whether the number after `key=` in poolctl's one-line stats passes.
  auto stat_is = [&](const std::string& key, auto pred) {
    auto ctl = poolctl(dir, port, {"stats"});
    auto i = ctl.out.find(" " + key + "=");
    return ctl.status == 0 && i != std::string::npos &&
           pred(std::atoll(ctl.out.c_str() + i + key.size() + 2));
  };
  REQUIRE(eventually(
      [&] { return stat_is("joined", [](long long x) { return x == 2; }); },
      20s));
  // Mid-run: some done, most not.
  REQUIRE(eventually(
      [&] {
        return stat_is("completed", [](long long x) { return x >= 200; });
      },
      20s));
  server->kill_now();
  CHECK(server->out().find("completed " + std::to_string(n)) ==
        std::string::npos);
  int64_t done_before = 0;
  {
    pool::test::connection db{file};
    done_before = db.query("SELECT count(*) FROM operations WHERE state = 2");
  }
  MESSAGE(done_before << " of " << n << " done when the server was killed");
  CHECK(done_before > 0);
  CHECK(done_before < n);
  // Restarted over the same file and port; it submits 1..n again.
  server = std::make_unique<child>(dir, "serve2", serve_args(port_text));
  REQUIRE(first_line(*server) == port_text);
  REQUIRE(eventually(
      [&] {
        return server->out().find("completed " + std::to_string(n) +
                                  " correct " + std::to_string(n)) !=
               std::string::npos;
      },
      30s));
  // The node came back to the new server (with its backoff) and worked.
  CHECK(eventually(
      [&] { return stat_is("joined", [](long long x) { return x == 2; }); },
      20s));
  auto ctl = poolctl(dir, port, {"drain"});
  CHECK(ctl.status == 0);
  CHECK(server->wait(20s) == 0);
  CHECK(stop_node(node) > 0);
  CHECK(node.err().find("rejoin") != std::string::npos);
  // On disk: exactly one operation per input, each done; none lost, none
  // added twice by the second run's submits.
  pool::test::connection db{file};
  CHECK(db.query("SELECT count(*) FROM operations") == n);
  CHECK(db.query("SELECT count(*) FROM operations WHERE state = 2") == n);
  CHECK(db.query("SELECT count(DISTINCT key) FROM operations") == n);
  CHECK(db.query("SELECT count(*) FROM operations WHERE key NOT LIKE "
                 "'input:%'") == 0);
}
