#include <climits>

#include "pool/errors.hpp"
#include "pool/memory_store.hpp"
#include "pool/pg_store.hpp"
#include "pool/sqlite_store.hpp"

namespace pool {

std::string to_string(sqlite_sync x) {
  switch (x) {
    case sqlite_sync::full:
      return "full";
    case sqlite_sync::normal:
      return "normal";
  }
  return "sqlite_sync(" + std::to_string(static_cast<int>(x)) + ")";
}

caf::error sqlite_options::validate() const {
  if (busy_timeout_.count() < 0)
    return caf::make_error(pool_errc::invalid_option,
                           std::string{"busy_timeout"},
                           std::string{"must not be negative"});
  if (busy_timeout_ > std::chrono::milliseconds(INT_MAX))
    return caf::make_error(pool_errc::invalid_option,
                           std::string{"busy_timeout"},
                           std::string{"must be at most 2^31 - 1 ms"});
  if (synchronous_ != sqlite_sync::full && synchronous_ != sqlite_sync::normal)
    return caf::make_error(pool_errc::invalid_option,
                           std::string{"synchronous"},
                           std::string{"must be full or normal"});
  if (retention_ && *retention_ <= caf::timespan::zero())
    return caf::make_error(pool_errc::invalid_option, std::string{"retention"},
                           std::string{"must be greater than zero"});
  return caf::none;
}

caf::expected<std::shared_ptr<work_store>> store_for(caf::actor_system& sys,
                                                     const pool_options& opts) {
  if (opts.postgres_conninfo()) {
    auto pg_opts = opts.postgres_options();
    if (opts.retention() && !pg_opts.retention())
      pg_opts.retention(*opts.retention());
    auto store = pg_store::open(sys, *opts.postgres_conninfo(), pg_opts);
    if (!store)
      return std::move(store.error());
    return std::shared_ptr<work_store>{std::move(*store)};
  }
  if (!opts.durable_path())
    return std::shared_ptr<work_store>{std::make_shared<memory_store>()};
  auto sqlite_opts = sqlite_options{}.synchronous(opts.durability());
  if (opts.retention())
    sqlite_opts.retention(*opts.retention());
  auto store = sqlite_store::open(sys, *opts.durable_path(), sqlite_opts);
  if (!store)
    return std::move(store.error());
  return std::shared_ptr<work_store>{std::move(*store)};
}

} // namespace pool
