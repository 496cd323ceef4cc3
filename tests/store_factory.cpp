// store_for and the store registry. This test links neither pool::sqlite nor
// pool::postgres: the stores they register are absent here, as in a program
// that picked the in-memory core alone.
#include "pool/store_factory.hpp"

#include <doctest/doctest.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "pool/errors.hpp"
#include "pool/memory_store.hpp"
#include "pool/options.hpp"

namespace {

struct fixture {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
};

std::string why(const caf::error& err) {
  return pool::describe(err);
}

} // namespace

TEST_CASE("store_for: no store named gives the in-memory store" *
          doctest::timeout(30)) {
  fixture f;
  auto store = pool::store_for(f.sys, pool::pool_options{});
  REQUIRE(store);
  CHECK(dynamic_cast<pool::memory_store*>(store->get()) != nullptr);
}

TEST_CASE("store_for: durable without pool::sqlite says which target to link" *
          doctest::timeout(30)) {
  fixture f;
  auto store = pool::store_for(f.sys, pool::pool_options{}.durable("x.db"));
  REQUIRE_FALSE(store);
  CHECK(pool::is(store.error(), pool::pool_errc::invalid_option));
  CHECK(why(store.error()).find("durable") != std::string::npos);
  CHECK(why(store.error()).find("link pool::sqlite") != std::string::npos);
}

TEST_CASE("store_for: postgres without pool::postgres says which target to link" *
          doctest::timeout(30)) {
  fixture f;
  auto store = pool::store_for(
      f.sys, pool::pool_options{}.postgres("postgres://u@127.0.0.1/db"));
  REQUIRE_FALSE(store);
  CHECK(why(store.error()).find("link pool::postgres") != std::string::npos);
}

TEST_CASE("store_for: a registered kind opens, and unregistering removes it" *
          doctest::timeout(30)) {
  fixture f;
  std::string seen;
  pool::register_store("sqlite", [&](caf::actor_system&,
                                     const pool::pool_options& opts)
                                     -> caf::expected<
                                         std::shared_ptr<pool::work_store>> {
    seen = *opts.durable_path();
    return std::shared_ptr<pool::work_store>{
        std::make_shared<pool::memory_store>()};
  });
  auto store = pool::store_for(f.sys, pool::pool_options{}.durable("a.db"));
  CHECK(store);
  CHECK(seen == "a.db");
  pool::register_store("sqlite", {});
  CHECK_FALSE(pool::store_for(f.sys, pool::pool_options{}.durable("a.db")));
}

TEST_CASE("store_for: the options' own factory wins and sees every option" *
          doctest::timeout(30)) {
  fixture f;
  int calls = 0;
  auto opts = pool::pool_options{}.durable("b.db").workers(3).store(
      [&](caf::actor_system&, const pool::pool_options& o)
          -> caf::expected<std::shared_ptr<pool::work_store>> {
        ++calls;
        CHECK(o.workers() == 3u);
        CHECK(*o.durable_path() == "b.db");
        return std::shared_ptr<pool::work_store>{
            std::make_shared<pool::memory_store>()};
      });
  auto store = pool::store_for(f.sys, opts);
  CHECK(store);
  CHECK(calls == 1);
  // Its errors reach the caller as they are.
  opts.store([](caf::actor_system&, const pool::pool_options&)
                 -> caf::expected<std::shared_ptr<pool::work_store>> {
    return caf::make_error(pool::pool_errc::store_failed, std::string{"mine"});
  });
  auto failed = pool::store_for(f.sys, opts);
  REQUIRE_FALSE(failed);
  CHECK(pool::is(failed.error(), pool::pool_errc::store_failed));
}
