#pragma once

#include <caf/actor_system_config.hpp>

namespace pool {

/// Registers the pool's message types and its error category with `cfg`.
/// Call it once from your config's constructor (before the actor system
/// starts); required for remote workers, durable queues and readable error
/// text via `caf::actor_system::render`.
void configure(caf::actor_system_config& cfg);

} // namespace pool
