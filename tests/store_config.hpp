#pragma once

// The actor system of a store-level test (and of its child processes): the
// pool's message types registered, one scheduler thread, no CAF log.

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>

#include "pool/configure.hpp"

namespace pool::test {

struct store_config : caf::actor_system_config {
  store_config() {
    pool::configure(*this);
    set("logger.verbosity", caf::atom("quiet"));
    set("scheduler.max-threads", 1);
  }
};

} // namespace pool::test
