#pragma once

// A private PostgreSQL server (pg_fixture.hpp), an actor system, and
// `pg_store`s opened on that server: the fixture of the store-level tests.

#include <memory>
#include <string>

#include <caf/actor_system.hpp>
#include <doctest/doctest.h>

#include "pool/errors.hpp"
#include "pool/pg_store.hpp"

#include "pg_fixture.hpp"
#include "store_config.hpp"

namespace pool::test {

struct pg_store_fixture {
  explicit pg_store_fixture(bool tls = false) : pg(tls) {
    // nop
  }

  // The cluster comes first: it forks before the actor system starts
  // threads.
  pg_cluster pg;
  store_config cfg;
  caf::actor_system sys{cfg};
  pg_store::time_point now = sys.clock().now();

  caf::expected<std::shared_ptr<pg_store>> try_open(pg_options opts = {},
                                                    std::string conninfo = {}) {
    if (conninfo.empty())
      conninfo = pg.conninfo();
    return pg_store::open(sys, conninfo, std::move(opts));
  }

  std::shared_ptr<pg_store> open(pg_options opts = {},
                                 std::string conninfo = {}) {
    auto result = try_open(std::move(opts), std::move(conninfo));
    REQUIRE_MESSAGE(result, pool::describe(result.error()));
    return *result;
  }
};

/// A store fixture whose server takes TLS connections.
struct pg_tls_store_fixture : pg_store_fixture {
  pg_tls_store_fixture() : pg_store_fixture(true) {
    // nop
  }
};

/// A new operation of `store`, numbered from its block.
inline work_record store_entry(pg_store& store, uint64_t n = 1,
                               uint32_t attempt = 1) {
  return work_record{attempt_id{store.last_operation_id() + n, attempt},
                     caf::make_message(int32_t{7}, std::string{"x"})};
}

} // namespace pool::test
