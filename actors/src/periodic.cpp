// The periodic actor: a cron schedule's ticks, each enqueued once
// (docs/operations.md "Periodic operations").
#include "pool/periodic.hpp"

#include <algorithm>
#include <optional>

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
  caf::actor pool;
  periodic_spec spec;
  std::optional<cron_schedule> schedule;
  caf::message input;
  /// The tick the timer is armed for (none: the schedule has no more).
  std::optional<sys_time> next;
};

using periodic_self = caf::stateful_actor<periodic_state>*;

/// The unique key of one tick.
std::string tick_key(const std::string& name, sys_time tick) {
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(
                  tick.time_since_epoch())
                  .count();
  return "cron:" + name + ":" + std::to_string(secs);
}

void warn(periodic_self self, const std::string& text) {
  try {
    self->state.spec.log(log_level::warning,
                         "periodic " + self->state.spec.name, text);
  } catch (...) {
    // A failing log hook must not stop the schedule.
  }
}

/// Arms the timer for `tick`; the timer names it, so an older one that
/// fires later is told apart.
void arm(periodic_self self, std::optional<sys_time> tick) {
  auto& st = self->state;
  st.next = tick;
  if (!tick)
    return;
  auto wait = std::chrono::duration_cast<caf::timespan>(*tick -
                                                        st.spec.clock());
  self->delayed_send(self, std::max(wait, caf::timespan::zero()),
                     cron_tick_atom_v, tick->time_since_epoch().count());
}

void on_tick(periodic_self self, int64_t armed) {
  auto& st = self->state;
  if (self->current_sender() != self->ctrl() || !st.next ||
      st.next->time_since_epoch().count() != armed)
    return; // not the timer that counts now
  auto tick = *st.next;
  auto now = st.spec.clock();
  if (now < tick) {
    arm(self, tick); // woke early (the wall clock was set back)
    return;
  }
  auto key = tick_key(st.spec.name, tick);
  self
      ->request(st.pool, caf::infinite,
                caf::make_message(enqueue_once_atom_v, key) + st.input)
      .then([](uint64_t) {},
            [self, key](caf::error& err) {
              // key_taken: another process of a shared queue added this
              // tick at the same moment; it runs there.
              if (!is(err, pool_errc::key_taken))
                warn(self, "the tick " + key + " was refused: " +
                               describe(err));
            });
  arm(self, st.schedule->next_after(std::max(tick, now)));
}

caf::behavior periodic_actor(periodic_self self, caf::actor pool,
                             periodic_spec spec, cron_schedule schedule,
                             caf::message input) {
  auto& st = self->state;
  st.pool = std::move(pool);
  st.spec = std::move(spec);
  st.schedule = std::move(schedule);
  st.input = std::move(input);
  self->monitor(st.pool);
  self->set_down_handler([self](caf::down_msg& msg) {
    self->quit(msg.reason); // the pool stopped: no more ticks
  });
  arm(self, st.schedule->next_after(st.spec.clock()));
  return {
      [self](cron_tick_atom, int64_t armed) { on_tick(self, armed); },
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
