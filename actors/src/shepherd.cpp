#include "pool/shepherd.hpp"

#include <algorithm>
#include <random>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/message_view.hpp>
#include <caf/result.hpp>
#include <caf/send.hpp>

#include "pool/duration_text.hpp"
#include "pool/queue.hpp"

namespace pool {

namespace {

constexpr auto no_deadline = caf::timespan::max();

} // namespace

// -- lifetime -----------------------------------------------------------------

shepherd_state::~shepherd_state() {
  if (self_ == nullptr)
    return;
  // Runs in on_exit. When the shepherd became unreachable, CAF calls this
  // while destroying the actor: touch `self_` only while promises exist
  // (each holds a reference, so then the actor is still whole). Listeners
  // of enqueued operations are told with anonymous messages.
  auto promised =
      any_exchange(
          [](const queue_exchange& ex) { return ex.promise.pending(); }) ||
      !parked_.empty() || !key_lookups_.empty() || !drain_promises_.empty() ||
      !resize_promises_.empty() || promised_ > 0;
  std::string why = "unreachable";
  if (promised) {
    auto reason = self_->fail_state();
    why = reason ? describe(reason) : std::string{"normal exit"};
  }
  auto err = caf::make_error(pool_errc::pool_terminated, why);
  for (auto& kvp : operations_) {
    if (kvp.second.tracked)
      caf::anon_send(caf::actor_cast<caf::actor>(kvp.second.caller),
                     op_failed_atom_v, kvp.first, err);
    else if (promised_ > 0) // (keep_alive_ holds the shepherd)
      respond(kvp.first, kvp.second, err);
  }
  operations_.clear();
  extras_.clear();
  for (auto& fifo : exchanges_)
    for (auto& ex : fifo)
      if (ex.promise.pending())
        ex.promise.deliver(err);
  for (auto& p : parked_)
    p.promise.deliver(err);
  for (auto& kvp : key_lookups_)
    for (auto& sub : kvp.second)
      sub.promise.deliver(err);
  for (auto& rp : drain_promises_)
    rp.deliver(err);
  for (auto& rp : resize_promises_)
    rp.deliver(err);
  // No spawned worker and no queue outlives the shepherd.
  for (auto& kvp : workers_)
    if (!kvp.second.joined)
      caf::anon_send_exit(kvp.second.handle, caf::exit_reason::user_shutdown);
  for (auto& kvp : abandoned_)
    caf::anon_send_exit(kvp.second, caf::exit_reason::kill);
  if (queue_)
    caf::anon_send_exit(queue_, caf::exit_reason::user_shutdown);
}

caf::behavior shepherd_state::init(shepherd_actor* self, shepherd_config cfg) {
  self_ = self;
  cfg_ = std::move(cfg);
  auto& opts = cfg_.options;
  log_ = opts.log();
  auto seed = opts.seed() ? *opts.seed() : std::random_device{}();
  backoff_.emplace(opts.backoff_initial(), opts.backoff_max(),
                   opts.backoff_multiplier(), opts.jitter(), seed);
  durable_ = cfg_.store->durable();
  if (durable_)
    adopt_unfinished(); // before the queue actor uses the store
  spawn_queue();
  configured_ = opts.workers();
  for (size_t i = 0; i < configured_; ++i)
    add_worker(cfg_.spawn_worker(self->home_system()), false);
  if (!operations_.empty())
    refresh_counts(); // adopted work: wake workers for it
  self->set_down_handler([this](caf::down_msg& msg) { on_down(msg); });
  self->set_error_handler(
      [this](caf::scheduled_actor*, caf::error& err) { on_queue_error(err); });
  // Submits carry payloads of the pool's input type, which the type-erased
  // shepherd cannot name in a handler signature: they arrive here.
  self->set_default_handler([this](caf::scheduled_actor*,
                                   caf::message_view& view)
                                -> caf::result<caf::message> {
    auto& content = view.content();
    // The payload: the elements after the first `skip`, moved into a
    // compact message of its own (or, if they are not the pool's input,
    // as they came, for the error).
    auto payload = [&](size_t skip) {
      if (auto compact = cfg_.repack(content, skip))
        return std::move(*compact);
      return view.move_content_to_message().drop(skip);
    };
    if (content.size() >= 1 && content.match_element<caf::atom_value>(0)) {
      auto tag = content.get_as<caf::atom_value>(0);
      if (tag == submit_atom::value || tag == enqueue_atom::value)
        return submit(payload(1), caf::timespan::zero(),
                      tag == enqueue_atom::value);
      if (tag == enqueue_unique_atom::value && content.size() >= 2 &&
          content.match_element<std::string>(1)) {
        auto key = content.get_as<std::string>(1);
        if (key.empty())
          return caf::make_error(pool_errc::invalid_option, std::string{"key"},
                                 std::string{"must not be empty"});
        return submit(payload(2), caf::timespan::zero(), true, std::move(key));
      }
      if (tag == submit_after_atom::value && content.size() >= 2 &&
          content.match_element<caf::timespan>(1)) {
        auto delay = content.get_as<caf::timespan>(1);
        return submit(payload(2), delay, false);
      }
    }
    return caf::make_error(pool_errc::unexpected_message, content.stringify());
  });
  return {
      // -- workers
      [this](give_me_work_atom) {
        auto sender = caf::actor_cast<caf::actor>(self_->current_sender());
        auto slot = find_worker(sender);
        if (slot == nullptr || slot->asking)
          return; // Not a member, or its earlier request is still pending.
        if (slot->phase == worker_phase::working) {
          // Asked for more without reporting the attempts it holds.
          auto held = std::move(slot->held);
          slot->held.clear();
          fail_held(held, caf::make_error(pool_errc::job_failed,
                                          std::string{"worker asked for work "
                                                      "without reporting"}));
        }
        auto key = key_of(sender);
        // Whether it took the entry handed ahead is decided now: withdrawn
        // unless taken, so it cannot take it after this check.
        if (may_take_ahead(key))
          ahead_->ticket.withdraw();
        if (took_ahead(key, *slot)) {
          hand_ahead(); // It runs the entry handed ahead: it is busy again.
          return;
        }
        if (slot->retiring) {
          // Surplus, kept only while it might take the entry handed ahead.
          drop_ahead_taker(key); // (It did not take it: an open one goes back.)
          retire(key);
          check_resized();
          return;
        }
        set_phase(key, *slot, worker_phase::waiting);
        slot->asking = true;
        find_work(sender);
      },
      [this](status_reply_atom, const attempt_id& id, caf::message& result) {
        on_status(id, &result, nullptr);
      },
      [this](status_reply_atom, const attempt_id& id, caf::error& failure) {
        on_status(id, nullptr, &failure);
      },
      [this](status_reply_atom, std::vector<attempt_outcome>& outcomes) {
        on_status(outcomes);
      },
      [this](attempt_timeout_atom, const attempt_id& id,
             const caf::actor_addr& worker) { on_attempt_timeout(id, worker); },
      [this](due_timer_atom) {
        fired(timer_at_);
        refresh_counts();
      },
      [this](backlog_timer_atom) {
        fired(backlog_timer_at_);
        check_backlog();
      },
      [this](idle_timer_atom) {
        fired(idle_timer_at_);
        shrink_idle();
      },
      // -- callers
      [this](pool_stats_atom) {
        queue_exchange ex{queue_exchange::stats, {}, {}, {}, {}};
        ex.promise = self_->make_response_promise();
        send_exchange(std::move(ex));
      },
      [this](resize_atom, uint64_t n) -> caf::result<void> {
        if (auto err = resize_request(n))
          return err;
        resize_promises_.push_back(self_->make_response_promise());
        check_resized();
        return caf::delegated<void>{};
      },
      [this](op_status_atom, uint64_t id) { return status_of(id); },
      [this](cancel_op_atom, uint64_t id) -> caf::result<void> {
        if (auto err = cancel(id))
          return err;
        return caf::unit;
      },
      [this](drain_atom) -> caf::result<void> { return drain(std::nullopt); },
      [this](drain_atom, caf::timespan deadline) -> caf::result<void> {
        return drain(deadline);
      },
      [this](drain_timer_atom) {
        if (drain_promises_.empty())
          return;
        // What is left at the deadline fails with a clear error.
        std::vector<uint64_t> left;
        for (auto& kvp : operations_)
          left.push_back(kvp.first);
        for (auto id : left)
          fail(id, caf::make_error(pool_errc::drain_deadline, id));
      },
      [this](subscribe_atom, caf::actor& who) -> caf::result<void> {
        if (auto err = subscribe(std::move(who), event_mask::all))
          return err;
        return caf::unit;
      },
      [this](subscribe_atom, caf::actor& who,
             uint32_t mask) -> caf::result<void> {
        if (auto err = subscribe(std::move(who), mask))
          return err;
        return caf::unit;
      },
      [this](unsubscribe_atom, caf::actor& who) { unsubscribe(who.address()); },
      [this](join_pool_atom, caf::actor& worker) -> caf::result<void> {
        if (!worker)
          return caf::make_error(
              pool_errc::unexpected_message,
              std::string{"join_pool with an invalid actor"});
        if (find_worker(worker) == nullptr) {
          add_worker(std::move(worker), true);
          refresh_counts();
        }
        return caf::unit;
      },
      // -- answers from the queue, matched to exchanges_ in order
      [this](queue_counts& counts) {
        auto ex = take_exchange(answer_kind::counts);
        if (!ex)
          return;
        if (ex->due_now)
          added();
        if (ex->kind == queue_exchange::stats) {
          auto snapshot = worker_stats();
          snapshot.available =
              counts.available + ready_.size() + (ahead_ ? 1 : 0) +
              entries_.size();
          snapshot.delayed = counts.delayed;
          ex->promise.deliver(snapshot);
        } else if (ex->kind == queue_exchange::add && ex->promise.pending()) {
          // A tracked submit to a durable store: on disk now.
          ex->promise.deliver(ex->id.operation);
        }
        on_counts(counts);
        if (ex->kind == queue_exchange::finish)
          check_drained(); // its outcome is on disk now
      },
      [this](key_found_atom, uint64_t found) {
        if (auto ex = take_exchange(answer_kind::key))
          on_key_found(ex->key, found);
      },
      [this](operation_record& rec) {
        auto ex = take_exchange(answer_kind::record);
        if (!ex)
          return;
        if (rec.id == 0) // the store does not know it
          ex->promise.deliver(
              caf::make_error(pool_errc::unknown_operation, ex->id.operation));
        else
          ex->promise.deliver(std::move(rec));
      },
      [this](std::vector<work_record>& records) {
        auto ex = take_exchange(answer_kind::work);
        if (!ex)
          return;
        if (!ex->worker) {
          on_prefetched(std::move(records), ex->wanted);
          return;
        }
        // The queue handed out some of its available entries.
        for (size_t i = 0; i < records.size(); ++i)
          take_available();
        dispatch(ex->worker, std::move(records));
      },
      [this](no_work_atom, caf::timespan wait) {
        auto ex = take_exchange(answer_kind::work);
        if (!ex)
          return;
        if (ex->worker) {
          put_to_sleep(ex->worker, wait);
          return;
        }
        // A prefetch found the queue without due entries.
        prefetching_ -= ex->wanted;
        set_available(ready_.size() + (ahead_ ? 1 : 0));
        if (wait != no_deadline)
          arm_timer(wait);
        serve_askers();
      },
  };
}

caf::result<caf::message> shepherd_state::submit(caf::message payload,
                                                 caf::timespan delay,
                                                 bool tracked,
                                                 std::string key) {
  if (draining_)
    return caf::make_error(pool_errc::closed,
                           std::string{"the pool is draining"});
  if (!cfg_.accepts(payload))
    return caf::make_error(pool_errc::wrong_input_type, cfg_.input_type,
                           to_string(payload));
  if (delay < caf::timespan::zero())
    return caf::make_error(pool_errc::invalid_delay, duration_text(delay));
  if (!key.empty()) {
    // A pending operation with this key answers at once, full queue or not.
    if (auto i = unique_keys_.find(key); i != unique_keys_.end())
      return caf::make_message(i->second);
  }
  // The promise is made only once the submit is taken: an error returned
  // after making it would never reach the caller.
  submission sub{
      std::move(payload),      delay,         tracked, self_->current_sender(),
      caf::response_promise{}, std::move(key)};
  if (full()) {
    auto depth = operations_.size() - in_flight_;
    if (parked_.size() >= cfg_.options.max_parked()) {
      ++totals_.rejected;
      return caf::make_error(
          pool_errc::overloaded, "queue depth " + std::to_string(depth),
          "capacity " + std::to_string(*cfg_.options.capacity()));
    }
    sub.promise = self_->make_response_promise();
    parked_.push_back(std::move(sub));
    return caf::delegated<caf::message>{};
  }
  sub.promise = self_->make_response_promise();
  if (!sub.key.empty())
    submit_unique(std::move(sub));
  else
    accept(std::move(sub));
  return caf::delegated<caf::message>{};
}

uint64_t shepherd_state::accept(submission sub) {
  auto id = next_operation_++;
  ++totals_.submitted;
  auto t = now();
  auto& op = operations_[id];
  op.payload = std::move(sub.payload);
  op.submitted_at = t;
  if (cfg_.options.skip_orphaned()) {
    const auto& caller = sub.sender;
    if (caller) {
      auto& who = extras_of(id).caller;
      who = caller->address();
      auto& watch = callers_[who];
      if (watch.pending++ == 0)
        self_->monitor(caf::actor_cast<caf::actor>(caller));
    }
  }
  caf::response_promise ack;
  if (sub.tracked) {
    op.caller = std::move(sub.sender);
    op.tracked = true;
    // A durable store acknowledges once the operation is on disk.
    if (durable_)
      ack = std::move(sub.promise);
    else
      sub.promise.deliver(id);
  } else {
    // A plain request keeps just its sender and id (the response is
    // rebuilt from them); one that came through forwarding stages keeps its
    // promise.
    op.promised = sub.promise.pending();
    if (op.promised && promised_++ == 0)
      keep_alive_ = caf::actor_cast<caf::strong_actor_ptr>(self_);
    if (sub.promise.stages().empty()) {
      op.caller = sub.promise.source();
      op.reply_id = sub.promise.id();
    } else {
      extras_of(id).promise = std::move(sub.promise);
    }
  }
  if (!sub.key.empty()) {
    unique_keys_.emplace(sub.key, id);
    extras_of(id).key = sub.key;
  }
  if (cfg_.options.short_cuts() && sub.delay == caf::timespan::zero() &&
      sub.key.empty() && hand_out_directly(id, op, t)) {
    check_overload();
    return id;
  }
  queue_exchange ex{queue_exchange::add,
                    attempt_id{id, 1},
                    t + sub.delay,
                    {},
                    std::move(ack)};
  ex.key = std::move(sub.key);
  op.stamp = ex.due;
  put_entry(std::move(ex));
  check_overload();
  return id;
}

void shepherd_state::submit_unique(submission sub) {
  if (auto i = unique_keys_.find(sub.key); i != unique_keys_.end()) {
    sub.promise.deliver(i->second);
    return;
  }
  if (auto i = key_lookups_.find(sub.key); i != key_lookups_.end()) {
    ++lookups_pending_;
    i->second.push_back(std::move(sub)); // the same key is being looked up
    return;
  }
  if (!durable_) {
    accept(std::move(sub));
    return;
  }
  auto key = sub.key;
  ++lookups_pending_;
  key_lookups_[key].push_back(std::move(sub));
  queue_exchange ex{queue_exchange::find_key, {}, {}, {}, {}};
  ex.sent =
      caf::make_message(find_key_atom_v, key, cfg_.options.unique_window());
  ex.key = std::move(key);
  send_exchange(std::move(ex));
}

void shepherd_state::on_key_found(const std::string& key, uint64_t found) {
  auto i = key_lookups_.find(key);
  if (i == key_lookups_.end())
    return;
  auto subs = std::move(i->second);
  key_lookups_.erase(i);
  lookups_pending_ -= subs.size();
  if (found == 0 && (draining_ || subs.empty())) {
    for (auto& sub : subs)
      sub.promise.deliver(caf::make_error(pool_errc::closed,
                                          std::string{"the pool is draining"}));
    return;
  }
  if (found == 0) {
    found = accept(std::move(subs.front()));
    subs.erase(subs.begin());
  }
  for (auto& sub : subs)
    sub.promise.deliver(found);
}

bool shepherd_state::full() const {
  auto capacity = cfg_.options.capacity();
  return capacity &&
         operations_.size() - in_flight_ + lookups_pending_ >= *capacity;
}

void shepherd_state::admit_parked() {
  while (!parked_.empty() && !full()) {
    auto sub = std::move(parked_.front());
    parked_.pop_front();
    if (!sub.key.empty())
      submit_unique(std::move(sub));
    else
      accept(std::move(sub));
  }
}

caf::result<caf::message> shepherd_state::status_of(uint64_t operation_id) {
  if (auto i = operations_.find(operation_id); i != operations_.end()) {
    auto& op = i->second;
    operation_record rec;
    rec.id = operation_id;
    rec.state = op.holder ? operation_state::running : operation_state::queued;
    rec.attempt = op.attempt;
    rec.payload = op.payload;
    if (auto extras = find_extras(operation_id)) {
      rec.history = extras->history;
      rec.key = extras->key;
    }
    return caf::make_message(std::move(rec));
  }
  if (!durable_)
    return caf::make_error(pool_errc::unknown_operation, operation_id);
  queue_exchange ex{queue_exchange::lookup,
                    attempt_id{operation_id, 0},
                    {},
                    {},
                    self_->make_response_promise()};
  ex.sent = caf::make_message(get_record_atom_v, operation_id);
  send_exchange(std::move(ex));
  return caf::delegated<caf::message>{};
}

void shepherd_state::record(queue_exchange::kind_type kind, caf::message sent) {
  queue_exchange ex{kind, {}, {}, {}, {}};
  ex.sent = std::move(sent);
  send_exchange(std::move(ex));
}

void shepherd_state::adopt_unfinished() {
  auto& store = *cfg_.store;
  next_operation_ = std::max(next_operation_, store.last_operation_id() + 1);
  auto t = now();
  for (auto& rec : store.unfinished()) {
    auto& op = operations_[rec.id];
    op.payload = std::move(rec.payload);
    op.attempt = rec.attempt;
    op.submitted_at = t;
    op.stamp = t;
    if (!rec.history.empty())
      extras_of(rec.id).history = std::move(rec.history);
    if (!rec.key.empty()) {
      unique_keys_.emplace(rec.key, rec.id);
      extras_of(rec.id).key = std::move(rec.key);
    }
  }
  if (!operations_.empty())
    log(log_level::info, "resuming " + std::to_string(operations_.size()) +
                             " unfinished operations from the store");
}

shepherd_state::time_point shepherd_state::now() const {
  return self_->clock().now();
}

pool_stats shepherd_state::worker_stats() const {
  auto result = totals_;
  result.configured = configured_;
  result.workers = workers_.size();
  result.busy = busy_;
  result.waiting = waiting_;
  result.sleeping = sleeping_.size();
  result.joined = joined_;
  result.abandoned = abandoned_.size();
  result.parked = parked_.size();
  result.backlog_alarm = alarm_;
  result.queue_wait = summarize(queue_wait_);
  result.processing = summarize(processing_);
  return result;
}

// -- workers ------------------------------------------------------------------

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
  note_sleeping(slot);
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
  if (i->second.retiring)
    --retiring_;
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
      totals_.busy_high = std::max<uint64_t>(totals_.busy_high, ++busy_);
      break;
  }
  slot.phase = phase;
  if (phase == worker_phase::sleeping)
    note_sleeping(slot);
}

