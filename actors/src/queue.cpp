#include "pool/queue.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/result.hpp>

#include "pool/errors.hpp"
#include "pool/protocol.hpp"

namespace pool {

namespace {

queue_counts counts_of(work_store& store, work_store::time_point now) {
  queue_counts result;
  result.available = store.available(now);
  result.delayed = store.delayed(now);
  if (auto due = store.next_due(now))
    result.next_due_in = *due - now;
  return result;
}

} // namespace

caf::behavior queue_actor(caf::stateful_actor<queue_state>* self,
                          std::shared_ptr<work_store> store) {
  self->state.store = std::move(store);
  return {
      [self](add_work_atom, work_record& record,
             caf::timespan delay) -> caf::result<queue_counts> {
        auto& store = *self->state.store;
        auto now = self->clock().now();
        if (delay < caf::timespan::zero())
          delay = caf::timespan::zero();
        if (auto err = store.push(std::move(record), now + delay, now))
          return err;
        return counts_of(store, now);
      },
      [self](get_work_atom) -> caf::message {
        auto& store = *self->state.store;
        auto now = self->clock().now();
        if (auto record = store.pop_due(now))
          return caf::make_message(std::move(*record));
        auto due = store.next_due(now);
        auto wait = due ? *due - now : caf::timespan::max();
        return caf::make_message(no_work_atom_v, wait);
      },
      [self](remove_work_atom, uint64_t operation) {
        self->state.store->remove(operation);
        return counts_of(*self->state.store, self->clock().now());
      },
      [self](count_work_atom) {
        return counts_of(*self->state.store, self->clock().now());
      },
  };
}

} // namespace pool
