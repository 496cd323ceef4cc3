#include "pool/shepherd.hpp"

#include <algorithm>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/message_view.hpp>
#include <caf/result.hpp>

#include "pool/queue.hpp"

namespace pool {

namespace {

constexpr auto no_deadline = caf::timespan::max();

} // namespace

shepherd_state::~shepherd_state() {
  if (self_ == nullptr)
    return;
  // Runs in on_exit. When the shepherd became unreachable, CAF calls this
  // while destroying the actor: touch `self_` only while promises exist
  // (each holds a reference, so then the actor is still whole).
  if (!operations_.empty()) {
    auto reason = self_->fail_state();
    auto text = reason ? describe(reason) : std::string{"normal exit"};
    for (auto& kvp : operations_)
      kvp.second.promise.deliver(
        caf::make_error(pool_errc::pool_terminated, text));
    operations_.clear();
  }
  // No spawned worker and no queue outlives the shepherd.
  for (auto& kvp : workers_)
    if (!kvp.second.joined)
      caf::anon_send_exit(kvp.second.handle, caf::exit_reason::user_shutdown);
  if (queue_)
    caf::anon_send_exit(queue_, caf::exit_reason::user_shutdown);
}

caf::behavior shepherd_state::init(shepherd_actor* self, shepherd_config cfg) {
  self_ = self;
  cfg_ = std::move(cfg);
  queue_ = self->spawn(queue_actor, cfg_.store);
  self->monitor(queue_);
  for (size_t i = 0; i < cfg_.options.workers(); ++i)
    add_worker(cfg_.spawn_worker(self->home_system()), false);
  self->set_down_handler([this](caf::down_msg& msg) { on_down(msg); });
  self->set_error_handler(
    [this](caf::scheduled_actor*, caf::error& err) { on_queue_error(err); });
  // Submits carry payloads of the pool's input type, which the type-erased
  // shepherd cannot name in a handler signature: they arrive here.
  self->set_default_handler(
    [this](caf::scheduled_actor*, caf::message_view& view)
      -> caf::result<caf::message> {
      auto& content = view.content();
      if (content.size() >= 1 && content.match_element<caf::atom_value>(0)) {
        auto tag = content.get_as<caf::atom_value>(0);
        if (tag == submit_atom::value)
          return submit(view.move_content_to_message().drop(1),
                        caf::timespan::zero());
        if (tag == submit_after_atom::value && content.size() >= 2
            && content.match_element<caf::timespan>(1)) {
          auto delay = content.get_as<caf::timespan>(1);
          return submit(view.move_content_to_message().drop(2), delay);
        }
      }
      return caf::make_error(pool_errc::unexpected_message,
                             content.stringify());
    });
  return {
    [this](give_me_work_atom) {
      auto sender = caf::actor_cast<caf::actor>(self_->current_sender());
      auto slot = find_worker(sender);
      if (slot == nullptr)
        return; // Not a member: join first.
      if (slot->asking)
        return; // Its earlier request is still being answered.
      if (slot->phase == worker_phase::working) {
        // Asked for more without reporting the attempt it holds.
        auto id = slot->current->id;
        slot->current.reset();
        fail(id.operation,
             caf::make_error(pool_errc::job_failed, std::string{"worker"},
                             std::string{"asked for work without reporting"}));
      }
      set_phase(key_of(sender), *slot, worker_phase::waiting);
      slot->asking = true;
      request_work(sender);
    },
    [this](status_reply_atom, const attempt_id& id, caf::message& result) {
      on_status(id, &result, nullptr);
    },
    [this](status_reply_atom, const attempt_id& id, caf::error& failure) {
      on_status(id, nullptr, &failure);
    },
    [this](due_timer_atom) {
      if (timer_at_ && self_->clock().now() >= *timer_at_)
        timer_at_.reset();
      refresh_counts();
    },
    [this](pool_stats_atom) {
      auto rp = self_->make_response_promise();
      self_->send(queue_, count_work_atom_v);
      exchanges_.push_back({queue_exchange::stats, 0, {}, std::move(rp)});
    },
    // -- answers from the queue, matched to exchanges_ in order ---------------
    [this](queue_counts& counts) {
      auto ex = take_exchange(queue_exchange::count);
      if (!ex)
        return;
      if (ex->kind == queue_exchange::stats) {
        auto snapshot = worker_stats();
        snapshot.available = counts.available;
        snapshot.delayed = counts.delayed;
        ex->promise.deliver(snapshot);
      }
      on_counts(counts);
    },
    [this](work_record& record) {
      if (auto ex = take_exchange(queue_exchange::get))
        dispatch(ex->worker, std::move(record));
    },
    [this](no_work_atom, caf::timespan wait) {
      if (auto ex = take_exchange(queue_exchange::get))
        put_to_sleep(ex->worker, wait);
    },
    [this](join_pool_atom, caf::actor& worker) -> caf::result<void> {
      if (!worker)
        return caf::make_error(pool_errc::unexpected_message,
                               std::string{"join_pool with an invalid actor"});
      if (find_worker(worker) == nullptr) {
        add_worker(std::move(worker), true);
        refresh_counts();
      }
      return caf::unit;
    },
  };
}

caf::result<caf::message> shepherd_state::submit(caf::message payload,
                                                  caf::timespan delay) {
  if (!cfg_.accepts(payload))
    return caf::make_error(pool_errc::wrong_input_type, cfg_.input_type,
                           to_string(payload));
  if (delay < caf::timespan::zero())
    return caf::make_error(pool_errc::invalid_delay, std::to_string(delay.count()) + "ns");
  auto id = next_operation_++;
  ++submitted_;
  operations_.emplace(id, operation{self_->make_response_promise(), 1});
  add_work(work_record{attempt_id{id, 1}, std::move(payload)}, delay);
  return caf::delegated<caf::message>{};
}

pool_stats shepherd_state::worker_stats() const {
  pool_stats result;
  result.configured = cfg_.options.workers();
  result.workers = workers_.size();
  result.busy = busy_;
  result.waiting = waiting_;
  result.sleeping = sleeping_.size();
  result.joined = joined_;
  result.submitted = submitted_;
  result.completed = completed_;
  result.failed = failed_;
  return result;
}

worker_slot* shepherd_state::find_worker(const caf::actor& handle) {
  auto i = workers_.find(key_of(handle));
  return i != workers_.end() ? &i->second : nullptr;
}

void shepherd_state::add_worker(caf::actor handle, bool joined) {
  self_->monitor(handle);
  if (joined)
    ++joined_;
  auto key = key_of(handle);
  auto& slot = workers_[key];
  slot.handle = std::move(handle);
  slot.joined = joined;
  slot.phase = worker_phase::sleeping;
  sleeping_.push_back(key);
}

void shepherd_state::remove_worker(key_type key) {
  auto i = workers_.find(key);
  if (i == workers_.end())
    return;
  switch (i->second.phase) {
    case worker_phase::sleeping:
      sleeping_.erase(std::find(sleeping_.begin(), sleeping_.end(), key));
      break;
    case worker_phase::waiting:
      --waiting_;
      break;
    case worker_phase::working:
      --busy_;
      break;
  }
  if (i->second.joined)
    --joined_;
  workers_.erase(i);
}

void shepherd_state::set_phase(key_type key, worker_slot& slot,
                               worker_phase phase) {
  if (slot.phase == phase)
    return;
  switch (slot.phase) {
    case worker_phase::sleeping: {
      // Usually the most recent sleeper: search from the back.
      auto i = std::find(sleeping_.rbegin(), sleeping_.rend(), key);
      sleeping_.erase(std::next(i).base());
      break;
    }
    case worker_phase::waiting:
      --waiting_;
      break;
    case worker_phase::working:
      --busy_;
      break;
  }
  switch (phase) {
    case worker_phase::sleeping:
      sleeping_.push_back(key);
      break;
    case worker_phase::waiting:
      ++waiting_;
      break;
    case worker_phase::working:
      ++busy_;
      break;
  }
  slot.phase = phase;
}

void shepherd_state::on_counts(const queue_counts& counts) {
  auto unclaimed = counts.available > waiting_ ? counts.available - waiting_
                                               : size_t{0};
  auto n = std::min(unclaimed, sleeping_.size());
  for (size_t i = 0; i < n; ++i) {
    auto key = sleeping_.back();
    auto& slot = workers_[key];
    set_phase(key, slot, worker_phase::waiting);
    self_->send(slot.handle, wake_up_atom_v);
  }
  if (counts.next_due_in != no_deadline)
    arm_timer(counts.next_due_in);
}

void shepherd_state::request_work(const caf::actor& worker) {
  self_->send(queue_, get_work_atom_v);
  exchanges_.push_back({queue_exchange::get, 0, worker, {}});
}

void shepherd_state::add_work(work_record record, caf::timespan delay) {
  auto operation = record.id.operation;
  self_->send(queue_, add_work_atom_v, std::move(record), delay);
  exchanges_.push_back({queue_exchange::add, operation, {}, {}});
}

std::optional<queue_exchange>
shepherd_state::take_exchange(queue_exchange::kind_type expected) {
  if (self_->current_sender() != queue_ || exchanges_.empty())
    return std::nullopt; // Not from our queue: a stranger's message.
  auto kind = exchanges_.front().kind;
  // add, count and stats are all answered by queue_counts.
  auto counts_answer = kind != queue_exchange::get;
  if (expected == queue_exchange::get ? counts_answer : !counts_answer)
    return std::nullopt;
  auto result = std::move(exchanges_.front());
  exchanges_.pop_front();
  return result;
}

void shepherd_state::on_queue_error(caf::error& err) {
  if (self_->current_sender() != queue_ || exchanges_.empty())
    return;
  auto ex = std::move(exchanges_.front());
  exchanges_.pop_front();
  switch (ex.kind) {
    case queue_exchange::add:
      fail(ex.operation, std::move(err));
      break;
    case queue_exchange::get:
      // The worker sleeps until work shows up.
      put_to_sleep(ex.worker, caf::timespan::max());
      break;
    case queue_exchange::stats:
      ex.promise.deliver(std::move(err));
      break;
    case queue_exchange::count:
      break;
  }
}

void shepherd_state::dispatch(const caf::actor& worker, work_record record) {
  auto slot = find_worker(worker);
  if (slot != nullptr)
    slot->asking = false;
  auto op = operations_.find(record.id.operation);
  if (op == operations_.end() || op->second.attempt != record.id.attempt) {
    // The operation ended while queued: skip it.
    if (slot != nullptr && slot->phase == worker_phase::waiting) {
      slot->asking = true;
      request_work(worker);
    }
    return;
  }
  if (slot == nullptr || slot->phase != worker_phase::waiting) {
    // The worker left meanwhile: the entry goes back, due now.
    add_work(std::move(record), caf::timespan::zero());
    return;
  }
  slot->current = record;
  set_phase(key_of(worker), *slot, worker_phase::working);
  self_->send(worker, work_to_do_atom_v, std::move(record));
}

void shepherd_state::put_to_sleep(const caf::actor& worker,
                                  caf::timespan wait) {
  auto slot = find_worker(worker);
  if (slot != nullptr)
    slot->asking = false;
  if (slot != nullptr && slot->phase == worker_phase::waiting) {
    set_phase(key_of(worker), *slot, worker_phase::sleeping);
    self_->send(worker, go_to_sleep_atom_v);
  }
  if (wait != no_deadline)
    arm_timer(wait);
}

void shepherd_state::arm_timer(caf::timespan wait) {
  auto deadline = self_->clock().now() + wait;
  if (timer_at_ && *timer_at_ <= deadline)
    return;
  timer_at_ = deadline;
  self_->delayed_send(self_, wait, due_timer_atom_v);
}

void shepherd_state::refresh_counts() {
  self_->send(queue_, count_work_atom_v);
  exchanges_.push_back({queue_exchange::count, 0, {}, {}});
}

void shepherd_state::on_status(const attempt_id& id, caf::message* result,
                               caf::error* failure) {
  auto sender = caf::actor_cast<caf::actor>(self_->current_sender());
  auto slot = find_worker(sender);
  if (slot == nullptr || slot->phase != worker_phase::working
      || slot->current->id != id)
    return; // Stale: not the attempt this worker holds.
  slot->current.reset();
  // The worker sends give_work right after its status reply.
  set_phase(key_of(sender), *slot, worker_phase::waiting);
  auto op = operations_.find(id.operation);
  if (op == operations_.end() || op->second.attempt != id.attempt)
    return;
  if (result != nullptr) {
    ++completed_;
    op->second.promise.deliver(std::move(*result));
    operations_.erase(op);
  } else {
    fail(id.operation, std::move(*failure));
  }
}

void shepherd_state::on_down(caf::down_msg& msg) {
  if (msg.source == queue_.address()) {
    self_->quit(msg.reason ? msg.reason
                           : caf::make_error(caf::exit_reason::normal));
    return;
  }
  auto key = caf::actor_cast<key_type>(msg.source);
  auto i = workers_.find(key);
  if (i == workers_.end())
    return;
  auto joined = i->second.joined;
  if (i->second.current)
    fail(i->second.current->id.operation,
         caf::make_error(pool_errc::job_failed,
                         std::string{"worker terminated"},
                         describe(msg.reason)));
  remove_worker(key);
  if (!joined)
    add_worker(cfg_.spawn_worker(self_->home_system()), false);
  // Work the departed worker was woken for must find another taker.
  refresh_counts();
}

void shepherd_state::fail(uint64_t operation_id, caf::error err) {
  auto op = operations_.find(operation_id);
  if (op == operations_.end())
    return;
  ++failed_;
  op->second.promise.deliver(std::move(err));
  operations_.erase(op);
}

caf::behavior shepherd(shepherd_actor* self, shepherd_config cfg) {
  return self->state.init(self, std::move(cfg));
}

} // namespace pool
