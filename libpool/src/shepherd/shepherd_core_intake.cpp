// The way in: submits accepted, parked, looked up by key or refused.
#include "pool/detail/shepherd_core.hpp"

#include <caf/make_message.hpp>

#include "pool/duration_text.hpp"

namespace pool {

void shepherd_core::submit(submission sub) {
  sub.intake = waits_.arrive();
  if (draining()) {
    refuse(sub, caf::make_error(pool_errc::closed,
                                std::string{"the pool is draining"}));
    return;
  }
  if (sub.delay < caf::timespan::zero()) {
    refuse(sub,
           caf::make_error(pool_errc::invalid_delay, duration_text(sub.delay)));
    return;
  }
  // A pending operation with this key answers at once, full queue or not.
  if (!sub.key.empty()) {
    if (auto id = table_.find_key(sub.key)) {
      answer_id(sub, id);
      return;
    }
  }
  switch (adm_.check(table_.waiting())) {
    case admission_verdict::accept:
      if (!sub.key.empty())
        submit_unique(std::move(sub));
      else
        accept(std::move(sub));
      return;
    case admission_verdict::park:
      ++mon_.counters().submitted;
      sub.counted = true;
      adm_.park(std::move(sub));
      note_waiting();
      return;
    case admission_verdict::reject: {
      ++mon_.counters().rejected;
      auto depth = table_.waiting() + adm_.looking_up();
      refuse(sub,
             caf::make_error(
                 pool_errc::overloaded, "queue depth " + std::to_string(depth),
                 "capacity " + std::to_string(adm_.capacity().value_or(0))));
      return;
    }
    case admission_verdict::closed:
      refuse(sub, caf::make_error(pool_errc::closed,
                                  std::string{"the pool is draining"}));
      return;
  }
}

void shepherd_core::submit_plain(reply_to&& caller, caf::message&& payload) {
  // What `submit` and `accept` do for a plain submit that `takes_plain`,
  // and nothing else.
  auto t = now();
  ++mon_.counters().submitted;
  auto promised = static_cast<bool>(caller);
  auto id = table_.add_plain(std::move(payload), std::move(caller), t,
                             waits_.arrive());
  if (promised && promised_++ == 0)
    fx_.keep_alive(true);
  if (link_.add_due_now(attempt_id{id, 1}, t))
    disp_.added_due_now();
  note_waiting();
}

void shepherd_core::refuse(submission& sub, caf::error err) {
  if (sub.counted)
    ++mon_.counters().failed;
  fx_.deliver(sub.promise, caf::make_message(std::move(err)));
  left(sub.intake);
}

void shepherd_core::answer_id(submission& sub, uint64_t id) {
  // A unique submit answered with the id of an operation that exists.
  if (sub.counted)
    ++mon_.counters().deduplicated;
  fx_.deliver(sub.promise, caf::make_message(id));
  left(sub.intake);
}

uint64_t shepherd_core::accept(submission sub) {
  auto t = now();
  if (!sub.counted)
    ++mon_.counters().submitted;
  operation op;
  op.payload = std::move(sub.payload);
  op.submitted_at = t;
  op.stamp = t + sub.delay;
  op.intake = sub.intake;
  std::optional<caf::response_promise> ack;
  bool promised = false;
  if (sub.tracked) {
    op.caller.source = std::move(sub.sender);
    op.tracked = true;
    op.typed = sub.typed;
  } else if (sub.promise.stages().empty()) {
    // A plain request keeps just its sender and id (the response is
    // rebuilt from them).
    op.caller.source = sub.promise.source();
    op.caller.id = sub.promise.id();
    promised = static_cast<bool>(op.caller.source);
  }
  auto id = table_.add(std::move(op), t, sub.policy);
  if (sub.tracked) {
    // A durable store acknowledges once the operation is on disk.
    if (durable_)
      ack = std::move(sub.promise);
    else
      fx_.deliver(sub.promise, caf::make_message(id));
  } else if (!sub.promise.stages().empty()) {
    // One that came through forwarding stages keeps its promise.
    table_.extras_of(id).forwarded = std::move(sub.promise);
    promised = true;
  }
  if (promised && promised_++ == 0)
    fx_.keep_alive(true);
  if (opts_.skip_orphaned() && sub.sender &&
      table_.watch(id, sub.sender->address()))
    fx_.watch_caller(sub.sender->address(), true);
  if (!sub.key.empty())
    table_.set_key(id, sub.key);
  if (!sub.concurrency_key.empty())
    table_.extras_of(id).concurrency_key = std::move(sub.concurrency_key);
  auto& entry = *table_.find(id);
  exchange::add add{attempt_id{id, 1}, entry.stamp, std::move(sub.key),
                    std::move(ack), false};
  // Only a durable store keeps options (the entry itself carries its
  // priority and key); without them, adds may be grouped.
  add.options = durable_ && table_.options_of(id, entry).has_value();
  if (link_.add(std::move(add), t) && sub.delay == caf::timespan::zero() &&
      !durable_)
    disp_.added_due_now();
  note_waiting();
  return id;
}

void shepherd_core::submit_unique(submission sub) {
  if (auto id = table_.find_key(sub.key)) {
    answer_id(sub, id);
    return;
  }
  if (adm_.join_lookup(sub))
    return; // The same key is being looked up.
  if (!durable_) {
    accept(std::move(sub));
    return;
  }
  if (!sub.counted) {
    ++mon_.counters().submitted;
    sub.counted = true;
  }
  auto key = sub.key;
  auto window = sub.window.value_or(opts_.unique_window());
  adm_.start_lookup(std::move(sub));
  link_.send(exchange::find_key{
      key, caf::make_message(queue_msg::find_key_v, key, window)});
}

void shepherd_core::on_key_found(uint64_t found) {
  auto ex = link_.take(answer_kind::key);
  if (!ex)
    return;
  auto subs = adm_.end_lookup(std::get<exchange::find_key>(*ex).key);
  if (found == 0 && draining()) {
    for (auto& sub : subs)
      refuse(sub, caf::make_error(pool_errc::closed,
                                  std::string{"the pool is draining"}));
    check_drained();
    return;
  }
  auto first = subs.begin();
  if (found == 0 && first != subs.end()) {
    found = accept(std::move(*first));
    ++first;
  }
  for (; first != subs.end(); ++first)
    answer_id(*first, found);
  admit_parked();
  check_drained();
}

void shepherd_core::admit_parked() {
  if (admitting_)
    return; // (Accepting may hand work out, which calls back here.)
  admitting_ = true;
  while (auto sub = adm_.unpark(table_.waiting())) {
    if (!sub->key.empty())
      submit_unique(std::move(*sub));
    else
      accept(std::move(*sub));
  }
  admitting_ = false;
}

// -- flow: pause, waits -------------------------------------------------------

void shepherd_core::pause() {
  if (gate_.paused())
    return;
  gate_.pause();
  disp_.paused();
  fx_.log(log_level::info, "paused: no attempt starts until resumed");
}

void shepherd_core::resume() {
  if (!gate_.paused())
    return;
  gate_.resume();
  disp_.resumed();
  fx_.log(log_level::info, "resumed");
}

void shepherd_core::wait_idle(caf::response_promise promise) {
  waits_.wait(std::move(promise));
  answer_waits();
}

void shepherd_core::left(uint64_t intake) {
  auto idle = waits_.leave(intake);
  if (waits_.any_done())
    answer_waits();
  if (idle && fx_.wants(event_kind::idle))
    fx_.publish({event_kind::idle, 0, 0, 0, {}, {}});
}

void shepherd_core::answer_waits() {
  for (auto& done : waits_.take_done())
    fx_.deliver(done, caf::make_message());
}

} // namespace pool