bool shepherd_state::note_restart() {
  auto t = now();
  auto window = cfg_.options.restart_window();
  restarts_.push_back(t);
  while (!restarts_.empty() && restarts_.front() + window < t)
    restarts_.pop_front();
  auto limit = static_cast<size_t>(cfg_.options.max_restarts());
  if (restarts_.size() <= limit)
    return true;
  auto err = caf::make_error(pool_errc::restart_intensity,
                             "more than " + std::to_string(limit) +
                                 " restarts within " + duration_text(window));
  log(log_level::error, "giving up: " + describe(err));
  self_->quit(std::move(err));
  return false;
}

bool shepherd_state::replace_worker() {
  if (workers_.size() - joined_ - retiring_ >= configured_)
    return true; // A shrink is under way: this one is not missed.
  if (!note_restart())
    return false;
  ++totals_.worker_restarts;
  add_worker(cfg_.spawn_worker(self_->home_system()), false);
  log(log_level::info, "worker restarted (" +
                           std::to_string(totals_.worker_restarts) +
                           " restarts so far)");
  if (wants(event_kind::worker_restarted))
    publish(
        {event_kind::worker_restarted, 0, 0, totals_.worker_restarts, {}, {}});
  return true;
}

caf::error shepherd_state::resize(size_t n) {
  if (n == 0)
    return caf::make_error(pool_errc::invalid_option, std::string{"workers"},
                           std::string{"must be at least 1"});
  if (n > max_pool_workers)
    return caf::make_error(pool_errc::invalid_option, std::string{"workers"},
                           "must be at most " +
                               std::to_string(max_pool_workers));
  configured_ = n;
  auto local = workers_.size() - joined_ - retiring_;
  // Growing: first take back workers that were about to retire.
  for (auto& kvp : workers_) {
    if (local >= n)
      break;
    if (kvp.second.retiring) {
      kvp.second.retiring = false;
      --retiring_;
      ++local;
    }
  }
  for (; local < n; ++local)
    add_worker(cfg_.spawn_worker(self_->home_system()), false);
  if (local > n) {
    // Shrinking: idle workers stop at once, sleeping ones first (the
    // longest asleep first), then waiting ones; busy ones after their
    // current attempt.
    std::vector<key_type> idle(sleeping_.begin(), sleeping_.end());
    for (auto& kvp : workers_)
      if (kvp.second.phase == worker_phase::waiting &&
          !may_take_ahead(kvp.first))
        idle.push_back(kvp.first); // (Else it may be running that entry.)
    for (auto key : idle) {
      if (local == n)
        break;
      if (!workers_[key].joined) {
        retire(key);
        --local;
      }
    }
    for (auto& kvp : workers_) {
      if (local == n)
        break;
      if (!kvp.second.joined && !kvp.second.retiring) {
        kvp.second.retiring = true;
        ++retiring_;
        --local;
      }
    }
  }
  log(log_level::info, "resized to " + std::to_string(n) + " workers");
  if (wants(event_kind::resized))
    publish({event_kind::resized, 0, 0, n, {}, {}});
  refresh_counts();
  // Growing may have taken back every retiring worker a shrink waited for.
  check_resized();
  return caf::none;
}

