#include "pool/queue.hpp"

#include <unordered_map>

#include <caf/event_based_actor.hpp>
#include <caf/response_promise.hpp>
#include <caf/send.hpp>

#include "pool/detail/queue_core.hpp"
#include "pool/queue_protocol.hpp"

namespace pool {

namespace {

using queue_self = caf::stateful_actor<queue_state>*;

/// The queue core's effects as the actor's own: a held answer is a
/// response promise, kept under its ticket until the core answers it.
class actor_effects : public queue_effects {
public:
  actor_effects(queue_self self, caf::actor_addr owner)
      : self_(self), owner_(std::move(owner)) {
    // nop
  }

  time_point now() override {
    return self_->clock().now();
  }

  uint64_t hold() override {
    auto ticket = ++last_ticket_;
    held_.emplace(ticket, self_->make_response_promise());
    return ticket;
  }

  void answer(uint64_t ticket, caf::message msg) override {
    auto i = held_.find(ticket);
    if (i == held_.end())
      return;
    i->second.deliver(std::move(msg));
    held_.erase(i);
  }

  void to_self(caf::timespan delay, caf::message msg) override {
    if (delay <= caf::timespan::zero())
      self_->send(self_, std::move(msg));
    else
      self_->delayed_send(self_, delay, std::move(msg));
  }

  void to_owner(caf::message msg) override {
    if (auto owner = caf::actor_cast<caf::actor>(owner_))
      self_->send(owner, std::move(msg));
  }

private:
  queue_self self_;
  caf::actor_addr owner_;
  uint64_t last_ticket_ = 0;
  std::unordered_map<uint64_t, caf::response_promise> held_;
};

/// Lets a shared store wake this actor from its listener thread (the store
/// calls again only after `poll_notifications`, so at most one `q_wake`
/// waits in the mailbox); the hook goes with the actor.
void listen(queue_self self, std::shared_ptr<work_store> store) {
  store->set_wakeup([me = self->address()] {
    if (auto queue = caf::actor_cast<caf::actor>(me))
      caf::anon_send(queue, queue_msg::wake_v);
  });
  self->attach_functor([store] { store->set_wakeup({}); });
  // Whatever arrived before this queue listened.
  self->send(self, queue_msg::wake_v);
}

} // namespace

queue_state::queue_state() = default;

queue_state::~queue_state() = default;

caf::behavior queue_actor(caf::stateful_actor<queue_state>* self,
                          std::shared_ptr<work_store> store,
                          caf::timespan commit_interval,
                          caf::actor_addr owner) {
  auto& st = self->state;
  st.fx = std::make_unique<actor_effects>(self, std::move(owner));
  st.core = std::make_unique<queue_core>(store, commit_interval, *st.fx);
  st.core->start();
  if (st.core->shared())
    listen(self, store);
  return st.core->handlers();
}

} // namespace pool
