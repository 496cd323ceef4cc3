#include "pool/configure.hpp"

#include <caf/settings.hpp>

#include "pool/errors.hpp"
#include "pool/type_ids.hpp"

namespace pool {

void configure(caf::actor_system_config& cfg) {
  cfg.add_message_types<caf::id_block::pool>();
  cfg.add_error_category(pool_error_category, render_pool_error);
  // CAF 0.17's idle scheduler threads poll their queue 500 times with a
  // 50 us sleep in between before they wait on a condition variable that
  // an enqueue signals. A message from outside the scheduler (a dedicated
  // worker, the shepherd of a dedicated pool, a plain thread) then waits
  // for the next poll, ~100 us here, and the polling costs CPU while idle.
  // Skipping that phase wakes the thread at once. Kept if already set
  // (config file, command line, or the application before this call).
  if (caf::get_if(&cfg.content, "work-stealing.moderate-poll-attempts") ==
      nullptr)
    cfg.set("work-stealing.moderate-poll-attempts", size_t{0});
}

} // namespace pool