caf::error shepherd_state::resize_request(size_t n) {
  if (auto& limits = cfg_.options.autoscale();
      limits && (n < limits->min || n > limits->max))
    return caf::make_error(
        pool_errc::invalid_option, std::string{"workers"},
        "must lie within autoscale.min (" + std::to_string(limits->min) +
            ") and autoscale.max (" + std::to_string(limits->max) + ")");
  return resize(n);
}

void shepherd_state::retire(key_type key) {
  auto handle = workers_[key].handle;
  remove_worker(key);
  self_->send_exit(handle, caf::exit_reason::user_shutdown);
}

void shepherd_state::check_resized() {
  if (retiring_ > 0 || resize_promises_.empty())
    return;
  for (auto& rp : resize_promises_)
    rp.deliver(caf::unit);
  resize_promises_.clear();
}

void shepherd_state::on_counts(const queue_counts& counts) {
  set_available(counts.available + ready_.size() + (ahead_ ? 1 : 0));
  auto unclaimed =
      available_ > waiting_ ? available_ - waiting_ : size_t{0};
  auto n = std::min(unclaimed, sleeping_.size());
  for (size_t i = 0; i < n; ++i) {
    auto key = sleeping_.back();
    auto& slot = workers_[key];
    set_phase(key, slot, worker_phase::waiting);
    if (slot.joined || !cfg_.options.short_cuts()) {
      self_->send(slot.handle, wake_up_atom_v);
    } else {
      // Our own workers take work while asleep: ask the queue on the
      // worker's behalf instead of waking it to ask (saves a round trip to
      // the worker, and a dedicated worker's thread is woken only for work).
      slot.unaware = true;
      slot.asking = true;
      find_work(slot.handle);
    }
  }
  if (counts.next_due_in != no_deadline)
    arm_timer(counts.next_due_in);
  prefetch();
}

