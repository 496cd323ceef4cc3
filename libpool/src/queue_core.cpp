#include "pool/detail/queue_core.hpp"

#include <algorithm>

#include <caf/make_message.hpp>
#include <caf/message_handler.hpp>

#include "pool/batch_buffers.hpp"
#include "pool/stats.hpp"

#include "pool/errors.hpp"
#include "pool/queue_protocol.hpp"
#include "pool/type_ids.hpp"

namespace pool {

queue_effects::~queue_effects() = default;

queue_core::queue_core(std::shared_ptr<work_store> store,
                       caf::timespan commit_interval, queue_effects& fx)
    : store_(std::move(store)),
      fx_(fx),
      shared_(store_->shared()),
      durable_(store_->durable()),
      commit_interval_(commit_interval) {
}

void queue_core::start() {
  // A predecessor may have died in the middle of a group.
  store_->discard();
  // With retention, finished operations are pruned in the background.
  if (auto every = store_->prune_interval())
    fx_.to_self(*every, caf::make_message(queue_msg::prune_v));
  if (auto every = store_->lease_interval())
    fx_.to_self(*every, caf::make_message(queue_msg::renew_v));
}

caf::message queue_core::counts(time_point now) {
  auto counts = store_->counts(now);
  queue_counts result;
  result.available = counts.available;
  result.delayed = counts.delayed;
  if (counts.next_due)
    result.next_due_in = *counts.next_due - now;
  return caf::make_message(result);
}

void queue_core::schedule_flush(caf::timespan at_least) {
  if (flush_scheduled_)
    return;
  flush_scheduled_ = true;
  auto now = fx_.now();
  auto next = last_commit_ ? *last_commit_ + commit_interval_ : now;
  next = std::max(next, now + at_least);
  fx_.to_self(next <= now ? caf::timespan{0} : next - now,
              caf::make_message(queue_msg::flush_v));
}

queue_core::reply queue_core::answer(caf::message msg, answer_type type,
                                     bool recount,
                                     std::optional<attempt_id> push,
                                     uint64_t operation) {
  // At once for an in-memory store; for a durable one, held until the
  // group containing this change is committed.
  if (!durable_)
    return msg;
  if (push)
    operation = push->operation;
  held_.push_back(
      held_answer{fx_.hold(), std::move(msg), type, recount, push, operation});
  schedule_flush();
  return caf::delegated<caf::message>{};
}

queue_core::reply queue_core::refuse(caf::error err) {
  // In order with the answers held back.
  if (!durable_)
    return err;
  return answer(caf::make_message(std::move(err)));
}

void queue_core::release(held_answer& x) {
  if (x.recount)
    fx_.answer(x.ticket, counts(fx_.now()));
  else
    fx_.answer(x.ticket, std::move(x.answer));
}

/// A shared store's commit failed: its server is out of reach, or it
/// refused the group. The store keeps every change for the next commit,
/// tried again with backoff (10 ms, doubling, at most 1 s), and the held
/// answers wait for it in order: callers see the outage as latency. Once
/// the store gives up its pushes (it reports them lost: the outage outlasted
/// its limit, or the failure was not an outage), every held answer to a
/// change is refused with the commit's error, in order. Hand-outs and
/// lookups are released at once (a lookup the server could not answer
/// says so: `pg_store::lookup`).
void queue_core::wait_for_server(std::vector<held_answer>& held,
                                 const std::vector<attempt_id>& lost,
                                 const caf::error& err) {
  auto tries = ++failed_commits_;
  for (auto& x : held) {
    if (x.type != answer_type::change)
      release(x);
    else if (!lost.empty() && x.recount)
      fx_.answer(x.ticket, caf::make_message(err));
    else if (!lost.empty() && !x.answer.match_elements<operation_record>())
      release(x); // a refusal, held in order
    else
      held_.push_back(std::move(x));
  }
  if (!lost.empty())
    failed_commits_ = 0;
  if (held_.empty())
    return;
  auto backoff = caf::timespan{std::chrono::milliseconds(10)}
                 * (int64_t{1} << std::min(tries - 1, 7));
  caf::timespan most = std::chrono::seconds(1);
  schedule_flush(std::min(backoff, most));
}

/// Commits the group and releases its answers, in order. When the commit
/// fails, the pushes it lost are refused with its error, hand-outs and
/// reads are released, and the other changes stay held for the next try
/// (the store keeps them); after several failures in a row they are
/// refused too.
void queue_core::flush() {
  flush_scheduled_ = false;
  auto err = store_->commit();
  last_commit_ = fx_.now();
  auto held = std::move(held_);
  held_.clear();
  uncommitted_.clear(); // committed, or rolled back with the group
  work_held_ = false;
  if (!err) {
    failed_commits_ = 0;
    auto fenced = store_->fenced();
    for (auto& x : held) {
      if (x.operation != 0 && !fenced.empty()
          && std::find(fenced.begin(), fenced.end(), x.operation)
               != fenced.end())
        fx_.answer(x.ticket,
                   caf::make_message(caf::make_error(
                     pool_errc::lease_lost, "op#" + std::to_string(x.operation),
                     std::string{"another store took the lease back, or the "
                                 "operation finished elsewhere: this change "
                                 "is stale and was not recorded"})));
      else
        release(x);
    }
    return;
  }
  auto lost = store_->lost_pushes();
  if (shared_) {
    wait_for_server(held, lost, err);
    return;
  }
  auto give_up = ++failed_commits_ >= max_failed_commits;
  for (auto& x : held) {
    if (x.push && std::find(lost.begin(), lost.end(), *x.push) != lost.end())
      fx_.answer(x.ticket, caf::make_message(err));
    else if (x.type != answer_type::change)
      release(x);
    else if (give_up)
      fx_.answer(x.ticket, caf::make_message(err));
    else
      held_.push_back(std::move(x));
  }
  if (give_up)
    failed_commits_ = 0;
  if (!held_.empty())
    schedule_flush(std::chrono::milliseconds(10));
}

queue_core::reply queue_core::add(work_record& record, caf::timespan delay,
                                  std::string* key, job_options* opts) {
  auto now = fx_.now();
  if (delay < caf::timespan::zero())
    delay = caf::timespan::zero();
  auto id = record.id;
  if (key != nullptr && !key->empty())
    if (auto err = store_->set_key(id.operation, std::move(*key)))
      return refuse(std::move(err));
  if (opts != nullptr)
    if (auto err = store_->set_options(id.operation, std::move(*opts)))
      return refuse(std::move(err));
  if (auto err = store_->push(std::move(record), now + delay, now))
    return refuse(std::move(err));
  if (durable_)
    uncommitted_.insert(id.operation);
  return answer(counts(now), answer_type::change, true, id);
}

queue_core::reply queue_core::add_all(std::vector<work_record>& records) {
  auto now = fx_.now();
  // A failed commit loses the whole group, so the last push stands for all
  // of them. An entry that fails to push is refused with the ones after it;
  // those before it stay (the shepherd drops them when they come out).
  if (records.empty())
    return answer(counts(now), answer_type::change, true);
  auto last = records.back().id;
  if (durable_)
    for (auto& record : records)
      uncommitted_.insert(record.id.operation);
  if (auto err = store_->push_all(records, now))
    return refuse(std::move(err));
  return answer(counts(now), answer_type::change, true, last);
}

queue_core::reply queue_core::get(uint32_t n, bool many) {
  auto now = fx_.now();
  caf::message msg;
  auto hold = work_held_;
  std::vector<work_record> records;
  try {
    records = batch_buffers::records(std::min<size_t>(n, 64));
    store_->pop_due_into(now, n, records);
    if (!uncommitted_.empty())
      for (auto& record : records)
        hold = hold || uncommitted_.count(record.id.operation) > 0;
  } catch (...) {
    // The store failed after handing out some entries: an in-memory store
    // will not see them again, so they go out before the queue dies (a
    // durable store rolls them back when the queue is respawned).
    if (!records.empty() && !durable_)
      fx_.answer(fx_.hold(), many
                               ? caf::make_message(std::move(records))
                               : caf::make_message(std::move(records.front())));
    throw;
  }
  if (shared_)
    schedule_flush(); // its hand-outs and claims are changes
  if (records.empty()) {
    auto due = store_->next_due(now);
    auto wait = due ? *due - now : caf::timespan::max();
    msg = caf::make_message(no_work_atom_v, wait);
    batch_buffers::give(std::move(records));
  } else if (many) {
    msg = caf::make_message(std::move(records));
  } else {
    msg = caf::make_message(std::move(records.front()));
    batch_buffers::give(std::move(records));
  }
  if (!hold)
    return msg;
  work_held_ = true;
  return answer(std::move(msg), answer_type::work);
}

queue_core::reply queue_core::remove(uint64_t operation) {
  store_->remove(operation);
  return answer(counts(fx_.now()), answer_type::change, true);
}

queue_core::reply queue_core::count() {
  return answer(counts(fx_.now()), answer_type::change, true);
}

queue_core::reply queue_core::finish(uint64_t operation, caf::message& result) {
  auto now = fx_.now();
  if (auto err = store_->finish(operation, result, now))
    return refuse(std::move(err));
  return answer(counts(now), answer_type::change, true, {}, operation);
}

queue_core::reply queue_core::finish(uint64_t operation, caf::error& failure) {
  auto now = fx_.now();
  if (auto err = store_->finish(operation, failure, now))
    return refuse(std::move(err));
  return answer(counts(now), answer_type::change, true, {}, operation);
}

queue_core::reply queue_core::note(uint64_t operation,
                                   attempt_failure& failure) {
  if (auto err = store_->note_failure(operation, failure))
    return refuse(std::move(err));
  return answer(counts(fx_.now()), answer_type::change, true);
}

queue_core::reply queue_core::forget(uint64_t operation) {
  if (auto err = store_->forget_failed(operation))
    return refuse(std::move(err));
  return answer(counts(fx_.now()), answer_type::change, true);
}

queue_core::reply queue_core::find_key(std::string& key, caf::timespan window) {
  auto found = store_->find_key(key, fx_.now(), window);
  return answer(caf::make_message(queue_msg::key_found_v, found.value_or(0)),
                answer_type::read);
}

queue_core::reply queue_core::record(uint64_t operation) {
  // Reads change nothing, but must not overtake held answers. An unknown
  // operation is answered with an empty record (id 0): errors are reserved
  // for answers of the counts kind.
  auto rec = store_->lookup(operation);
  return answer(caf::make_message(rec ? std::move(*rec) : operation_record{}));
}

queue_core::reply queue_core::jobs(const job_filter& filter,
                                   caf::timespan dead_age) {
  auto page = store_->list_jobs(filter, dead_age, fx_.now());
  if (!page)
    return refuse(std::move(page.error()));
  return answer(caf::make_message(std::move(*page)), answer_type::read);
}

queue_core::reply queue_core::take_ended(const job_filter& filter,
                                         uint64_t limit,
                                         caf::timespan dead_age, bool discard) {
  auto taken = store_->take_ended(filter, static_cast<size_t>(limit),
                                  dead_age, discard, fx_.now());
  if (!taken)
    return refuse(std::move(taken.error()));
  return answer(caf::make_message(std::move(*taken)));
}

void queue_core::prune() {
  // Soon again while whole batches go, else after the store's interval; a
  // failed round is tried again at the next interval.
  auto every = store_->prune_interval();
  if (!every)
    return;
  auto pruned = store_->prune(fx_.now(), prune_batch);
  if (pruned && *pruned > 0)
    schedule_flush();
  auto again = pruned && *pruned == prune_batch
                 ? std::max(commit_interval_,
                            caf::timespan{std::chrono::milliseconds(10)})
                 : *every;
  fx_.to_self(again, caf::make_message(queue_msg::prune_v));
}

void queue_core::renew() {
  // A failed renewal is tried again at the next interval (the lease
  // outlives three of them).
  auto every = store_->lease_interval();
  if (!every)
    return;
  fx_.to_self(*every, caf::make_message(queue_msg::renew_v));
  auto lost = store_->renew_leases(fx_.now());
  schedule_flush();
  if (lost && !lost->empty())
    fx_.to_owner(caf::make_message(queue_msg::lost_v, std::move(*lost)));
}

void queue_core::wake() {
  if (!shared_)
    return;
  auto news = store_->poll_notifications();
  // A wake without news is the safety poll: count again.
  auto work = news.work || news.missed || news.finished.empty();
  fx_.to_owner(caf::make_message(queue_msg::news_v, work,
                                 std::move(news.finished), news.missed));
}

caf::message_handler queue_core::handlers() {
  auto& core = *this;
  return {
    [&core](add_work_atom, work_record& record, caf::timespan delay) {
      return core.add(record, delay, nullptr, nullptr);
    },
    [&core](add_work_atom, work_record& record, caf::timespan delay,
            std::string& key) { return core.add(record, delay, &key, nullptr); },
    [&core](add_work_atom, work_record& record, caf::timespan delay,
            std::string& key, job_options& opts) {
      return core.add(record, delay, &key, &opts);
    },
    [&core](add_work_atom, std::vector<work_record>& records) {
      auto result = core.add_all(records);
      batch_buffers::give(std::move(records)); // (pushed, or refused)
      return result;
    },
    [&core](get_work_atom) { return core.get(1, false); },
    [&core](get_work_atom, uint32_t n) {
      if (n == 0)
        return reply{caf::make_error(pool_errc::unexpected_message,
                                     std::string{"get_work for 0 entries"})};
      return core.get(n, true);
    },
    [&core](queue_msg::remove_atom, uint64_t operation) {
      return core.remove(operation);
    },
    [&core](queue_msg::count_atom) { return core.count(); },
    [&core](queue_msg::finish_atom, uint64_t operation, caf::message& result) {
      return core.finish(operation, result);
    },
    [&core](queue_msg::finish_atom, uint64_t operation, caf::error& failure) {
      return core.finish(operation, failure);
    },
    [&core](queue_msg::note_atom, uint64_t operation, attempt_failure& x) {
      return core.note(operation, x);
    },
    [&core](queue_msg::forget_atom, uint64_t operation) {
      return core.forget(operation);
    },
    [&core](queue_msg::find_key_atom, std::string& key, caf::timespan window) {
      return core.find_key(key, window);
    },
    [&core](queue_msg::record_atom, uint64_t operation) {
      return core.record(operation);
    },
    [&core](queue_msg::jobs_atom, const job_filter& filter,
            caf::timespan dead_age) { return core.jobs(filter, dead_age); },
    [&core](queue_msg::take_ended_atom, const job_filter& filter,
            uint64_t limit, caf::timespan dead_age, bool discard) {
      return core.take_ended(filter, limit, dead_age, discard);
    },
    [&core](queue_msg::flush_atom) { core.flush(); },
    [&core](queue_msg::prune_atom) { core.prune(); },
    [&core](queue_msg::renew_atom) { core.renew(); },
    [&core](queue_msg::wake_atom) { core.wake(); },
  };
}

} // namespace pool
