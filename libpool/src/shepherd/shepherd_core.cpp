#include "pool/detail/shepherd_core.hpp"

#include <random>

#include <caf/make_message.hpp>

#include "pool/duration_text.hpp"
#include "pool/type_ids.hpp"

namespace pool {

namespace {

/// Over a shared PostgreSQL queue a hand-out is a start: an attempt whose
/// process dies costs one only if it ran (docs/postgres.md), so nothing is
/// taken out ahead of the workers.
dispatch_tuning tuning_for(const pool_options& opts) {
  auto result = opts.dispatch();
  if (opts.postgres_conninfo())
    result.prefetch = result.lookahead = false;
  return result;
}

backoff make_backoff(const pool_options& opts) {
  auto seed = opts.seed() ? *opts.seed() : std::random_device{}();
  return backoff{opts.backoff_initial(), opts.backoff_max(),
                 opts.backoff_multiplier(), opts.jitter(), seed};
}

} // namespace

shepherd_core::shepherd_core(pool_options opts, bool durable,
                             shepherd_effects& fx)
    : opts_(std::move(opts)), durable_(durable), fx_(fx), link_(table_, fx_),
      adm_(opts_.capacity(), opts_.max_parked()),
      sup_(opts_.max_restarts(), opts_.restart_window(), opts_.max_attempts(),
           make_backoff(opts_)),
      mon_(opts_, fx_),
      gate_(opts_.rate_limit()),
      disp_(tuning_for(opts_), opts_.attempt_timeout(), durable, roster_, table_,
            link_, mon_, fx_, *this, gate_, opts_.key_flow()),
      dead_(opts_.dead_set().max_jobs, opts_.dead_set().max_age) {
  roster_.set_configured(opts_.workers());
  watch_callers_ = opts_.skip_orphaned();
}

shepherd_core::~shepherd_core() = default;

void shepherd_core::adopt(work_store& store) {
  shared_ = store.shared();
  table_.skip_ids_to(store.last_operation_id() + 1);
  auto t = now();
  size_t n = 0;
  for (auto& rec : store.unfinished()) {
    operation op;
    op.payload = std::move(rec.payload);
    op.attempt = rec.attempt;
    op.submitted_at = t;
    // Due when the store says (a delayed retry stays delayed).
    op.stamp = rec.due != time_point{} ? rec.due : t;
    op.intake = waits_.arrive(); // (a wait covers it too)
    table_.adopt(rec.id, std::move(op), t, policy_of(rec.options));
    if (!rec.options.concurrency_key().empty())
      table_.extras_of(rec.id).concurrency_key =
          rec.options.concurrency_key();
    if (!rec.history.empty())
      table_.extras_of(rec.id).history = std::move(rec.history);
    if (!rec.key.empty())
      table_.set_key(rec.id, std::move(rec.key));
    ++n;
  }
  if (n > 0)
    fx_.log(log_level::info, "resuming " + std::to_string(n) +
                                 " unfinished operations from the store");
  adopt_dead(store);
}

void shepherd_core::start() {
  for (size_t i = 0; i < roster_.configured(); ++i)
    add_worker(fx_.spawn_worker(), false);
  if (!table_.empty())
    link_.send(exchange::count{}); // adopted work: wake workers for it
}

pool_stats shepherd_core::stats() {
  auto result = mon_.snapshot(roster_, table_, adm_, abandoned_.size());
  result.paused = gate_.paused();
  result.expected_total = expected_total_;
  result.dead = dead_count();
  return result;
}

pool_metrics shepherd_core::metrics() {
  auto result = mon_.metrics(roster_, table_, adm_, abandoned_.size());
  result.restarts_in_window = sup_.restarts_in_window(fx_.now());
  result.max_restarts = sup_.max_restarts();
  result.restart_window = sup_.restart_window();
  result.stats.paused = gate_.paused();
  result.stats.expected_total = expected_total_;
  result.stats.dead = dead_count();
  return result;
}

void shepherd_core::op_status(uint64_t id, caf::response_promise promise) {
  if (auto op = table_.find(id)) {
    operation_record rec;
    rec.id = id;
    rec.state = op->phase == operation_phase::held ? operation_state::running
                                                   : operation_state::queued;
    rec.attempt = op->attempt;
    rec.payload = op->payload;
    if (auto extras = table_.find_extras(id)) {
      rec.history = extras->history;
      rec.key = extras->key;
    }
    fx_.deliver(promise, caf::make_message(std::move(rec)));
    return;
  }
  // Ended: the dead set knows the failed, cancelled and stopped ones, and
  // notes the discarded ones (which a durable store forgot).
  if ((!durable_ || dead_.discarded(id)) && status_of_ended(id, promise))
    return;
  if (!durable_) {
    fx_.deliver(promise, caf::make_message(caf::make_error(
                             pool_errc::unknown_operation, id)));
    return;
  }
  link_.send(exchange::lookup{id, std::move(promise),
                              caf::make_message(queue_msg::record_v, id)});
}

caf::error shepherd_core::cancel(uint64_t id) {
  auto op = table_.find(id);
  if (op == nullptr)
    return caf::make_error(pool_errc::unknown_operation, id);
  // Queued: its entries leave the queue. Running: the worker finishes, and
  // its reply is dropped as stale.
  if (op->phase == operation_phase::queued)
    link_.send(exchange::remove{id});
  keep_ended(id, job_state::cancelled); // (its status still says so)
  fail(id, caf::make_error(pool_errc::cancelled, id));
  return caf::none;
}

caf::error shepherd_core::join(worker_handle worker) {
  if (worker.key == nullptr)
    return caf::make_error(pool_errc::unexpected_message,
                           std::string{"join_pool with an invalid actor"});
  if (roster_.find(worker.key))
    return caf::none; // Joined already.
  fx_.watch_worker(worker.actor);
  add_worker(std::move(worker), true);
  link_.send(exchange::count{});
  return caf::none;
}

// -- the queue ----------------------------------------------------------------

void shepherd_core::on_counts(const queue_counts& counts) {
  auto ex = link_.take(answer_kind::counts);
  if (!ex)
    return;
  if (auto add = std::get_if<exchange::add>(&*ex); add && add->ack) {
    // A tracked submit to a durable store: on disk now.
    fx_.deliver(*add->ack, caf::make_message(add->id.operation));
  }
  disp_.on_counts(counts);
  note_available();
  if (std::holds_alternative<exchange::record>(*ex))
    check_drained(); // An outcome is on disk now.
  link_.recycle(*ex);
}

void shepherd_core::on_work(std::vector<work_record> records) {
  auto ex = link_.take(answer_kind::work);
  if (!ex)
    return;
  if (shared_)
    take_shared(records);
  disp_.on_work(std::get<exchange::get>(*ex), std::move(records));
  note_available();
}

void shepherd_core::on_no_work(caf::timespan wait) {
  auto ex = link_.take(answer_kind::work);
  if (!ex)
    return;
  disp_.on_no_work(std::get<exchange::get>(*ex), wait);
  note_available();
}

void shepherd_core::on_record(operation_record& rec) {
  auto ex = link_.take(answer_kind::record);
  if (!ex)
    return;
  auto& lookup = std::get<exchange::lookup>(*ex);
  if (lookup.settle) {
    settle_from(lookup.operation, rec);
    return;
  }
  if (rec.id == 0) // the store does not know it
    fx_.deliver(lookup.promise,
                caf::make_message(caf::make_error(pool_errc::unknown_operation,
                                                  lookup.operation)));
  else
    fx_.deliver(lookup.promise, caf::make_message(std::move(rec)));
}

void shepherd_core::on_queue_error(caf::error& err) {
  // Only requests answered with counts can fail.
  auto ex = link_.take(answer_kind::counts);
  if (!ex)
    return;
  if (shared_ && shared_refusal(*ex, err))
    return;
  if (auto many = std::get_if<exchange::add_many>(&*ex)) {
    // The store refused one of the entries: each goes again on its own, so
    // only one the store refuses by itself fails.
    auto t = now();
    for (auto& id : many->ids)
      link_.add(exchange::add{id, t, {}, std::nullopt, false}, t);
  } else if (auto add = std::get_if<exchange::add>(&*ex)) {
    if (add->ack) {
      // A tracked submit that could not be made durable: refused, not
      // acknowledged; its caller hears nothing more of it.
      ++mon_.counters().rejected;
      fx_.log(log_level::error,
              "submit refused, the store failed: " + describe(err));
      fx_.deliver(*add->ack, caf::make_message(err));
      forget(add->id.operation);
    } else {
      // The store refused the entry: nothing was accepted for good.
      fail(add->id.operation, std::move(err));
    }
  } else if (std::holds_alternative<exchange::record>(*ex)) {
    // The caller has its outcome; only the store's record is missing.
    fx_.log(log_level::error,
            "the store could not record an outcome: " + describe(err));
    check_drained();
  }
}

bool shepherd_core::queue_lost(const caf::error& reason) {
  fx_.log(log_level::warning,
          "queue terminated (" + describe(reason) + "), restarting it");
  if (!sup_.note_restart(now())) {
    give_up(reason);
    return false;
  }
  ++mon_.counters().queue_restarts;
  return true;
}

void shepherd_core::queue_restarted() {
  link_.resend_all();
}

// -- time ---------------------------------------------------------------------

void shepherd_core::timer(const timer_event& ev) {
  switch (ev.kind) {
    case timer_kind::due:
      disp_.on_due_timer();
      break;
    case timer_kind::attempt:
      on_attempt_timeout(ev.attempt, ev.worker);
      break;
    case timer_kind::drain:
      on_drain_deadline();
      break;
    case timer_kind::backlog:
      if (auto n = mon_.on_backlog_timer(roster_.size(), roster_.configured(),
                                         draining()))
        grow_or_shrink(*n);
      break;
    case timer_kind::idle:
      if (auto n = mon_.on_idle_timer(roster_, draining()))
        grow_or_shrink(*n);
      break;
    case timer_kind::overload:
      mon_.on_overload_timer(roster_.configured());
      break;
    case timer_kind::resize_step:
      resize_step();
      break;
    case timer_kind::probe:
      probe_joined(ev.worker);
      break;
  }
}

// -- lifetime -----------------------------------------------------------------

void shepherd_core::give_up(const caf::error& last_cause) {
  std::string text = sup_.intensity_text();
  if (last_cause)
    text += "; last: " + describe(last_cause);
  auto err = caf::make_error(pool_errc::restart_intensity, std::move(text));
  fx_.log(log_level::error, "giving up: " + describe(err));
  quit_reason_ = err;
  fx_.quit(std::move(err));
}

void shepherd_core::terminate(const caf::error& reason) {
  auto why = reason ? describe(reason) : std::string{"normal exit"};
  auto err = caf::make_error(pool_errc::pool_terminated, why);
  auto msg = caf::make_message(err);
  for (auto id : table_.ids()) {
    auto ended = table_.end(id);
    if (ended.op.tracked)
      fx_.tell(ended.op.caller.source,
               caf::make_message(op_failed_atom_v, id, err));
    else if (ended.op.caller)
      fx_.respond(ended.op.caller, caf::message{msg});
    else if (ended.forwarded())
      fx_.deliver(ended.extras->forwarded, msg);
  }
  for (auto& promise : link_.take_promises())
    fx_.deliver(promise, msg);
  for (auto& sub : adm_.take_parked())
    fx_.deliver(sub.promise, msg);
  for (auto& sub : adm_.take_lookups())
    fx_.deliver(sub.promise, msg);
  for (auto& promise : drain_promises_)
    fx_.deliver(promise, msg);
  drain_promises_.clear();
  for (auto& promise : resize_promises_)
    fx_.deliver(promise, msg);
  resize_promises_.clear();
  for (auto& promise : waits_.take_all())
    fx_.deliver(promise, msg);
  // No spawned worker outlives the shepherd.
  std::vector<worker_handle> own;
  for (auto phase :
       {worker_phase::sleeping, worker_phase::waiting, worker_phase::working})
    roster_.for_each(phase, [&](worker_ref, worker_slot& slot) {
      if (!slot.joined)
        own.push_back(worker_handle{slot.handle, slot.key});
      return true;
    });
  for (auto& worker : own)
    fx_.stop_worker(worker, false);
  for (auto& kvp : abandoned_)
    fx_.stop_worker(worker_handle{kvp.second, kvp.first}, true);
  abandoned_.clear();
  // Let go of every worker handle now: pending timeouts keep the shepherd's
  // object alive after it exits, and a dedicated worker's thread lives
  // until its last reference goes, so an actor system's destructor, which
  // waits for those threads, would wait for ever.
  roster_ = worker_roster{};
}

// -- dispatch_host ------------------------------------------------------------

void shepherd_core::orphaned(uint64_t id) {
  // Nobody is waiting for this one any more: do not start it.
  fail(id, caf::make_error(pool_errc::cancelled, id,
                           std::string{"caller terminated"}));
}

void shepherd_core::room_changed() {
  if (adm_.parked() > 0)
    admit_parked();
}

// -- helpers ------------------------------------------------------------------

void shepherd_core::note_available() {
  if (auto n = mon_.note_available(disp_.available(), roster_.size(),
                                   roster_.configured(), draining()))
    grow_or_shrink(*n);
}

void shepherd_core::note_waiting() {
  mon_.note_waiting(table_.waiting() + adm_.parked() + adm_.looking_up(),
                    roster_.configured());
}

} // namespace pool
