#include "pool/queue.hpp"

#include <algorithm>

#include <caf/event_based_actor.hpp>
#include <caf/result.hpp>
#include <caf/send.hpp>

#include "pool/errors.hpp"
#include "pool/protocol.hpp"
#include "pool/queue_protocol.hpp"

namespace pool {

namespace {

using queue_self = caf::stateful_actor<queue_state>*;

queue_counts counts_of(work_store& store, work_store::time_point now) {
  auto counts = store.counts(now);
  queue_counts result;
  result.available = counts.available;
  result.delayed = counts.delayed;
  if (counts.next_due)
    result.next_due_in = *counts.next_due - now;
  return result;
}

using answer_type = queue_state::answer_type;

/// Commits that may fail in a row before held changes are refused.
constexpr int max_failed_commits = 5;

/// Sends `q_flush` to itself: at once, or once `commit_interval` has passed
/// since the last commit.
void schedule_flush(queue_self self, caf::timespan at_least = {}) {
  auto& st = self->state;
  if (st.flush_scheduled)
    return;
  st.flush_scheduled = true;
  auto now = self->clock().now();
  auto next = st.last_commit ? *st.last_commit + st.commit_interval : now;
  next = std::max(next, now + at_least);
  if (next <= now)
    self->send(self, queue_msg::flush_v);
  else
    self->delayed_send(self, next - now, queue_msg::flush_v);
}

/// Answers at once for an in-memory store; for a durable one, holds the
/// answer until the group containing this change is committed.
caf::result<caf::message> answer(queue_self self, caf::message msg,
                                 answer_type type = answer_type::change,
                                 bool recount = false,
                                 std::optional<attempt_id> push = {},
                                 uint64_t operation = 0) {
  auto& st = self->state;
  if (!st.store->durable())
    return msg;
  if (push)
    operation = push->operation;
  st.held.push_back(queue_state::held_answer{self->make_response_promise(),
                                             std::move(msg), type, recount,
                                             push, operation});
  schedule_flush(self);
  return caf::delegated<caf::message>{};
}

/// Answers with an error, in order with the answers held back.
caf::result<caf::message> refuse(queue_self self, caf::error err) {
  if (!self->state.store->durable())
    return err;
  return answer(self, caf::make_message(std::move(err)));
}

void release(queue_self self, queue_state::held_answer& x) {
  if (x.recount)
    x.promise.deliver(counts_of(*self->state.store, self->clock().now()));
  else
    x.promise.deliver(std::move(x.answer));
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
void wait_for_server(queue_self self,
                     std::vector<queue_state::held_answer>& held,
                     const std::vector<attempt_id>& lost,
                     const caf::error& err) {
  auto& st = self->state;
  auto tries = ++st.failed_commits;
  for (auto& x : held) {
    if (x.type != answer_type::change)
      release(self, x);
    else if (!lost.empty() && x.recount)
      x.promise.deliver(err);
    else if (!lost.empty() && !x.answer.match_elements<operation_record>())
      release(self, x); // a refusal, held in order
    else
      st.held.push_back(std::move(x));
  }
  if (!lost.empty())
    st.failed_commits = 0;
  if (st.held.empty())
    return;
  auto backoff = caf::timespan{std::chrono::milliseconds(10)}
                 * (int64_t{1} << std::min(tries - 1, 7));
  caf::timespan most = std::chrono::seconds(1);
  schedule_flush(self, std::min(backoff, most));
}

/// Commits the group and releases its answers, in order. When the commit
/// fails, the pushes it lost are refused with its error, hand-outs and
/// reads are released, and the other changes stay held for the next try
/// (the store keeps them); after several failures in a row they are
/// refused too.
void flush(queue_self self) {
  auto& st = self->state;
  st.flush_scheduled = false;
  auto err = st.store->commit();
  st.last_commit = self->clock().now();
  auto held = std::move(st.held);
  st.held.clear();
  st.uncommitted.clear(); // committed, or rolled back with the group
  st.work_held = false;
  if (!err) {
    st.failed_commits = 0;
    auto fenced = st.store->fenced();
    for (auto& x : held) {
      if (x.operation != 0 && !fenced.empty() &&
          std::find(fenced.begin(), fenced.end(), x.operation) != fenced.end())
        x.promise.deliver(caf::make_error(
            pool_errc::lease_lost, "op#" + std::to_string(x.operation),
            std::string{"another store took the lease back, or the "
                        "operation finished elsewhere: this change is "
                        "stale and was not recorded"}));
      else
        release(self, x);
    }
    return;
  }
  auto lost = st.store->lost_pushes();
  if (st.shared) {
    wait_for_server(self, held, lost, err);
    return;
  }
  auto give_up = ++st.failed_commits >= max_failed_commits;
  for (auto& x : held) {
    if (x.push && std::find(lost.begin(), lost.end(), *x.push) != lost.end())
      x.promise.deliver(err);
    else if (x.type != answer_type::change)
      release(self, x);
    else if (give_up)
      x.promise.deliver(err);
    else
      st.held.push_back(std::move(x));
  }
  if (give_up)
    st.failed_commits = 0;
  if (!st.held.empty())
    schedule_flush(self, std::chrono::milliseconds(10));
}

caf::result<caf::message> add(queue_self self, work_record& record,
                              caf::timespan delay, std::string* key,
                              job_options* opts = nullptr) {
  auto& store = *self->state.store;
  auto now = self->clock().now();
  if (delay < caf::timespan::zero())
    delay = caf::timespan::zero();
  auto id = record.id;
  if (key != nullptr && !key->empty())
    if (auto err = store.set_key(id.operation, std::move(*key)))
      return refuse(self, std::move(err));
  if (opts != nullptr)
    if (auto err = store.set_options(id.operation, std::move(*opts)))
      return refuse(self, std::move(err));
  if (auto err = store.push(std::move(record), now + delay, now))
    return refuse(self, std::move(err));
  if (store.durable())
    self->state.uncommitted.insert(id.operation);
  return answer(self, caf::make_message(counts_of(store, now)),
                answer_type::change, true, id);
}

/// Adds several entries, due now, in order, as one change.
caf::result<caf::message> add_all(queue_self self,
                                  std::vector<work_record>& records) {
  auto& store = *self->state.store;
  auto now = self->clock().now();
  // A failed commit loses the whole group, so the last push stands for all
  // of them. An entry that fails to push is refused with the ones after it;
  // those before it stay (the shepherd drops them when they come out).
  if (records.empty())
    return answer(self, caf::make_message(counts_of(store, now)),
                  answer_type::change, true);
  auto last = records.back().id;
  if (store.durable())
    for (auto& record : records)
      self->state.uncommitted.insert(record.id.operation);
  if (auto err = store.push_all(records, now))
    return refuse(self, std::move(err));
  return answer(self, caf::make_message(counts_of(store, now)),
                answer_type::change, true, last);
}

/// Hands out the first `n` due entries: one as `work_record` (`many`
/// false), or up to `n` as `std::vector<work_record>`; or `no_work`.
caf::result<caf::message> get(queue_self self, uint32_t n, bool many) {
  auto& st = self->state;
  auto now = self->clock().now();
  caf::message msg;
  auto hold = st.work_held;
  std::vector<work_record> records;
  try {
    records.reserve(std::min<size_t>(n, 64));
    st.store->pop_due_into(now, n, records);
    if (!st.uncommitted.empty())
      for (auto& record : records)
        hold = hold || st.uncommitted.count(record.id.operation) > 0;
  } catch (...) {
    // The store failed after handing out some entries: an in-memory store
    // will not see them again, so they go out before this actor dies (a
    // durable store rolls them back when the queue is respawned).
    if (!records.empty() && !st.store->durable())
      self->make_response_promise().deliver(
          many ? caf::make_message(std::move(records))
               : caf::make_message(std::move(records.front())));
    throw;
  }
  if (st.shared)
    schedule_flush(self); // its hand-outs and claims are changes
  if (records.empty()) {
    auto due = st.store->next_due(now);
    auto wait = due ? *due - now : caf::timespan::max();
    msg = caf::make_message(no_work_atom_v, wait);
  } else if (many) {
    msg = caf::make_message(std::move(records));
  } else {
    msg = caf::make_message(std::move(records.front()));
  }
  if (!hold)
    return msg;
  st.work_held = true;
  return answer(self, std::move(msg), answer_type::work);
}

/// Operations pruned per call; a full batch calls again soon.
constexpr size_t prune_batch = 1000;

/// Prunes what outlived the store's retention, then schedules the next
/// round: soon while whole batches go, else after the store's interval.
/// A failed round is tried again at the next interval.
void prune(queue_self self) {
  auto& store = *self->state.store;
  auto every = store.prune_interval();
  if (!every)
    return;
  auto pruned = store.prune(self->clock().now(), prune_batch);
  if (pruned && *pruned > 0)
    schedule_flush(self);
  auto again = pruned && *pruned == prune_batch
                   ? std::max(self->state.commit_interval,
                              caf::timespan{std::chrono::milliseconds(10)})
                   : *every;
  self->delayed_send(self, again, queue_msg::prune_v);
}

/// Renews the store's leases, tells the owner which were lost, and
/// schedules the next renewal. A failed renewal is tried again at the next
/// interval (the lease outlives three of them).
void renew(queue_self self) {
  auto& st = self->state;
  auto every = st.store->lease_interval();
  if (!every)
    return;
  self->delayed_send(self, *every, queue_msg::renew_v);
  auto lost = st.store->renew_leases(self->clock().now());
  schedule_flush(self);
  if (lost && !lost->empty())
    if (auto owner = caf::actor_cast<caf::actor>(st.owner))
      self->send(owner, queue_msg::lost_v, std::move(*lost));
}

/// Reads what the store's listener brought and passes it on.
void wake(queue_self self) {
  auto& st = self->state;
  auto news = st.store->poll_notifications();
  // A wake without news is the safety poll: count again.
  auto work = news.work || news.missed || news.finished.empty();
  if (auto owner = caf::actor_cast<caf::actor>(st.owner))
    self->send(owner, queue_msg::news_v, work, std::move(news.finished),
               news.missed);
}

/// Lets a shared store wake this actor from its listener thread (the store
/// calls again only after `poll_notifications`, so at most one `q_wake`
/// waits in the mailbox); the hook goes with the actor.
void listen(queue_self self) {
  auto& st = self->state;
  st.store->set_wakeup([me = self->address()] {
    if (auto queue = caf::actor_cast<caf::actor>(me))
      caf::anon_send(queue, queue_msg::wake_v);
  });
  self->attach_functor([store = st.store] { store->set_wakeup({}); });
  // Whatever arrived before this queue listened.
  self->send(self, queue_msg::wake_v);
}

} // namespace

caf::behavior queue_actor(caf::stateful_actor<queue_state>* self,
                          std::shared_ptr<work_store> store,
                          caf::timespan commit_interval,
                          caf::actor_addr owner) {
  self->state.store = std::move(store);
  self->state.shared = self->state.store->shared();
  self->state.commit_interval = commit_interval;
  self->state.owner = std::move(owner);
  // A predecessor may have died in the middle of a group.
  self->state.store->discard();
  // With retention, finished operations are pruned in the background.
  if (auto every = self->state.store->prune_interval())
    self->delayed_send(self, *every, queue_msg::prune_v);
  if (auto every = self->state.store->lease_interval())
    self->delayed_send(self, *every, queue_msg::renew_v);
  if (self->state.shared)
    listen(self);
  auto counts = [self] {
    return caf::make_message(
        counts_of(*self->state.store, self->clock().now()));
  };
  return {
      [self](add_work_atom, work_record& record, caf::timespan delay) {
        return add(self, record, delay, nullptr);
      },
      [self](add_work_atom, work_record& record, caf::timespan delay,
             std::string& key) { return add(self, record, delay, &key); },
      [self](add_work_atom, work_record& record, caf::timespan delay,
             std::string& key, job_options& opts) {
        return add(self, record, delay, &key, &opts);
      },
      [self](add_work_atom, std::vector<work_record>& records) {
        return add_all(self, records);
      },
      [self](get_work_atom) { return get(self, 1, false); },
      [self](get_work_atom, uint32_t n) {
        if (n == 0)
          return caf::result<caf::message>{
              caf::make_error(pool_errc::unexpected_message,
                              std::string{"get_work for 0 entries"})};
        return get(self, n, true);
      },
      [self, counts](queue_msg::remove_atom, uint64_t operation) {
        self->state.store->remove(operation);
        return answer(self, counts(), answer_type::change, true);
      },
      [self, counts](queue_msg::count_atom) {
        return answer(self, counts(), answer_type::change, true);
      },
      [self, counts](queue_msg::finish_atom, uint64_t operation,
                     caf::message& result) -> caf::result<caf::message> {
        auto now = self->clock().now();
        if (auto err = self->state.store->finish(operation, result, now))
          return refuse(self, std::move(err));
        return answer(self, counts(), answer_type::change, true, {},
                      operation);
      },
      [self, counts](queue_msg::finish_atom, uint64_t operation,
                     caf::error& failure) -> caf::result<caf::message> {
        auto now = self->clock().now();
        if (auto err = self->state.store->finish(operation, failure, now))
          return refuse(self, std::move(err));
        return answer(self, counts(), answer_type::change, true, {},
                      operation);
      },
      [self, counts](queue_msg::note_atom, uint64_t operation,
                     attempt_failure& x) -> caf::result<caf::message> {
        if (auto err = self->state.store->note_failure(operation, x))
          return refuse(self, std::move(err));
        return answer(self, counts(), answer_type::change, true);
      },
      [self, counts](queue_msg::forget_atom,
                     uint64_t operation) -> caf::result<caf::message> {
        if (auto err = self->state.store->forget_failed(operation))
          return refuse(self, std::move(err));
        return answer(self, counts(), answer_type::change, true);
      },
      [self](queue_msg::find_key_atom, std::string& key, caf::timespan window) {
        auto found =
            self->state.store->find_key(key, self->clock().now(), window);
        return answer(
            self, caf::make_message(queue_msg::key_found_v, found.value_or(0)),
            answer_type::read);
      },
      [self](queue_msg::record_atom,
             uint64_t operation) -> caf::result<caf::message> {
        // Reads change nothing, but must not overtake held answers.
        // An unknown operation is answered with an empty record (id 0):
        // errors are reserved for answers of the counts kind.
        auto record = self->state.store->lookup(operation);
        return answer(self, caf::make_message(record ? std::move(*record)
                                                     : operation_record{}));
      },
      [self](queue_msg::flush_atom) { flush(self); },
      [self](queue_msg::prune_atom) { prune(self); },
      [self](queue_msg::renew_atom) { renew(self); },
      [self](queue_msg::wake_atom) {
        if (self->state.shared)
          wake(self);
      },
  };
}

} // namespace pool
