#pragma once

#include <functional>
#include <memory>
#include <string>

#include <caf/expected.hpp>
#include <caf/fwd.hpp>

namespace pool {

class pool_options;
class work_store;

/// Opens the store a pool keeps its queue in, from the pool's options.
/// Blocks while opening (a file, a connection).
using store_factory = std::function<caf::expected<std::shared_ptr<work_store>>(
    caf::actor_system&, const pool_options&)>;

/// Makes `factory` the one `store_for` calls for options that name `kind`:
/// "sqlite" (`pool_options::durable`) or "postgres"
/// (`pool_options::postgres`). The store libraries register themselves
/// when a program links them (`pool::sqlite`, `pool::postgres`); a program
/// that brings its own store passes it to `pool_options::store` instead.
/// An empty factory removes the kind's registration.
void register_store(const std::string& kind, store_factory factory);

/// The store `opts` asks for: `opts.store()` when set, an SQLite file with
/// `opts.durable(path)`, PostgreSQL with `opts.postgres(conninfo)`, else a
/// `memory_store`. An error of code `pool_errc::invalid_option` when the
/// options name a store this program does not link (link `pool::sqlite` or
/// `pool::postgres`). Blocks while opening a durable store.
caf::expected<std::shared_ptr<work_store>> store_for(caf::actor_system& sys,
                                                     const pool_options& opts);

} // namespace pool