void shepherd_state::dispatch(const caf::actor& worker,
                              std::vector<work_record> batch) {
  auto slot = find_worker(worker);
  if (slot != nullptr)
    slot->asking = false;
  auto t = now();
  // Whether the worker still waits; if it left meanwhile, the entries go
  // back, due now.
  auto taker = slot != nullptr && slot->phase == worker_phase::waiting;
  size_t kept = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    auto& record = batch[i];
    auto op = operations_.find(record.id.operation);
    if (op == operations_.end() || op->second.attempt != record.id.attempt ||
        op->second.holder)
      continue; // The operation ended, moved on to another attempt, or is
                // already dispatched: this entry is obsolete.
    if (!taker) {
      add_work(record.id, t);
      continue;
    }
    if (orphaned(record.id.operation))
      continue;
    // Held from here on (a second entry of the same attempt, which a
    // respawned queue may hold, is obsolete even within this batch).
    op->second.holder = worker;
    ++in_flight_;
    queue_wait_.record(t - op->second.stamp);
    op->second.stamp = t;
    if (kept != i)
      batch[kept] = std::move(record);
    ++kept;
  }
  batch.resize(kept);
  if (batch.empty()) {
    if (taker) {
      slot->asking = true;
      find_work(worker);
    }
    return;
  }
  slot->unaware = false;
  slot->started = t;
  slot->held.clear();
  slot->held.reserve(batch.size());
  for (auto& record : batch)
    slot->held.push_back(record.id);
  set_phase(key_of(worker), *slot, worker_phase::working);
  if (auto timeout = cfg_.options.attempt_timeout())
    self_->delayed_send(self_, *timeout, attempt_timeout_atom_v,
                        batch.front().id, worker.address());
  if (batch.size() == 1) {
    self_->send(worker, work_to_do_atom_v, std::move(batch.front()));
  } else {
    ++totals_.batches;
    totals_.batched += batch.size();
    // With a timeout, each attempt reports as it finishes (its timer starts
    // when the one before it reported); else the batch reports once.
    auto each = cfg_.options.attempt_timeout().has_value();
    self_->send(worker, work_to_do_atom_v, std::move(batch), each);
  }
  hand_ahead();
  prefetch();
}

size_t shepherd_state::batch_size(bool joined) const {
  auto& opts = cfg_.options;
  auto most = opts.max_batch();
  auto workers = workers_.size();
  if (most <= 1 || joined || available_ <= workers || job_ns_ < 0)
    return 1;
  auto budget = opts.batch_time();
  auto by_time = job_ns_ > 0 ? static_cast<double>(budget.count()) / job_ns_
                             : static_cast<double>(most);
  auto fair = (available_ + workers - 1) / workers;
  auto n = std::min<double>({static_cast<double>(most), by_time,
                             static_cast<double>(fair)});
  return n >= 2 ? static_cast<size_t>(n) : size_t{1};
}

void shepherd_state::put_to_sleep(const caf::actor& worker,
                                  caf::timespan wait) {
  auto slot = find_worker(worker);
  if (slot != nullptr)
    slot->asking = false;
  if (slot != nullptr && slot->phase == worker_phase::waiting) {
    set_phase(key_of(worker), *slot, worker_phase::sleeping);
    if (slot->unaware)
      slot->unaware = false; // Asked for while asleep: it still sleeps.
    else
      self_->send(worker, go_to_sleep_atom_v);
  }
  if (wait != no_deadline)
    arm_timer(wait);
}

void shepherd_state::arm_timer(caf::timespan wait) {
  arm(timer_at_, now() + wait, due_timer_atom_v);
}

template <class Atom>
void shepherd_state::arm(std::optional<time_point>& at, time_point deadline,
                         Atom tag) {
  if (at && *at <= deadline)
    return;
  at = deadline;
  self_->delayed_send(self_, deadline - now(), tag);
}

void shepherd_state::fired(std::optional<time_point>& at) {
  if (at && now() >= *at)
    at.reset();
}

// -- monitoring ---------------------------------------------------------------

void shepherd_state::log(log_level level, const std::string& text) {
  if (!log_)
    return;
  try {
    log_(level, cfg_.options.name(), text);
  } catch (...) {
    // A failing log hook must not take the pool down.
  }
}

void shepherd_state::publish(pool_event ev) {
  auto bit = event_bit(ev.kind);
  for (auto& sub : subscribers_)
    if ((sub.mask & bit) != 0)
      self_->send(sub.handle, ev);
}

caf::error shepherd_state::subscribe(caf::actor who, uint32_t mask) {
  if (!who)
    return caf::make_error(pool_errc::unexpected_message,
                           std::string{"pool_sub with an invalid actor"});
  if (mask == 0 || (mask & ~event_mask::all) != 0)
    return caf::make_error(pool_errc::invalid_option, std::string{"mask"},
                           "must name at least one event kind and no "
                           "unknown ones (mask " +
                               std::to_string(mask) + ")");
  auto i = std::find_if(subscribers_.begin(), subscribers_.end(),
                        [&](const subscriber& x) { return x.handle == who; });
  if (i != subscribers_.end()) {
    i->mask = mask;
  } else {
    self_->monitor(who);
    subscribers_.push_back(subscriber{std::move(who), mask});
  }
  update_subscribed_kinds();
  return caf::none;
}

void shepherd_state::update_subscribed_kinds() {
  subscribed_kinds_ = 0;
  for (auto& sub : subscribers_)
    subscribed_kinds_ |= sub.mask;
}

void shepherd_state::unsubscribe(const caf::actor_addr& who) {
  auto i = std::remove_if(
      subscribers_.begin(), subscribers_.end(),
      [&](const subscriber& x) { return x.handle.address() == who; });
  if (i == subscribers_.end())
    return;
  subscribers_.erase(i, subscribers_.end());
  update_subscribed_kinds();
}

void shepherd_state::set_available(uint64_t n) {
  available_ = n;
  totals_.available_high = std::max(totals_.available_high, n);
  if (cfg_.options.backlog_alarm() || cfg_.options.autoscale())
    check_backlog();
}

void shepherd_state::check_backlog() {
  auto& opts = cfg_.options;
  auto n = workers_.size();
  if (available_ < n) {
    backlog_since_.reset();
    grow_since_.reset();
    if (alarm_) {
      alarm_ = false;
      log(log_level::info,
          "backlog alarm cleared: " + std::to_string(available_) +
              " operations available, " + std::to_string(n) + " workers");
      if (wants(event_kind::alarm_cleared))
        publish({event_kind::alarm_cleared, 0, 0, available_, {}, {}});
    }
    return;
  }
  if (available_ == n)
    return; // Neither above nor below: the condition keeps its state.
  auto t = now();
  if (!backlog_since_)
    backlog_since_ = t;
  if (!grow_since_)
    grow_since_ = t;
  if (auto after = opts.backlog_alarm(); after && !alarm_) {
    if (t - *backlog_since_ >= *after) {
      alarm_ = true;
      ++totals_.alarms_raised;
      log(log_level::warning, "backlog alarm: " + std::to_string(available_) +
                                  " operations available for more than " +
                                  duration_text(*after) + " with " +
                                  std::to_string(n) + " workers");
      if (wants(event_kind::alarm_raised))
        publish({event_kind::alarm_raised, 0, 0, available_, {}, {}});
    } else {
      arm(backlog_timer_at_, *backlog_since_ + *after, backlog_timer_atom_v);
    }
  }
  if (auto& limits = opts.autoscale();
      limits && configured_ < limits->max && !draining_) {
    if (t - *grow_since_ >= limits->grow_after) {
      // Double, but not beyond the backlog or the maximum.
      auto target = std::min<uint64_t>(2 * configured_, available_);
      target = std::max<uint64_t>(target, configured_ + 1);
      target = std::min<uint64_t>(target, limits->max);
      grow_since_ = t;
      log(log_level::info,
          "autoscale: growing to " + std::to_string(target) + " workers");
      resize(static_cast<size_t>(target));
    } else {
      arm(backlog_timer_at_, *grow_since_ + limits->grow_after,
          backlog_timer_atom_v);
    }
  }
}

