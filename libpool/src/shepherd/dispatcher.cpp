#include "pool/detail/dispatcher.hpp"

#include <algorithm>

#include <caf/make_message.hpp>

#include "pool/type_ids.hpp"

namespace pool {

dispatch_host::~dispatch_host() = default;

dispatcher::dispatcher(dispatch_tuning tuning,
                       std::optional<caf::timespan> timeout, bool durable,
                       worker_roster& roster, operation_table& table,
                       queue_link& link, monitors& mon, shepherd_effects& fx,
                       dispatch_host& host, flow_gate& gate,
                       key_flow_options keys)
    : tuning_(tuning), timeout_(timeout), durable_(durable), roster_(roster),
      table_(table), link_(link), mon_(mon), fx_(fx), host_(host),
      gate_(gate), keys_(std::move(keys)) {
  if (!tuning_.prefetch)
    tuning_.lookahead = false; // (it sends entries taken out ahead)
  link_.group_adds(tuning_.group_adds && tuning_.max_batch > 1);
}

// -- events -------------------------------------------------------------------

void dispatcher::on_counts(const queue_counts& counts) {
  queue_available_ = counts.available;
  wake_for_available();
  if (counts.next_due_in != no_deadline)
    arm_due(counts.next_due_in);
  prefetch();
}

bool dispatcher::wake_one() {
  if (roster_.sleeping() == 0)
    return false;
  wake_sleeper();
  return true;
}

void dispatcher::wake_sleeper() {
  auto worker = roster_.top_sleeper();
  if (roster_.get(worker) == nullptr)
    return;
  auto& slot = *roster_.get(worker);
  roster_.set_phase(worker, worker_phase::waiting, fx_.now());
  if (own(slot) && tuning_.sleep_without_queue) {
    // It takes work in any state: the shepherd asks for it on its behalf
    // and the entries go to it asleep (it never knew it was woken, so no
    // go_to_sleep follows if none comes).
    slot.dozing = true;
    slot.asking = true;
    find_work(worker);
    return;
  }
  fx_.to_worker(slot, caf::make_message(wake_up_atom_v));
  if (slot.joined)
    host_.woke_joined(worker);
}

void dispatcher::added_due_now() {
  if (roster_.sleeping() == 0 || !tuning_.sleep_without_queue ||
      gate_.limited() || keys_.limited())
    return;
  // As many sleepers as due entries no waiting worker is about to take
  // (a burst on an idle pool spreads over the idle workers at once).
  auto due = available() + link_.due_in_flight();
  while (roster_.sleeping() > 0 && due > roster_.waiting()) {
    auto slot = roster_.get(roster_.top_sleeper());
    if (slot == nullptr || !own(*slot))
      return;
    wake_sleeper();
  }
}

void dispatcher::want_work(worker_ref worker) {
  auto slot = roster_.get(worker);
  roster_.set_phase(worker, worker_phase::waiting, fx_.now());
  slot->asking = true;
  find_work(worker);
}

void dispatcher::on_work(const exchange::get& ask,
                         std::vector<work_record> records) {
  // The queue handed these out: they left it.
  queue_available_ -= std::min<uint64_t>(queue_available_, records.size());
  if (!ask.worker) {
    prefetching_ -= ask.wanted;
    ready_.append(std::move(records));
    serve_askers();
    serve_lookahead();
    return;
  }
  if (ask.reserved)
    gate_.release(ask.reserved);
  dispatch(ask.worker, std::move(records));
  if (ask.reserved)
    wake_for_available(); // (A token it held back may be free again.)
}

void dispatcher::on_no_work(const exchange::get& ask, caf::timespan wait) {
  queue_available_ = 0;
  if (ask.worker) {
    if (ask.reserved)
      gate_.release(ask.reserved);
    put_to_sleep(ask.worker, wait);
    return;
  }
  // A prefetch found the queue without due entries.
  prefetching_ -= ask.wanted;
  if (wait != no_deadline)
    arm_due(wait);
  serve_askers();
}

void dispatcher::on_due_timer() {
  due_timer_.fired(fx_.now());
  link_.send(exchange::count{});
}

void dispatcher::next_in_batch(worker_ref worker, worker_slot& slot) {
  auto now = fx_.now();
  if (auto op = table_.current(slot.held.front());
      op != nullptr && op->phase == operation_phase::held)
    op->stamp = now;
  start_timer(slot.held.front(), worker);
}

void dispatcher::note_processing(caf::timespan elapsed, size_t jobs) {
  auto per_job = static_cast<double>(elapsed.count()) /
                 static_cast<double>(std::max<size_t>(jobs, 1));
  // A moving average over roughly the last eight reports.
  job_ns_ = job_ns_ < 0 ? per_job : job_ns_ + (per_job - job_ns_) / 8;
}

void dispatcher::requeue(const attempt_id& id, time_point due) {
  table_.wait(id.operation, id.attempt, due, fx_.now());
  link_.add(exchange::add{id, due, {}, std::nullopt, false}, fx_.now());
  if (keys_.parked() > 0)
    wake_for_available(); // (Its key may start another now.)
}

// -- decisions ----------------------------------------------------------------

bool dispatcher::nothing_due() const {
  // (A durable queue recounts when it commits, so its counts may lag
  // entries it has already handed out: ask it.)
  return !durable_ && available() == 0 && !link_.adding();
}

size_t dispatcher::batch_size(bool joined) const {
  auto most = tuning_.max_batch;
  auto workers = roster_.size();
  auto avail = available();
  if (most <= 1 || joined || avail <= workers || job_ns_ < 0)
    return 1;
  auto budget = static_cast<double>(tuning_.batch_time.count());
  auto by_time = job_ns_ > 0 ? budget / job_ns_ : static_cast<double>(most);
  auto fair = (avail + workers - 1) / workers;
  auto n = std::min<double>(
      {static_cast<double>(most), by_time, static_cast<double>(fair)});
  return n >= 2 ? static_cast<size_t>(n) : size_t{1};
}

void dispatcher::find_work(worker_ref worker) {
  auto slot = roster_.get(worker);
  if (slot == nullptr)
    return; // It left meanwhile.
  if (!gate_open(worker))
    return;
  auto n = batch_size(!own(*slot));
  if (gate_.limit())
    n = gate_.allowed(fx_.now(), n); // (at least 1: the gate is open)
  if (keys_.parked() > 0) {
    // Older than anything in the queue: first, if their key may start.
    if (auto batch = take_parked(n); !batch.empty()) {
      dispatch(worker, std::move(batch));
      return;
    }
  }
  // Older than anything still in the queue: a batch sent ahead to a busy
  // worker that has not started it (it may be stuck in a long job).
  if (ready_.empty() && !ahead_holders_.empty())
    take_back_oldest();
  if (!ready_.empty()) {
    dispatch(worker, take_ready(n));
    return;
  }
  if (askers_.size() < prefetching_) {
    askers_.push_back(worker);
    return;
  }
  if (own(*slot) && tuning_.sleep_without_queue && nothing_due()) {
    // The queue would answer no_work: no trip to it (the due timer, armed
    // from the queue's counts, wakes workers for delayed entries).
    put_to_sleep(worker, no_deadline);
    return;
  }
  request_work(worker, n);
}

void dispatcher::request_work(worker_ref worker, size_t n) {
  exchange::get ask{worker, static_cast<uint32_t>(n)};
  if (gate_.limit()) {
    // The tokens wait for the entries (see on_work).
    gate_.reserve(n);
    ask.reserved = static_cast<uint32_t>(n);
  }
  link_.send(std::move(ask));
}

void dispatcher::dispatch(worker_ref worker, record_batch batch) {
  auto slot = roster_.get(worker);
  if (slot != nullptr)
    slot->asking = false;
  auto now = fx_.now();
  // Whether the worker still waits; if it left meanwhile, the entries go
  // back, due now.
  auto taker = slot != nullptr && slot->phase == worker_phase::waiting;
  // What the gate lets start now; the rest goes back, due now.
  auto may = taker ? gate_.allowed(now, batch.size()) : size_t{0};
  size_t kept = 0;
  bool timed = false;
  for (size_t i = 0; i < batch.size(); ++i) {
    auto& record = batch[i];
    auto op = startable(record);
    if (op == nullptr)
      continue; // Ended, moved on, or held already: this entry is obsolete.
    if (!taker || kept >= may) {
      requeue(record.id, now);
      continue;
    }
    if (table_.orphaned(record.id.operation)) {
      host_.orphaned(record.id.operation);
      continue;
    }
    if (keys_.limited() &&
        !key_admits(record, now, batch.size() > 1 ? slot : nullptr))
      continue; // Parked until its key may start.
    timed = hold(worker, record, *op, now) || timed;
    if (kept != i)
      batch[kept] = std::move(record);
    ++kept;
  }
  batch.resize(kept);
  if (kept > 1 && gate_.limit()) {
    gate_.hold(kept); // until the batch reports (batch_done)
    slot->gated = static_cast<uint32_t>(kept);
  } else {
    gate_.started(now, kept);
  }
  if (batch.empty()) {
    if (taker) {
      slot->asking = true;
      find_work(worker);
    }
    return;
  }
  slot->dozing = false; // (It wakes up to work.)
  slot->started = now;
  slot->held.clear();
  forget_ahead(*slot); // (A waiting worker holds none.)
  slot->held.reserve(batch.size());
  for (auto& record : batch)
    slot->held.push_back(record.id);
  roster_.set_phase(worker, worker_phase::working, now);
  start_timer(batch.front().id, worker);
  if (batch.size() == 1 && !own(*slot)) {
    fx_.work_to_do(*slot, std::move(batch.front()));
  } else {
    // The pool's own workers get even one job as a batch: its report says
    // how long the job ran (batch sizing), without the time it waited.
    if (batch.size() > 1) {
      ++mon_.counters().batches;
      mon_.counters().batched += batch.size();
    }
    // With a timeout, each attempt reports as it finishes (its timer starts
    // when the one before it reported); else the batch reports once.
    fx_.work_batch(*slot, std::move(batch), timed);
  }
  host_.room_changed();
  send_ahead(worker);
  prefetch();
}

void dispatcher::put_to_sleep(worker_ref worker, caf::timespan wait) {
  auto slot = roster_.get(worker);
  if (slot != nullptr) {
    slot->asking = false;
    if (slot->phase == worker_phase::waiting) {
      roster_.set_phase(worker, worker_phase::sleeping, fx_.now());
      mon_.note_sleeping(*slot, roster_.configured());
      // A worker of the pool's own takes work in any state and is never
      // sent `wake_up` (it is served while dozing), so it needs no
      // `go_to_sleep` either: nothing would change for it but a message.
      // A joined one is told (it asks again when woken); so is one that
      // never knew it was woken (dozing) nothing.
      if (!slot->dozing && !(own(*slot) && tuning_.sleep_without_queue))
        fx_.go_to_sleep(*slot);
      slot->dozing = false;
    }
  }
  if (wait != no_deadline)
    arm_due(wait);
}

void dispatcher::arm_due(caf::timespan wait) {
  due_timer_.arm(fx_, fx_.now() + wait, timer_event{timer_kind::due, {}, {}});
}

dispatcher::record_batch dispatcher::take_ready(size_t n) {
  return ready_.take(n);
}

void dispatcher::serve_askers() {
  // Oldest first while entries are ready; then askers no pending prefetch
  // will serve ask the queue themselves (find_work does either).
  while (!askers_.empty() && !ready_.empty()) {
    auto worker = askers_.front();
    askers_.pop_front();
    find_work(worker);
  }
  while (askers_.size() > prefetching_) {
    auto worker = askers_.back();
    askers_.pop_back();
    find_work(worker);
  }
}

void dispatcher::prefetch() {
  if (!tuning_.prefetch || gate_.paused())
    return;
  // Enough for the next batch of every busy worker (and, with lookahead,
  // the one after it).
  auto limit = std::min(roster_.busy() * batch_size(false) *
                            (tuning_.lookahead ? 2 : 1),
                        max_ready);
  auto have = ready_.size() + prefetching_;
  auto getting = link_.getting();
  auto unasked =
      queue_available_ > getting ? queue_available_ - getting : uint64_t{0};
  if (have >= limit || unasked == 0)
    return;
  auto n = std::min<uint64_t>(limit - have, unasked);
  prefetching_ += n;
  link_.send(exchange::get{worker_ref{}, static_cast<uint32_t>(n)});
}

void dispatcher::start_timer(const attempt_id& id, worker_ref worker) {
  auto op = table_.current(id);
  if (op == nullptr)
    return;
  if (auto limit = budget(id.operation, *op); limit != caf::timespan::zero())
    fx_.schedule(limit, timer_event{timer_kind::attempt, id, worker});
}

// -- lifecycle hooks ----------------------------------------------------------

void dispatcher::operation_ended(uint64_t id, const operation& op) {
  // An entry taken out ahead no longer counts as available. (Only one that
  // waited can be there: most operations end held, and skip the search.)
  if (op.phase != operation_phase::held && !ready_.empty()) {
    auto obsolete = [id](const work_record& x) {
      return x.id.operation == id;
    };
    ready_.remove_if(obsolete);
  }
  if (keys_.parked() > 0) {
    keys_.remove(id);
    wake_for_available(); // (Its key may start another now.)
  }
  if (op.sent_ahead())
    ended_ahead(op.holder);
}

void dispatcher::worker_gone(worker_ref worker) {
  askers_.erase(std::remove(askers_.begin(), askers_.end(), worker),
                askers_.end());
  lookahead_wanted_.erase(std::remove(lookahead_wanted_.begin(),
                                      lookahead_wanted_.end(), worker),
                          lookahead_wanted_.end());
  if (auto slot = roster_.get(worker))
    forget_ahead(*slot); // (Its batch sent ahead goes back with the rest.)
}

void dispatcher::queue_restarted() {
  // The answers still pending are asked again; nothing else changes.
}

} // namespace pool
