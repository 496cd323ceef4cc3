// Workers: asking for work, joining, leaving, dying, timing out, resizing.
#include "pool/detail/shepherd_core.hpp"

#include <caf/make_message.hpp>

#include "pool/duration_text.hpp"
#include "pool/type_ids.hpp"

namespace pool {

namespace {

/// Spawns or stops at most this many workers per message, so that a huge
/// resize never keeps the shepherd from answering for long.
constexpr size_t resize_budget = 2000;

/// How long a joined worker may stay woken without asking for work before
/// it is dropped from the pool (it may join again).
constexpr auto joined_wake_limit = std::chrono::seconds(10);

} // namespace

worker_ref shepherd_core::add_worker(worker_handle who, bool joined) {
  auto ref = roster_.add(std::move(who), joined, now());
  mon_.note_sleeping(*roster_.get(ref), roster_.configured());
  return ref;
}

void shepherd_core::give_work(const void* key) {
  auto worker = roster_.find(key);
  auto slot = roster_.get(worker);
  if (slot == nullptr || slot->asking)
    return; // Not a member, or its earlier request is still pending.
  if (slot->asks_due > 0) {
    --slot->asks_due; // It ended a batch and runs the one sent ahead.
    return;
  }
  if (slot->phase == worker_phase::working) {
    // Asked for more without reporting the attempts it holds.
    auto held = disp_.release_held(*slot);
    fail_held(held, caf::make_error(pool_errc::job_failed,
                                    std::string{"worker asked for work "
                                                "without reporting"}));
    slot = roster_.get(worker);
    if (slot == nullptr)
      return;
  }
  if (slot->retiring) {
    // Surplus: it stops now that its attempts are reported.
    disp_.worker_gone(worker);
    retire(worker);
    check_resized();
    return;
  }
  disp_.want_work(worker);
  note_available();
}

bool shepherd_core::replace_worker(bool counts_as_restart,
                                   const caf::error& cause) {
  if (roster_.staying_local() >= roster_.configured())
    return true; // A shrink is under way: this one is not missed.
  if (counts_as_restart && !sup_.note_restart(now())) {
    give_up(cause);
    return false;
  }
  ++mon_.counters().worker_restarts;
  add_worker(fx_.spawn_worker(), false);
  fx_.log(log_level::info, "worker restarted (" +
                               std::to_string(mon_.counters().worker_restarts) +
                               " restarts so far)");
  if (fx_.wants(event_kind::worker_restarted))
    fx_.publish({event_kind::worker_restarted,
                 0,
                 0,
                 mon_.counters().worker_restarts,
                 {},
                 {}});
  return true;
}

void shepherd_core::resize(uint64_t n, caf::response_promise promise) {
  if (auto& limits = opts_.autoscale();
      limits && (n < limits->min || n > limits->max)) {
    fx_.deliver(
        promise,
        caf::make_message(caf::make_error(
            pool_errc::invalid_option, std::string{"workers"},
            "must lie within autoscale.min (" + std::to_string(limits->min) +
                ") and autoscale.max (" + std::to_string(limits->max) + ")")));
    return;
  }
  if (auto err = grow_or_shrink(n)) {
    fx_.deliver(promise, caf::make_message(std::move(err)));
    return;
  }
  resize_promises_.push_back(std::move(promise));
  check_resized();
}

caf::error shepherd_core::grow_or_shrink(uint64_t n) {
  if (n == 0)
    return caf::make_error(pool_errc::invalid_option, std::string{"workers"},
                           std::string{"must be at least 1"});
  if (n > max_pool_workers)
    return caf::make_error(pool_errc::invalid_option, std::string{"workers"},
                           "must be at most " +
                               std::to_string(max_pool_workers) +
                               " (pool::max_pool_workers)");
  roster_.set_configured(static_cast<size_t>(n));
  fx_.log(log_level::info, "resized to " + std::to_string(n) + " workers");
  if (fx_.wants(event_kind::resized))
    fx_.publish({event_kind::resized, 0, 0, n, {}, {}});
  resize_step();
  return caf::none;
}

void shepherd_core::resize_step() {
  auto step = roster_.next_resize_step(
      resize_budget, [](worker_ref, const worker_slot&) { return true; });
  for (size_t i = 0; i < step.spawn; ++i)
    add_worker(fx_.spawn_worker(), false);
  for (auto& worker : step.stop) {
    stopping_.insert(worker.key);
    fx_.stop_worker(worker, false);
  }
  if (roster_.resize_pending() && (step.spawn > 0 || !step.stop.empty())) {
    // More to do: after whatever else is in the mailbox (stats answer).
    // A shrink continues once the workers it stopped are gone: CAF 0.17
    // queues every actor the shepherd makes runnable on its own thread, and
    // other threads steal from that queue in time linear in its length, so
    // stopping a whole pool without waiting took 73 s for 400,000 workers.
    if (step.stop.empty())
      fx_.schedule(caf::timespan::zero(),
                   timer_event{timer_kind::resize_step, {}, {}});
    return;
  }
  link_.send(exchange::count{}); // New workers wake for due work.
  // Growing may have taken back every retiring worker a shrink waited for.
  check_resized();
}

void shepherd_core::check_resized() {
  if (roster_.retiring() > 0 || roster_.resize_pending() ||
      resize_promises_.empty())
    return;
  for (auto& promise : resize_promises_)
    fx_.deliver(promise, caf::make_message());
  resize_promises_.clear();
}

void shepherd_core::retire(worker_ref worker) {
  auto slot = roster_.get(worker);
  worker_handle who{slot->handle, slot->key};
  roster_.remove(worker);
  fx_.stop_worker(who, false);
}

void shepherd_core::done_holding(worker_ref worker, worker_slot& slot) {
  disp_.batch_done(slot);
  if (slot.retiring) {
    retire(worker);
    check_resized();
  } else {
    // The worker sends give_work right after its last status reply.
    roster_.set_phase(worker, worker_phase::waiting, now());
    if (slot.joined)
      arm_probe(worker);
  }
}

void shepherd_core::woke_joined(worker_ref worker) {
  arm_probe(worker);
}

void shepherd_core::arm_probe(worker_ref worker) {
  fx_.schedule(joined_wake_limit, timer_event{timer_kind::probe, {}, worker});
}

void shepherd_core::probe_joined(worker_ref worker) {
  // A joined worker woken (or done with an attempt) that never asked for
  // work: it would count as waiting for ever and keep sleepers asleep.
  auto slot = roster_.get(worker);
  if (slot == nullptr || slot->phase != worker_phase::waiting || slot->asking ||
      now() - slot->since < joined_wake_limit)
    return;
  fx_.log(log_level::warning, "dropped a joined worker that did not ask for "
                              "work within " +
                                  duration_text(joined_wake_limit));
  ++mon_.counters().workers_dropped;
  auto reason = caf::make_error(pool_errc::worker_down,
                                std::string{"silent after being woken"});
  fx_.to_worker(*slot, caf::make_message(left_pool_atom_v, reason));
  worker_lost(worker, std::move(reason), false);
}

void shepherd_core::worker_lost(worker_ref worker, caf::error reason,
                                bool counts_as_restart) {
  auto slot = roster_.get(worker);
  auto joined = slot->joined;
  disp_.batch_done(*slot); // (no start of its batch comes later)
  auto held = std::move(slot->held);
  disp_.worker_gone(worker);
  roster_.remove(worker);
  auto cause = reason;
  fail_held(held, std::move(reason));
  if (!joined && !replace_worker(counts_as_restart, cause))
    return;
  check_resized();
  // Work the departed worker was woken for must find another taker.
  link_.send(exchange::count{});
}

void shepherd_core::on_attempt_timeout(const attempt_id& id,
                                       worker_ref worker) {
  // The worker's first attempt held is the one running (within a batch,
  // each attempt reports as it finishes and the timer of the next one
  // starts then). It counts even if its operation was cancelled meanwhile:
  // a stuck worker holding the rest of a batch must not keep it for good.
  auto slot = roster_.get(worker);
  if (slot == nullptr || slot->held.empty() || slot->held.front() != id)
    return; // Finished in time, or the worker is gone.
  ++mon_.counters().timed_out;
  if (!slot->joined) {
    // A job cannot be interrupted: the worker is abandoned and killed; a
    // dedicated worker stuck in user code keeps its thread until the job
    // returns. Its late reply is dropped as stale.
    abandoned_.emplace(slot->key, slot->handle);
    fx_.stop_worker(worker_handle{slot->handle, slot->key}, true);
  }
  auto op = table_.current(id);
  auto limit = op != nullptr
                 ? disp_.budget(id.operation, *op)
                 : opts_.attempt_timeout().value_or(caf::timespan{0});
  auto reason = caf::make_error(pool_errc::timed_out, duration_text(limit));
  if (slot->joined) {
    // A joined worker is told: its attempt is withdrawn and it leaves the
    // pool (it belongs to someone else, who may join it again).
    fx_.to_worker(*slot, caf::make_message(left_pool_atom_v, reason));
  }
  // A timeout is the attempt's failure, already bounded by max_attempts:
  // the replacement does not count against the restart intensity.
  worker_lost(worker, std::move(reason), false);
}

bool shepherd_core::down(const caf::actor_addr& who, const void* key,
                         const caf::error& reason) {
  table_.caller_down(who);
  if (abandoned_.erase(key) > 0)
    return true;
  if (stopping_.erase(key) > 0) {
    if (stopping_.empty() && roster_.resize_pending())
      resize_step();
    return true;
  }
  auto worker = roster_.find(key);
  if (!worker)
    return false;
  auto cause = caf::make_error(pool_errc::worker_down, describe(reason));
  if (!roster_.get(worker)->joined)
    fx_.log(log_level::warning, "worker stopped: " + describe(reason));
  worker_lost(worker, std::move(cause), true);
  return true;
}

} // namespace pool
