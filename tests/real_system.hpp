#pragma once

// Configuration for tests on CAF's real (threaded) scheduler.

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "pool/all.hpp"

namespace pool::test {

struct real_config : caf::actor_system_config {
  real_config() {
    pool::configure(*this);
    set("logger.verbosity", caf::atom("quiet"));
  }
};

/// Asks `pool` for its stats from a scoped actor, waiting at most 10 s.
inline pool::pool_stats stats_now(caf::scoped_actor& self,
                                  const caf::actor& pool) {
  pool::pool_stats result;
  self->request(pool, std::chrono::seconds(10), pool::pool_stats_atom_v)
      .receive([&](pool::pool_stats& st) { result = st; },
               [](caf::error& err) { FAIL(pool::describe(err)); });
  return result;
}

} // namespace pool::test
