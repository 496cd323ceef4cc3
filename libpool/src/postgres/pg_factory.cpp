// Registers the PostgreSQL store with `pool::store_for` when a program links
// `pool::postgres` (the way `sqlite_options.cpp` registers SQLite).
#include "pool/options.hpp"
#include "pool/pg_store.hpp"
#include "pool/store_factory.hpp"

namespace pool {

namespace {

caf::expected<std::shared_ptr<work_store>> open_pg(caf::actor_system& sys,
                                                   const pool_options& opts) {
  auto pg_opts = opts.postgres_options();
  if (opts.retention() && !pg_opts.retention())
    pg_opts.retention(*opts.retention());
  auto store = pg_store::open(sys, *opts.postgres_conninfo(), pg_opts);
  if (!store)
    return std::move(store.error());
  return std::shared_ptr<work_store>{std::move(*store)};
}

} // namespace

} // namespace pool

/// The target's link options name this symbol, so the linker keeps this
/// file (and runs its initializer) even from a static archive that
/// nothing else in the program refers to.
extern "C" {
extern const int pool_postgres_store_registered;
const int pool_postgres_store_registered
    = (pool::register_store("postgres", &pool::open_pg), 1);
}