void shepherd_state::check_overload() {
  auto waiting = operations_.size() - in_flight_ + parked_.size();
  totals_.waiting_high = std::max<uint64_t>(totals_.waiting_high, waiting);
  auto threshold =
      cfg_.options.overload_threshold().value_or(100 * configured_);
  if (waiting <= threshold)
    return;
  auto t = now();
  if (last_overload_ && t - *last_overload_ < cfg_.options.overload_interval())
    return;
  last_overload_ = t;
  ++totals_.overload_warnings;
  log(log_level::warning, "overloaded: " + std::to_string(waiting) +
                              " operations waiting, threshold " +
                              std::to_string(threshold) + " with " +
                              std::to_string(configured_) + " workers");
  if (wants(event_kind::overload))
    publish({event_kind::overload, 0, 0, waiting, {}, {}});
}

void shepherd_state::note_sleeping(worker_slot& slot) {
  slot.slept_at = now();
  auto& limits = cfg_.options.autoscale();
  if (limits && !slot.joined && configured_ > limits->min)
    arm(idle_timer_at_, slot.slept_at + limits->shrink_after,
        idle_timer_atom_v);
}

void shepherd_state::shrink_idle() {
  auto& limits = cfg_.options.autoscale();
  if (!limits || configured_ <= limits->min || draining_)
    return;
  auto t = now();
  size_t idle = 0;
  std::optional<time_point> next; // When the next sleeper becomes idle.
  for (auto key : sleeping_) {
    auto& slot = workers_[key];
    if (slot.joined)
      continue;
    if (t - slot.slept_at >= limits->shrink_after)
      ++idle;
    else if (!next || slot.slept_at < *next)
      next = slot.slept_at;
  }
  auto surplus = std::min(idle, configured_ - limits->min);
  if (surplus > 0) {
    // `resize` stops the longest-sleeping workers first: exactly these.
    log(log_level::info,
        "autoscale: shrinking to " + std::to_string(configured_ - surplus) +
            " workers (idle for " + duration_text(limits->shrink_after) + ")");
    resize(configured_ - surplus);
  }
  if (next && configured_ > limits->min)
    arm(idle_timer_at_, *next + limits->shrink_after, idle_timer_atom_v);
}

void shepherd_state::release_holder(operation& op) {
  if (op.holder) {
    op.holder = nullptr;
    --in_flight_;
  }
}

// -- queue exchanges ----------------------------------------------------------

void shepherd_state::send_exchange(queue_exchange ex) {
  switch (ex.kind) {
    case queue_exchange::add: {
      auto op = operations_.find(ex.id.operation);
      if (op == operations_.end() || op->second.attempt != ex.id.attempt) {
        // Nothing left to add; a caller waiting for the id still gets it
        // (its operation has ended meanwhile and says so by id).
        if (ex.promise.pending())
          ex.promise.deliver(ex.id.operation);
        return;
      }
      auto t = now();
      auto delay = ex.due > t ? ex.due - t : caf::timespan::zero();
      if (ex.key.empty())
        self_->send(queue_, add_work_atom_v,
                    work_record{ex.id, op->second.payload}, delay);
      else
        self_->send(queue_, add_work_atom_v,
                    work_record{ex.id, op->second.payload}, delay, ex.key);
      ex.due_now = delay == caf::timespan::zero();
      if (ex.due_now)
        ++adds_pending_;
      break;
    }
    case queue_exchange::add_many: {
      // Entries of operations that ended or moved on meanwhile are left out.
      std::vector<work_record> records;
      records.reserve(ex.ids.size());
      auto live = ex.ids.begin();
      for (auto& id : ex.ids) {
        auto op = operations_.find(id.operation);
        if (op == operations_.end() || op->second.attempt != id.attempt)
          continue;
        records.push_back(work_record{id, op->second.payload});
        *live++ = id;
      }
      ex.ids.erase(live, ex.ids.end());
      if (records.empty())
        return;
      self_->send(queue_, add_work_atom_v, std::move(records));
      ex.due_now = true;
      ++adds_pending_;
      break;
    }
    case queue_exchange::get:
      self_->send(queue_, get_work_atom_v, ex.wanted);
      getting_ += ex.wanted;
      break;
    case queue_exchange::count:
    case queue_exchange::stats:
      self_->send(queue_, count_work_atom_v);
      break;
    case queue_exchange::remove:
      self_->send(queue_, remove_work_atom_v, ex.id.operation);
      break;
    case queue_exchange::finish:
    case queue_exchange::note:
    case queue_exchange::find_key:
    case queue_exchange::lookup:
      self_->send(queue_, ex.sent);
      break;
  }
  if (ex.seq == 0)
    ex.seq = next_exchange_++;
  exchanges_of(answer_of(ex.kind)).push_back(std::move(ex));
}

void shepherd_state::request_work(const caf::actor& worker, size_t n) {
  queue_exchange ex{queue_exchange::get, {}, {}, worker, {}};
  ex.wanted = static_cast<uint32_t>(n);
  send_exchange(std::move(ex));
}

bool shepherd_state::hand_out_directly(uint64_t id, operation& op,
                                       time_point t) {
  // Only when nothing is due or on its way into the queue (the new entry
  // would come out first anyway; a durable store acknowledges only what it
  // holds, so it must see the entry) and a local worker sleeps.
  if (sleeping_.empty() || !nothing_due())
    return false;
  auto key = sleeping_.back();
  auto& slot = workers_[key];
  if (slot.joined)
    return false;
  op.stamp = t;
  set_phase(key, slot, worker_phase::waiting);
  slot.asking = true;
  ++totals_.direct_handouts;
  std::vector<work_record> batch;
  batch.push_back(work_record{attempt_id{id, op.attempt}, op.payload});
  dispatch(slot.handle, std::move(batch));
  return true;
}

bool shepherd_state::nothing_due() const {
  // (A durable queue recounts when it commits, so its counts may lag
  // entries it has already handed out: ask it.)
  if (!cfg_.options.short_cuts() || durable_ || available_ > 0 ||
      !entries_.empty())
    return false;
  auto adding = [](const queue_exchange& x) {
    return x.kind == queue_exchange::add || x.kind == queue_exchange::add_many
           || x.kind == queue_exchange::count;
  };
  return !any_exchange(adding);
}

void shepherd_state::find_work(const caf::actor& worker) {
  if (auto back = withdraw_ahead()) {
    // Handed ahead to workers still busy: older than anything ready.
    std::vector<work_record> batch;
    batch.push_back(std::move(*back));
    dispatch(worker, std::move(batch));
    return;
  }
  auto slot = find_worker(worker);
  auto n = batch_size(slot != nullptr && slot->joined);
  if (!ready_.empty()) {
    dispatch(worker, take_ready(n));
    return;
  }
  if (askers_.size() < prefetching_) {
    askers_.push_back(worker);
    return;
  }
  if (slot != nullptr && !slot->joined && nothing_due()) {
    // The queue would answer no_work: no trip to it (the due timer, armed
    // from the queue's counts, wakes workers for delayed entries).
    put_to_sleep(worker, no_deadline);
    return;
  }
  request_work(worker, n);
}

std::vector<work_record> shepherd_state::take_ready(size_t n) {
  std::vector<work_record> batch;
  n = std::min(n, ready_.size());
  batch.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    batch.push_back(std::move(ready_.front()));
    ready_.pop_front();
    take_available();
  }
  return batch;
}

void shepherd_state::serve_askers() {
  // Oldest first while entries are ready; then askers no pending prefetch
  // will serve ask the queue themselves (find_work does either).
  while (!askers_.empty() && !ready_.empty()) {
    auto worker = std::move(askers_.front());
    askers_.pop_front();
    find_work(worker);
  }
  while (askers_.size() > prefetching_) {
    auto worker = std::move(askers_.back());
    askers_.pop_back();
    find_work(worker);
  }
}

