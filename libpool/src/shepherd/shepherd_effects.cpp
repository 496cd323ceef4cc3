#include "pool/detail/shepherd_effects.hpp"

#include <caf/make_message.hpp>

#include "pool/type_ids.hpp"

namespace pool {

shepherd_effects::~shepherd_effects() = default;

void shepherd_effects::work_to_do(const worker_slot& worker,
                                  work_record record) {
  to_worker(worker, caf::make_message(work_to_do_atom_v, std::move(record)));
}

void shepherd_effects::work_batch(const worker_slot& worker,
                                  std::vector<work_record> batch, bool each) {
  to_worker(worker,
            caf::make_message(work_to_do_atom_v, std::move(batch), each));
}

void shepherd_effects::respond(const reply_to& to, prepared_reply&& reply) {
  respond(to, reply.take_message());
}

void shepherd_effects::go_to_sleep(const worker_slot& worker) {
  to_worker(worker, caf::make_message(go_to_sleep_atom_v));
}

std::string to_string(timer_kind x) {
  switch (x) {
    case timer_kind::due:
      return "due_timer";
    case timer_kind::attempt:
      return "att_timer";
    case timer_kind::drain:
      return "drain_tmr";
    case timer_kind::backlog:
      return "bklg_tmr";
    case timer_kind::idle:
      return "idle_tmr";
    case timer_kind::overload:
      return "ovld_tmr";
    case timer_kind::resize_step:
      return "resize_step";
    case timer_kind::probe:
      return "probe_tmr";
  }
  return "timer";
}

void timer_slot::arm(shepherd_effects& fx, time_point deadline,
                     timer_event ev) {
  if (at_ && *at_ <= deadline)
    return;
  at_ = deadline;
  auto now = fx.now();
  fx.schedule(deadline > now ? deadline - now : caf::timespan::zero(), ev);
}

void timer_slot::fired(time_point now) {
  if (at_ && now >= *at_)
    at_.reset();
}

} // namespace pool
