#include "pool/store_factory.hpp"

#include <utility>

#include "pool/errors.hpp"
#include "pool/memory_store.hpp"
#include "pool/options.hpp"

#include "locked_map.hpp"

namespace pool {

namespace {

/// Constructed on first use: the store libraries register from their own
/// static initializers, in any order.
detail::locked_map<std::string, store_factory>& stores() {
  static detail::locked_map<std::string, store_factory> instance;
  return instance;
}

caf::error not_linked(const char* field, const char* target) {
  return caf::make_error(
      pool_errc::invalid_option, std::string{field},
      std::string{"names a store this program does not link: link "} + target
          + " (CMake: target_link_libraries(your_program PRIVATE " + target
          + "))");
}

} // namespace

void register_store(const std::string& kind, store_factory factory) {
  stores().set(kind, std::move(factory));
}

caf::expected<std::shared_ptr<work_store>> store_for(caf::actor_system& sys,
                                                     const pool_options& opts) {
  if (opts.store())
    return opts.store()(sys, opts);
  if (opts.postgres_conninfo()) {
    if (auto open = stores().get("postgres"))
      return open(sys, opts);
    return not_linked("postgres", "pool::postgres");
  }
  if (opts.durable_path()) {
    if (auto open = stores().get("sqlite"))
      return open(sys, opts);
    return not_linked("durable", "pool::sqlite");
  }
  return std::shared_ptr<work_store>{std::make_shared<memory_store>()};
}

} // namespace pool