void shepherd_state::prefetch() {
  if (!cfg_.options.short_cuts())
    return;
  // Enough for the next batch of every busy worker.
  auto limit = std::min(busy_ * batch_size(false), max_ready);
  auto have = ready_.size() + prefetching_;
  auto out = ready_.size() + (ahead_ ? 1 : 0) + getting_;
  auto unasked = available_ > out ? available_ - out : uint64_t{0};
  if (have >= limit || unasked == 0)
    return;
  auto n = std::min<uint64_t>(limit - have, unasked);
  prefetching_ += n;
  queue_exchange ex{queue_exchange::get, {}, {}, {}, {}};
  ex.wanted = static_cast<uint32_t>(n);
  send_exchange(std::move(ex));
}

void shepherd_state::on_prefetched(std::vector<work_record> records,
                                   uint32_t asked) {
  prefetching_ -= asked;
  for (auto& record : records)
    ready_.push_back(std::move(record));
  serve_askers();
  hand_ahead();
}

// -- hand-ahead ---------------------------------------------------------------

void shepherd_state::hand_ahead() {
  if (!cfg_.options.hand_ahead() || ahead_ || ready_.empty() ||
      !askers_.empty() || !sleeping_.empty() || batch_size(false) > 1)
    return;
  std::vector<key_type> to;
  for (auto& kvp : workers_) {
    auto& slot = kvp.second;
    if (!slot.joined && !slot.retiring &&
        slot.phase == worker_phase::working && slot.held.size() == 1) {
      to.push_back(kvp.first);
      if (to.size() == max_ahead_takers)
        break;
    }
  }
  if (to.empty())
    return;
  while (!ready_.empty()) {
    // (Still available while handed ahead: taken off when settled.)
    auto record = std::move(ready_.front());
    ready_.pop_front();
    auto op = operations_.find(record.id.operation);
    if (op == operations_.end() || op->second.attempt != record.id.attempt ||
        op->second.holder || orphaned(record.id.operation)) {
      take_available(); // Obsolete (see dispatch).
      if (ahead_)
        return; // (Failing an orphan may have handed one ahead meanwhile.)
      continue;
    }
    // Held from here on, by whoever takes it (see took_ahead); its queue
    // wait ends when it starts.
    op->second.holder = workers_[to.front()].handle;
    ++in_flight_;
    ahead_ = ahead_offer{record.id, claim_ticket{}, std::move(to)};
    ++totals_.handed_ahead;
    for (auto key : ahead_->to)
      self_->send(workers_[key].handle, work_to_do_atom_v, record,
                  ahead_->ticket);
    break;
  }
  prefetch();
}

bool shepherd_state::may_take_ahead(key_type key) const {
  if (!ahead_ ||
      std::find(ahead_->to.begin(), ahead_->to.end(), key) == ahead_->to.end())
    return false;
  return ahead_->ticket.is_open() || ahead_->ticket.taken_by(key->id());
}

bool shepherd_state::took_ahead(key_type key, worker_slot& slot) {
  // (Only a worker it was sent to: a joined worker's proxy may carry the same
  // actor id as a local one, ids being per node.)
  if (!may_take_ahead(key) || !ahead_->ticket.taken_by(key->id()))
    return false;
  // It took the entry right after its last report: it runs since about
  // now. (If the operation ended meanwhile, the report is dropped as stale
  // like any other of an ended operation.)
  auto id = ahead_->id;
  ahead_.reset();
  take_available();
  ++totals_.taken_ahead;
  auto t = now();
  if (auto op = operations_.find(id.operation);
      op != operations_.end() && op->second.attempt == id.attempt) {
    op->second.holder = slot.handle;
    queue_wait_.record(t - op->second.stamp);
    op->second.stamp = t;
  }
  slot.held.assign(1, id);
  slot.started = t;
  set_phase(key, slot, worker_phase::working);
  if (auto timeout = cfg_.options.attempt_timeout())
    self_->delayed_send(self_, *timeout, attempt_timeout_atom_v, id,
                        slot.handle.address());
  return true;
}

std::optional<work_record> shepherd_state::withdraw_ahead() {
  if (!ahead_ || !ahead_->ticket.withdraw())
    return std::nullopt; // None, or taken: settled when its taker asks.
  auto id = ahead_->id;
  ahead_.reset();
  take_available();
  auto op = operations_.find(id.operation);
  if (op == operations_.end() || op->second.attempt != id.attempt)
    return std::nullopt;
  release_holder(op->second);
  return work_record{id, op->second.payload};
}

void shepherd_state::withdraw_ended(uint64_t id) {
  if (ahead_ && ahead_->id.operation == id && ahead_->ticket.withdraw()) {
    ahead_.reset();
    take_available();
  } // (Taken: it runs, and its report is stale.)
}

std::optional<attempt_id> shepherd_state::drop_ahead_taker(key_type key) {
  if (!may_take_ahead(key))
    return std::nullopt;
  auto id = ahead_->id;
  if (ahead_->ticket.withdraw()) {
    // Open: the stopping worker must not take it, so nobody will; it goes
    // back, unstarted.
    ahead_.reset();
    take_available();
    return_unstarted({id}, 0);
    return std::nullopt;
  }
  if (!ahead_->ticket.taken_by(key->id()))
    return std::nullopt;
  ahead_.reset();
  take_available();
  return id;
}


bool shepherd_state::orphaned(uint64_t id) {
  auto extras = find_extras(id);
  if (extras == nullptr || !extras->caller || !callers_[extras->caller].down)
    return false;
  // Nobody is waiting for this one any more: do not start it.
  fail(id, caf::make_error(pool_errc::cancelled, id,
                           std::string{"caller terminated"}));
  return true;
}

void shepherd_state::add_work(attempt_id id, time_point due) {
  if (auto op = operations_.find(id.operation); op != operations_.end())
    op->second.stamp = due;
  put_entry({queue_exchange::add, id, due, {}, {}});
}

void shepherd_state::put_entry(queue_exchange ex) {
  auto due_now = ex.due <= now();
  if (due_now && ex.key.empty() && !ex.promise.pending() &&
      adds_pending_ > 0 && cfg_.options.max_batch() > 1) {
    entries_.push_back(ex.id);
    return;
  }
  if (due_now)
    flush_entries(); // Entries due now keep their order.
  send_exchange(std::move(ex));
}

void shepherd_state::flush_entries() {
  if (entries_.empty())
    return;
  queue_exchange ex{queue_exchange::add_many, {}, now(), {}, {}};
  ex.ids = std::move(entries_);
  entries_.clear();
  send_exchange(std::move(ex));
}

void shepherd_state::added() {
  if (--adds_pending_ == 0)
    flush_entries();
}

void shepherd_state::refresh_counts() {
  send_exchange({queue_exchange::count, {}, {}, {}, {}});
}

shepherd_state::answer_kind
shepherd_state::answer_of(queue_exchange::kind_type kind) {
  switch (kind) {
    case queue_exchange::get:
      return answer_kind::work;
    case queue_exchange::find_key:
      return answer_kind::key;
    case queue_exchange::lookup:
      return answer_kind::record;
    default:
      return answer_kind::counts;
  }
}

std::optional<queue_exchange>
shepherd_state::take_exchange(answer_kind expected) {
  auto& fifo = exchanges_of(expected);
  if (self_->current_sender() != queue_ || fifo.empty())
    return std::nullopt; // Not from our queue: a stranger's message.
  auto result = std::move(fifo.front());
  fifo.pop_front();
  if (result.kind == queue_exchange::get)
    getting_ -= result.wanted;
  return result;
}

