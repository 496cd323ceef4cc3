#pragma once

#include <chrono>
#include <functional>
#include <string>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>

#include "pool/log.hpp"

namespace pool {

/// When a periodic operation runs, and what it is called.
struct periodic_spec {
  /// Names the schedule in each tick's unique key
  /// (`cron:<name>:<tick, Unix seconds>`) and in log lines: give every
  /// schedule of a queue its own name. 1 to 200 bytes.
  std::string name;
  /// A cron expression (`pool::cron_schedule`): `*/5 * * * *`, `@daily`.
  std::string cron;
  /// An IANA time zone for the cron fields.
  std::string time_zone = "UTC";
  /// The wall clock; default `std::chrono::system_clock::now`. Tests
  /// inject one that follows simulated time.
  std::function<std::chrono::system_clock::time_point()> clock;
  /// Where warnings go (a refused tick); default `default_log_hook()`.
  log_hook log;
};

/// Spawns an actor that enqueues `input` into `pool` at every tick of
/// `spec` as `(enq_once, "cron:<name>:<tick>", input...)`. With a durable
/// store each tick runs once across restarts of the pool, and with a
/// PostgreSQL queue once across every process running the same schedule:
/// the tick's key is looked up however long ago it finished (while the
/// store keeps it). Ticks missed while nothing ran are skipped, as cron
/// does; a late wake-up runs the tick it was armed for, then the next one
/// after now. The actor stops when `pool` stops, or when sent an exit.
/// Returns `pool.invalid_option` naming `name`, `cron` or `time_zone` for
/// a bad spec, or `pool` when it is invalid. `input` must be the pool's
/// input; the pool refuses anything else, and each refusal is logged.
caf::expected<caf::actor> spawn_periodic(caf::actor_system& sys,
                                         caf::actor pool, periodic_spec spec,
                                         caf::message input);

/// As above, with the input given as values.
template <class T, class... Ts>
caf::expected<caf::actor>
spawn_periodic(caf::actor_system& sys, caf::actor pool, periodic_spec spec,
               T x, Ts... xs) {
  return spawn_periodic(sys, std::move(pool), std::move(spec),
                        caf::make_message(std::move(x), std::move(xs)...));
}

} // namespace pool
