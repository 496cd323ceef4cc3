// The remote layer's public functions given empty values: null and wrong
// handles, empty errors, default options. Each gives a clear error or a
// defined result; none crashes or waits.
#include "fixture.hpp"

namespace {

const auto valid_remote =
    pool::remote_options{}.token(token).log(pool::silent_log_hook());

} // namespace

TEST_CASE("describe_remote: an empty error reads none" * doctest::timeout(10)) {
  CHECK(pool::describe_remote(caf::error{}) == "none");
  CHECK(pool::render_remote_error(0, pool::remote_error_category,
                                  caf::message{}) == "pool_rmt.none");
}

TEST_CASE("to_string(gatekeeper_stats): default counters read as zeros" *
          doctest::timeout(10)) {
  auto text = pool::to_string(pool::gatekeeper_stats{});
  CHECK(text.find("joins_accepted=0") != std::string::npos);
}

TEST_CASE("remote_options: default options lack only the token, "
          "node_options: default options are valid" *
          doctest::timeout(10)) {
  auto text = pool::describe(pool::remote_options{}.validate());
  CHECK(text.find("token: must not be empty") != std::string::npos);
  CHECK_FALSE(pool::node_options{}.validate());
}

TEST_CASE("spawn_gatekeeper: a null pool is refused" * doctest::timeout(30)) {
  remote_config cfg;
  caf::actor_system sys{cfg};
  auto gk = pool::spawn_gatekeeper(sys, caf::actor{}, valid_remote);
  REQUIRE_FALSE(gk);
  CHECK(pool::describe(gk.error()) ==
        "pool.invalid_option: pool: must be a valid actor");
  auto typed =
      pool::spawn_gatekeeper<int64_t(int32_t)>(sys, caf::actor{}, valid_remote);
  CHECK_FALSE(typed);
}

TEST_CASE("publish_gatekeeper: a null handle, or an actor that is no "
          "gatekeeper, is refused with what to pass" *
          doctest::timeout(30)) {
  remote_config cfg;
  caf::actor_system sys{cfg};
  auto none = pool::publish_gatekeeper(sys, caf::actor{}, valid_remote);
  REQUIRE_FALSE(none);
  CHECK(pool::describe(none.error()) ==
        "pool.invalid_option: gatekeeper: must be a valid actor");
  // A pool's own handle where its gatekeeper belongs.
  auto p = pool::spawn_pool(
      sys, remote_demo::hash_job,
      pool::pool_options{}.workers(1).log(pool::silent_log_hook()));
  REQUIRE(p);
  pool_guard guard{*p};
  auto wrong = pool::publish_gatekeeper(sys, *p, valid_remote);
  REQUIRE_FALSE(wrong);
  auto text = pool::describe(wrong.error());
  INFO(text);
  CHECK(text.find("gatekeeper: is not a pool's gatekeeper") !=
        std::string::npos);
  CHECK(text.find("spawn_gatekeeper") != std::string::npos);
}

TEST_CASE("publish_pool: a null pool is refused" * doctest::timeout(30)) {
  remote_config cfg;
  caf::actor_system sys{cfg};
  auto port =
      pool::publish_pool<int64_t(int32_t)>(sys, caf::actor{}, valid_remote);
  REQUIRE_FALSE(port);
  CHECK(pool::is(port.error(), pool::pool_errc::invalid_option));
}

TEST_CASE("join_remote_pool: an empty host, port 0, an empty token and no "
          "workers are refused before any connection" *
          doctest::timeout(30)) {
  remote_config cfg;
  caf::actor_system sys{cfg};
  auto field_of = [&](std::string host, uint16_t port, std::string tok,
                      size_t n) {
    auto node = pool::join_remote_pool(
        sys, std::move(host), port, std::move(tok), n, remote_demo::hash_job);
    REQUIRE_FALSE(node);
    auto text = pool::describe(node.error());
    INFO(text);
    CHECK(pool::is(node.error(), pool::pool_errc::invalid_option));
    return text;
  };
  CHECK(field_of("", 4242, token, 1).find("host: must not be empty") !=
        std::string::npos);
  CHECK(field_of("127.0.0.1", 0, token, 1).find("port: must not be 0") !=
        std::string::npos);
  CHECK(field_of("127.0.0.1", 4242, "", 1).find("token: must not be empty") !=
        std::string::npos);
  CHECK(field_of("127.0.0.1", 4242, token, 0).find("workers") !=
        std::string::npos);
}

TEST_CASE("leave_remote_pool: a null node is refused at once" *
          doctest::timeout(10)) {
  remote_config cfg;
  caf::actor_system sys{cfg};
  CHECK(pool::describe(pool::leave_remote_pool(sys, caf::actor{})) ==
        "pool.invalid_option: node: must be a valid actor");
}
