#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/config_option_set.hpp>
#include <caf/expected.hpp>

#include "pool/options.hpp"

namespace pool {

/// Declares the pool's options under `category` (default `pool`) so that
/// CAF accepts them on the command line (`--pool.workers=8`) and in
/// `caf-application.ini` (`[pool]` then `workers=8`). Call it from your
/// config's constructor: `pool::declare_options(custom_options_);`.
///
/// Names, types and defaults: the table in docs/operations.md
/// ("Configuration"), e.g. `workers`, `dedicated`, `max-attempts`,
/// `attempt-timeout`, `capacity`, `backlog-alarm`, `autoscale-min`,
/// `durable`.
void declare_options(caf::config_option_set& options,
                     caf::string_view category = "pool");

/// Reads the options declared by `declare_options` from `cfg`, starting
/// from `defaults`; returns the validation error naming the first bad field
/// (e.g. `--pool.workers=-1`).
caf::expected<pool_options> options_from(const caf::actor_system_config& cfg,
                                         pool_options defaults = pool_options{},
                                         const std::string& category = "pool");

} // namespace pool