void shepherd_state::on_queue_error(caf::error& err) {
  // Only requests answered with counts can fail.
  auto& fifo = exchanges_of(answer_kind::counts);
  if (self_->current_sender() != queue_ || fifo.empty())
    return;
  auto ex = std::move(fifo.front());
  fifo.pop_front();
  switch (ex.kind) {
    case queue_exchange::add_many:
      // The store refused one of the entries: each goes again on its own,
      // so only one the store refuses by itself fails.
      for (auto& id : ex.ids)
        send_exchange({queue_exchange::add, id, now(), {}, {}});
      break;
    case queue_exchange::add:
      if (ex.promise.pending()) {
        // A tracked submit that could not be made durable: refused, not
        // acknowledged; its caller hears nothing more of it.
        ++totals_.rejected;
        log(log_level::error,
            "submit refused, the store failed: " + describe(err));
        ex.promise.deliver(err);
        forget(ex.id.operation);
      } else {
        // The store refused the entry: nothing was accepted for good.
        fail(ex.id.operation, std::move(err));
      }
      break;
    case queue_exchange::get:
      put_to_sleep(ex.worker, no_deadline);
      break;
    case queue_exchange::stats:
    case queue_exchange::lookup:
      ex.promise.deliver(std::move(err));
      break;
    case queue_exchange::find_key: {
      auto i = key_lookups_.find(ex.key);
      if (i != key_lookups_.end()) {
        for (auto& sub : i->second)
          sub.promise.deliver(err);
        lookups_pending_ -= i->second.size();
        key_lookups_.erase(i);
      }
      admit_parked();
      check_drained();
      break;
    }
    case queue_exchange::finish:
    case queue_exchange::note:
      // The caller has its outcome; only the store's record is missing.
      log(log_level::error,
          "the store could not record an outcome: " + describe(err));
      check_drained();
      break;
    case queue_exchange::count:
    case queue_exchange::remove:
      break;
  }
  if (ex.due_now)
    added(); // sends the entries kept meanwhile
}

void shepherd_state::spawn_queue() {
  if (cfg_.options.dedicated_control())
    queue_ = self_->spawn<caf::detached>(queue_actor, cfg_.store,
                                         cfg_.options.commit_interval());
  else
    queue_ =
        self_->spawn(queue_actor, cfg_.store, cfg_.options.commit_interval());
  self_->monitor(queue_);
}

void shepherd_state::restart_queue() {
  if (!note_restart())
    return;
  ++totals_.queue_restarts;
  spawn_queue();
  // Answers travel in order and before the down message, so whatever is
  // still pending never reached the old queue's store (or its answer would
  // have arrived): sending it again neither loses nor duplicates entries.
  std::vector<queue_exchange> pending;
  getting_ = 0;      // (counted again as they are sent again)
  adds_pending_ = 0;
  for (auto& fifo : exchanges_) {
    std::move(fifo.begin(), fifo.end(), std::back_inserter(pending));
    fifo.clear();
  }
  std::sort(pending.begin(), pending.end(),
            [](const queue_exchange& x, const queue_exchange& y) {
              return x.seq < y.seq;
            });
  for (auto& ex : pending)
    send_exchange(std::move(ex));
  if (adds_pending_ == 0)
    flush_entries(); // no add left whose answer would send them
}

// -- outcomes -----------------------------------------------------------------

void shepherd_state::on_status(const attempt_id& id, caf::message* result,
                               caf::error* failure) {
  auto sender = caf::actor_cast<caf::actor>(self_->current_sender());
  auto slot = find_worker(sender);
  if (slot == nullptr || slot->phase != worker_phase::working ||
      slot->held.empty() || slot->held.front() != id) {
    ++totals_.stale_replies; // Not the attempt this worker holds (first).
    return;
  }
  auto t = now();
  auto elapsed = t - slot->started;
  slot->started = t;
  slot->held.erase(slot->held.begin());
  if (!slot->held.empty()) {
    // A batch reported attempt by attempt: the next one starts now.
    auto next = slot->held.front();
    if (auto op = operations_.find(next.operation); op != operations_.end())
      op->second.stamp = t;
    if (auto timeout = cfg_.options.attempt_timeout())
      self_->delayed_send(self_, *timeout, attempt_timeout_atom_v, next,
                          sender.address());
  } else {
    done_holding(key_of(sender), *slot);
  }
  auto op = operations_.find(id.operation);
  if (op == operations_.end() || op->second.attempt != id.attempt) {
    ++totals_.stale_replies;
    return;
  }
  note_processing(elapsed, 1);
  on_outcome(op, id, result, failure, elapsed);
}

void shepherd_state::on_status(std::vector<attempt_outcome>& outcomes) {
  auto sender = caf::actor_cast<caf::actor>(self_->current_sender());
  auto slot = find_worker(sender);
  // The outcomes must be those of the first attempts of the batch held.
  auto matches = [&] {
    if (outcomes.empty() || outcomes.size() > slot->held.size())
      return false;
    for (size_t i = 0; i < outcomes.size(); ++i)
      if (outcomes[i].id != slot->held[i])
        return false;
    return true;
  };
  if (slot == nullptr || slot->phase != worker_phase::working || !matches()) {
    ++totals_.stale_replies;
    return;
  }
  auto held = std::move(slot->held);
  slot->held.clear();
  // Since the first attempt reported here started, each job took its
  // share of the time.
  auto elapsed = now() - slot->started;
  done_holding(key_of(sender), *slot);
  note_processing(elapsed, outcomes.size());
  // Attempts the worker did not start (it stopped early) go back first:
  // settling an outcome may admit newer submits.
  return_unstarted(held, outcomes.size());
  auto share = elapsed / static_cast<int64_t>(outcomes.size());
  for (auto& x : outcomes) {
    auto op = operations_.find(x.id.operation);
    if (op == operations_.end() || op->second.attempt != x.id.attempt ||
        op->second.holder != sender) {
      ++totals_.stale_replies;
      continue;
    }
    if (x.failed())
      on_outcome(op, x.id, nullptr, &x.error, share);
    else
      on_outcome(op, x.id, &x.result, nullptr, share);
  }
}

void shepherd_state::return_unstarted(const std::vector<attempt_id>& held,
                                      size_t from) {
  auto t = now();
  for (size_t i = from; i < held.size(); ++i) {
    auto op = operations_.find(held[i].operation);
    if (op == operations_.end() || op->second.attempt != held[i].attempt)
      continue;
    release_holder(op->second);
    add_work(held[i], t);
  }
}

void shepherd_state::fail_held(const std::vector<attempt_id>& held,
                               caf::error reason) {
  // The first attempt held was running (or, in a batch reported as a
  // whole, is taken to have been); the others go back unstarted (first:
  // failing an operation may admit newer submits).
  return_unstarted(held, 1);
  if (!held.empty())
    attempt_failed(held.front(), std::move(reason));
}

void shepherd_state::done_holding(key_type key, worker_slot& slot) {
  if (slot.retiring && !may_take_ahead(key)) {
    retire(key);
    check_resized();
  } else {
    // (A surplus worker that may have taken the entry handed ahead stops
    // when it asks, or after reporting that entry.)
    // The worker sends give_work right after its last status reply.
    set_phase(key, slot, worker_phase::waiting);
  }
}

void shepherd_state::note_processing(caf::timespan elapsed, size_t jobs) {
  auto per_job = static_cast<double>(elapsed.count()) /
                 static_cast<double>(std::max<size_t>(jobs, 1));
  // A moving average over roughly the last eight reports.
  job_ns_ = job_ns_ < 0 ? per_job : job_ns_ + (per_job - job_ns_) / 8;
}

void shepherd_state::on_outcome(operation_map::iterator op,
                                const attempt_id& id, caf::message* result,
                                caf::error* failure,
                                caf::timespan processing) {
  // (Both paths release the holder: `forget` and `attempt_failed`.)
  processing_.record(processing);
  if (result != nullptr)
    complete(op, std::move(*result));
  else
    attempt_failed(id, std::move(*failure));
}

