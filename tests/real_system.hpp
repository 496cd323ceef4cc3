#pragma once

// Configuration for tests on CAF's real (threaded) scheduler.

#include <caf/all.hpp>

#include "pool/all.hpp"

namespace pool::test {

struct real_config : caf::actor_system_config {
  real_config() {
    pool::configure(*this);
    set("logger.verbosity", caf::atom("quiet"));
  }
};

} // namespace pool::test
