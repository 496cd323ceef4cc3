#include <climits>

#include "pool/errors.hpp"
#include "pool/sqlite_store.hpp"
#include "pool/store_factory.hpp"

namespace pool {

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

namespace {

caf::expected<std::shared_ptr<work_store>> open_sqlite(caf::actor_system& sys,
                                                       const pool_options& opts) {
  auto sqlite_opts = sqlite_options{}.synchronous(opts.durability());
  if (opts.retention())
    sqlite_opts.retention(*opts.retention());
  auto store = sqlite_store::open(sys, *opts.durable_path(), sqlite_opts);
  if (!store)
    return std::move(store.error());
  return std::shared_ptr<work_store>{std::move(*store)};
}

} // namespace

} // namespace pool

/// Registers the SQLite store with `pool::store_for` when the program links
/// `pool::sqlite`: the target's link options name this symbol, so the
/// linker keeps this file (and runs its initializer) even from a static
/// archive that nothing else in the program refers to.
extern "C" {
extern const int pool_sqlite_store_registered;
const int pool_sqlite_store_registered
    = (pool::register_store("sqlite", &pool::open_sqlite), 1);
}
