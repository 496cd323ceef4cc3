#include "pool/configure.hpp"

#include "pool/errors.hpp"
#include "pool/type_ids.hpp"

namespace pool {

void configure(caf::actor_system_config& cfg) {
  cfg.add_message_types<caf::id_block::pool>();
  cfg.add_error_category(pool_error_category, render_pool_error);
}

} // namespace pool
