#include "pool/spread.hpp"

#include <mutex>

#include <caf/execution_unit.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/policy/work_stealing.hpp>
#include <caf/scheduler/coordinator.hpp>
#include <caf/scheduler/worker.hpp>

namespace pool {

namespace {

using stealing_thread = caf::scheduler::worker<caf::policy::work_stealing>;

/// Whether `thread` waits on its condition variable (it steals nothing
/// until woken or timed out).
bool sleeping(stealing_thread* thread) {
  auto& wait = thread->data().waitdata;
  std::lock_guard<std::mutex> guard{wait.lock};
  return wait.sleeping;
}

/// The execution unit an actor made runnable is scheduled on, for a sender
/// that keeps its thread: another thread that sleeps, else the sender's.
class spreading_unit final : public caf::execution_unit {
public:
  explicit spreading_unit(stealing_thread* here)
      : caf::execution_unit(&here->system()), here_(here) {
    proxies_ = here->proxy_registry_ptr();
  }

  void exec_later(caf::resumable* job) override {
    auto coordinator = here_->parent();
    auto n = coordinator->num_workers();
    for (size_t i = 1; i < n; ++i) {
      auto other = coordinator->worker_by_id((here_->id() + i) % n);
      if (sleeping(other)) {
        other->external_enqueue(job);
        return;
      }
    }
    here_->exec_later(job);
  }

private:
  stealing_thread* here_;
};

} // namespace

namespace detail {

void enqueue_spread(caf::scheduled_actor* self, const caf::actor& to,
                    caf::mailbox_element_ptr element) {
  // Only a sender with more mail keeps its thread: the common case (and an
  // idle pool's every send) costs one check more than a plain send.
  auto here = self->mailbox().empty()
                  ? nullptr
                  : dynamic_cast<stealing_thread*>(self->context());
  if (here == nullptr) {
    to->enqueue(std::move(element), self->context());
    return;
  }
  spreading_unit unit{here};
  to->enqueue(std::move(element), &unit);
}

} // namespace detail

} // namespace pool
