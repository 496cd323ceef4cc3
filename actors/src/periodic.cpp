// The periodic actor: a cron schedule's ticks, each enqueued once
// (docs/operations.md "Periodic operations").
#include "pool/periodic.hpp"

#include <algorithm>

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "pool/cron.hpp"
#include "pool/errors.hpp"
#include "pool/protocol.hpp"

namespace pool {

namespace {

using sys_time = std::chrono::system_clock::time_point;

struct periodic_state {
  static inline const char* name = "pool.periodic";
};

/// The unique key of one tick.
std::string tick_key(const std::string& name, sys_time tick) {
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(
                  tick.time_since_epoch())
                  .count();
  return "cron:" + name + ":" + std::to_string(secs);
}

caf::behavior periodic_actor(caf::stateful_actor<periodic_state>* self,
                             caf::actor pool, periodic_spec spec,
                             cron_schedule schedule, caf::message input) {
  self->monitor(pool);
  self->set_down_handler([self](caf::down_msg& msg) {
    self->quit(msg.reason); // the pool stopped: no more ticks
  });
  auto clock = spec.clock;
  auto log = spec.log;
  auto name = spec.name;
  auto warn = [log, name](const std::string& text) {
    try {
      log(log_level::warning, "periodic " + name, text);
    } catch (...) {
      // A failing log hook must not stop the schedule.
    }
  };
  // The tick the timer is armed for (none: the schedule has no more).
  auto next = std::make_shared<std::optional<sys_time>>();
  auto arm = [self, clock, next](std::optional<sys_time> tick) {
    *next = tick;
    if (!tick)
      return;
    auto wait = std::max(std::chrono::duration_cast<caf::timespan>(*tick -
                                                                   clock()),
                         caf::timespan::zero());
    self->delayed_send(self, wait, cron_tick_atom_v, tick->time_since_epoch().count());
  };
  arm(schedule.next_after(clock()));
  return {
      [=](cron_tick_atom, int64_t armed) {
        if (self->current_sender() != self->ctrl() || !*next ||
            next->value().time_since_epoch().count() != armed)
          return; // not the timer that counts now
        auto tick = **next;
        auto now = clock();
        if (now < tick) {
          arm(tick); // woke early (the wall clock was set back)
          return;
        }
        auto key = tick_key(name, tick);
        self
            ->request(pool, caf::infinite,
                      caf::make_message(enqueue_once_atom_v, key) + input)
            .then([](uint64_t) {},
                  [warn, key](caf::error& err) {
                    // key_taken: another process of a shared queue added
                    // this tick at the same moment; it runs there.
                    if (!is(err, pool_errc::key_taken))
                      warn("the tick " + key + " was refused: " +
                           describe(err));
                  });
        arm(schedule.next_after(std::max(tick, now)));
      },
      // The outcomes of the ticks' operations: the pool logs failures.
      [](op_done_atom, uint64_t, caf::message&) {},
      [](op_failed_atom, uint64_t, caf::error&) {},
  };
}

} // namespace

caf::expected<caf::actor> spawn_periodic(caf::actor_system& sys,
                                         caf::actor pool, periodic_spec spec,
                                         caf::message input) {
  if (!pool)
    return caf::make_error(pool_errc::invalid_option, std::string{"pool"},
                           std::string{"must be a pool's handle"});
  if (spec.name.empty() || spec.name.size() > 200)
    return caf::make_error(pool_errc::invalid_option, std::string{"name"},
                           "must be 1 to 200 bytes (got " +
                               std::to_string(spec.name.size()) + ")");
  auto schedule = cron_schedule::parse(spec.cron, spec.time_zone);
  if (!schedule)
    return std::move(schedule.error());
  if (!spec.clock)
    spec.clock = [] { return std::chrono::system_clock::now(); };
  if (!spec.log)
    spec.log = default_log_hook();
  return sys.spawn(periodic_actor, std::move(pool), std::move(spec),
                   std::move(*schedule), std::move(input));
}

} // namespace pool