void shepherd_state::on_attempt_timeout(const attempt_id& id,
                                        const caf::actor_addr& addr) {
  // The worker's first attempt held is the one running (within a batch,
  // each attempt reports as it finishes and the timer of the next one
  // starts then). It counts even if its operation was cancelled meanwhile:
  // a stuck worker holding the rest of a batch must not keep it for good.
  auto key = caf::actor_cast<key_type>(addr);
  auto i = workers_.find(key);
  if (i == workers_.end() || i->second.held.empty() ||
      i->second.held.front() != id)
    return; // Finished in time, or the worker is gone.
  auto worker = i->second.handle;
  auto slot = &i->second;
  ++totals_.timed_out;
  if (!slot->joined) {
    // A job cannot be interrupted: the worker is abandoned and killed; a
    // dedicated worker stuck in user code keeps its thread until the job
    // returns. Its late reply is dropped as stale.
    // Urgent: a worker running a batch attempt by attempt stops before
    // its next attempt, which the shepherd hands out again.
    abandoned_.emplace(key, worker);
    worker->eq_impl(caf::make_message_id(caf::message_priority::high),
                    self_->ctrl(), self_->context(),
                    caf::exit_msg{self_->address(), caf::exit_reason::kill});
  }
  worker_lost(key,
              caf::make_error(pool_errc::timed_out,
                              duration_text(*cfg_.options.attempt_timeout())));
}

void shepherd_state::worker_lost(key_type key, caf::error reason) {
  auto i = workers_.find(key);
  auto joined = i->second.joined;
  auto held = std::move(i->second.held);
  // The entry handed ahead: if it took it, it was running it (or it comes
  // after those held, unstarted); if still open, it goes back.
  if (auto id = drop_ahead_taker(key))
    held.push_back(*id);
  remove_worker(key);
  fail_held(held, std::move(reason));
  if (!joined && !replace_worker())
    return;
  check_resized();
  // Work the departed worker was woken for must find another taker.
  refresh_counts();
}

void shepherd_state::on_down(caf::down_msg& msg) {
  if (msg.source == queue_.address()) {
    log(log_level::warning,
        "queue terminated (" + describe(msg.reason) + "), restarting it");
    restart_queue();
    return;
  }
  unsubscribe(msg.source); // (It may be a worker or a caller, too.)
  if (auto watch = callers_.find(msg.source); watch != callers_.end())
    watch->second.down = true; // (It may be a worker, too.)
  auto key = caf::actor_cast<key_type>(msg.source);
  if (abandoned_.erase(key) > 0)
    return;
  if (workers_.count(key) > 0)
    worker_lost(key,
                caf::make_error(pool_errc::worker_down, describe(msg.reason)));
}

void shepherd_state::attempt_failed(const attempt_id& id, caf::error reason) {
  auto i = operations_.find(id.operation);
  if (i == operations_.end() || i->second.attempt != id.attempt)
    return;
  auto& op = i->second;
  release_holder(op);
  auto t = now();
  auto& history = extras_of(id.operation).history;
  history.push_back(
      attempt_failure{id.attempt, t - op.submitted_at, std::move(reason)});
  if (durable_)
    record(queue_exchange::note,
           caf::make_message(note_failure_atom_v, id.operation,
                             history.back()));
  if (id.attempt < cfg_.options.max_attempts()) {
    ++totals_.retried;
    if (wants(event_kind::retried))
      publish({event_kind::retried,
               id.operation,
               id.attempt,
               0,
               {},
               history.back().reason});
    op.attempt = id.attempt + 1;
    add_work(attempt_id{id.operation, op.attempt},
             t + backoff_->next(id.attempt));
    return;
  }
  fail(id.operation, caf::make_error(pool_errc::operation_failed, id.operation,
                                     std::move(history)));
}

template <class Atom, class Outcome>
void shepherd_state::settle(operation_map::iterator op, Atom tag,
                            Outcome outcome) {
  if (op->second.tracked)
    self_->send(caf::actor_cast<caf::actor>(op->second.caller), tag,
                op->first, std::move(outcome));
  else
    respond(op->first, op->second, std::move(outcome));
  forget(op);
}

void shepherd_state::forget(uint64_t operation_id) {
  if (auto op = operations_.find(operation_id); op != operations_.end())
    forget(op);
}

void shepherd_state::forget(operation_map::iterator op) {
  // An entry taken out ahead of time no longer counts as available. (A
  // dispatched operation has none there, but for a duplicate of a respawned
  // queue, which is dropped when its turn comes.)
  auto obsolete = [id = op->first](const work_record& x) {
    return x.id.operation == id;
  };
  if (!op->second.holder) {
    if (auto i = std::find_if(ready_.begin(), ready_.end(), obsolete);
        i != ready_.end()) {
      ready_.erase(i);
      take_available();
    }
  }
  withdraw_ended(op->first);
  release_holder(op->second);
  auto promised = op->second.promised;
  if (auto extras = find_extras(op->first)) {
    release_caller(extras->caller);
    if (!extras->key.empty())
      unique_keys_.erase(extras->key);
    extras_.erase(op->first);
  }
  operations_.erase(op);
  admit_parked();
  check_drained();
  // Last: it may drop the last reference to this shepherd.
  if (promised && --promised_ == 0)
    keep_alive_ = nullptr;
}

void shepherd_state::complete(operation_map::iterator op,
                              caf::message result) {
  if (durable_)
    record(queue_exchange::finish,
           caf::make_message(finish_work_atom_v, op->first, result));
  if (wants(event_kind::completed))
    publish({event_kind::completed, op->first, 0, 0, result, {}});
  settle(op, op_done_atom_v, std::move(result));
  ++totals_.completed;
}

void shepherd_state::fail(uint64_t operation_id, caf::error err) {
  auto op = operations_.find(operation_id);
  if (op == operations_.end())
    return;
  auto cancelled = is(err, pool_errc::cancelled);
  if (durable_)
    record(queue_exchange::finish,
           caf::make_message(finish_work_atom_v, operation_id, err));
  if (wants(event_kind::failed))
    publish({event_kind::failed, operation_id, 0, 0, {}, err});
  settle(op, op_failed_atom_v, std::move(err));
  ++(cancelled ? totals_.cancelled : totals_.failed);
}

caf::error shepherd_state::cancel(uint64_t operation_id) {
  auto op = operations_.find(operation_id);
  if (op == operations_.end())
    return caf::make_error(pool_errc::unknown_operation, operation_id);
  // Queued: its entries leave the queue. Running: the worker finishes, and
  // its reply is dropped as stale.
  if (!op->second.holder)
    send_exchange(
        {queue_exchange::remove, attempt_id{operation_id, 0}, {}, {}, {}});
  fail(operation_id, caf::make_error(pool_errc::cancelled, operation_id));
  return caf::none;
}

void shepherd_state::release_caller(const caf::actor_addr& caller) {
  if (!caller)
    return;
  auto i = callers_.find(caller);
  if (i == callers_.end() || --i->second.pending > 0)
    return;
  // CAF's demonitor removes every monitor on that actor: keep it while the
  // actor is also a subscriber or a worker.
  auto also_watched =
      workers_.count(caf::actor_cast<key_type>(caller)) > 0 ||
      std::any_of(
          subscribers_.begin(), subscribers_.end(),
          [&](const subscriber& x) { return x.handle.address() == caller; });
  if (!i->second.down && !also_watched)
    self_->demonitor(caller);
  callers_.erase(i);
}

caf::result<void> shepherd_state::drain(std::optional<caf::timespan> deadline) {
  if (deadline && *deadline < caf::timespan::zero())
    return caf::make_error(pool_errc::invalid_delay, duration_text(*deadline));
  draining_ = true;
  drain_promises_.push_back(self_->make_response_promise());
  if (deadline)
    self_->delayed_send(self_, *deadline, drain_timer_atom_v);
  check_drained();
  return caf::delegated<void>{};
}

void shepherd_state::check_drained() {
  if (!draining_ || !operations_.empty() || !parked_.empty() ||
      !key_lookups_.empty() || drain_promises_.empty())
    return;
  // A durable store has recorded every outcome before the drain is done.
  auto recording = [](const queue_exchange& ex) {
    return ex.kind == queue_exchange::finish || ex.kind == queue_exchange::note;
  };
  if (any_exchange(recording))
    return;
  for (auto& rp : drain_promises_)
    rp.deliver(caf::unit);
  drain_promises_.clear();
  self_->quit(caf::exit_reason::normal);
}

caf::behavior shepherd(shepherd_actor* self, shepherd_config cfg) {
  return self->state.init(self, std::move(cfg));
}

} // namespace pool
