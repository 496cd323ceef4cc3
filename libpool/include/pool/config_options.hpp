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
/// | name | type | default |
/// | --- | --- | --- |
/// | `workers` | integer | 4 (dedicated: cores − 1) |
/// | `dedicated` | boolean | false |
/// | `max-attempts` | integer | 1 |
/// | `backoff-initial`, `backoff-max` | timespan | 100ms, 30s |
/// | `backoff-multiplier`, `jitter` | real | 2.0, 0.2 |
/// | `seed` | integer | random |
/// | `attempt-timeout` | timespan | none |
/// | `max-restarts`, `restart-window` | integer, timespan | 10, 10s |
/// | `skip-orphaned` | boolean | false |
/// | `name` | string | `pool` |
/// | `capacity`, `wait-when-full` | integer | unbounded, 0 |
/// | `overload-threshold`, `overload-interval` | integer, timespan | 100 ×
/// workers, 60s | | `backlog-alarm` | timespan | off | | `autoscale-min`,
/// `autoscale-max` | integer | off (set both) | | `autoscale-grow-after`,
/// `autoscale-shrink-after` | timespan | 10s, 60s |
void declare_options(caf::config_option_set& options,
                     caf::string_view category = "pool");

/// Reads the options declared by `declare_options` from `cfg`, starting
/// from `defaults`; returns the validation error naming the first bad field
/// (e.g. `--pool.workers=-1`).
caf::expected<pool_options> options_from(const caf::actor_system_config& cfg,
                                         pool_options defaults = pool_options{},
                                         const std::string& category = "pool");

} // namespace pool
