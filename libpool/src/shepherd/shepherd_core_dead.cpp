// The dead set: operations that failed for good, kept for an operator to
// retry (through `submit`, as a new operation) or discard; their part of
// the jobs view. Nothing here runs for an operation that succeeds.
#include "pool/detail/shepherd_core.hpp"

#include <algorithm>
#include <limits>

#include <caf/make_message.hpp>

#include "pool/queue_protocol.hpp"

namespace pool {

namespace {

bool matches(const dead_job& x, const job_filter& filter) {
  if (filter.id != 0 && x.id != filter.id)
    return false;
  if (filter.state && x.state != *filter.state)
    return false;
  if (filter.priority && x.policy.priority != *filter.priority)
    return false;
  return filter.key.empty() || x.key == filter.key ||
         x.concurrency_key == filter.key;
}

// The error its caller got when it ended.
caf::error final_error(const dead_job& x) {
  switch (x.state) {
    case job_state::cancelled:
      return caf::make_error(pool_errc::cancelled, x.id);
    case job_state::stopped:
      return caf::make_error(pool_errc::drain_deadline, x.id);
    default:
      return caf::make_error(pool_errc::operation_failed, x.id, x.history);
  }
}

operation_state record_state(job_state x) {
  return x == job_state::cancelled ? operation_state::cancelled
         : x == job_state::stopped ? operation_state::stopped
                                   : operation_state::failed;
}

job_info info_of(const dead_job& x, caf::actor_clock::time_point now,
                 bool payloads) {
  job_info result;
  result.id = x.id;
  result.state = x.state;
  result.attempt = x.attempt;
  result.priority = x.policy.priority;
  result.key = x.key;
  result.concurrency_key = x.concurrency_key;
  result.age = now - x.submitted_at;
  result.since = now - x.failed_at;
  if (payloads)
    result.payload = job_payload_text(x.payload);
  result.last_error = describe(final_error(x));
  result.history = job_history(x.history);
  return result;
}

// Why `filter` cannot select the dead set's jobs for `what`; none if it
// can.
caf::error dead_filter_error(const job_filter& filter, const char* what) {
  if (auto why = check(filter) + check_dead(filter); !why.empty())
    return caf::make_error(pool_errc::invalid_option, std::string{what},
                           std::move(why));
  return caf::none;
}

// Dead jobs acted on in one go; a larger dead set goes in turns.
constexpr uint64_t most_per_action = 10'000;

} // namespace

void shepherd_core::keep_dead(uint64_t id, const operation& op,
                              const std::vector<attempt_failure>& history,
                              job_state state) {
  auto t = now();
  dead_job x;
  x.id = id;
  x.state = state;
  x.attempt = op.attempt;
  x.payload = op.payload;
  x.history = history;
  x.policy = table_.policy(id, op);
  if (auto extras = table_.find_extras(id)) {
    x.key = extras->key;
    x.concurrency_key = extras->concurrency_key;
  }
  x.submitted_at = op.submitted_at;
  x.failed_at = t;
  dead_.add(std::move(x), t);
}

void shepherd_core::adopt_dead(work_store& store) {
  if (!dead_.enabled())
    return;
  auto t = now();
  auto kept = store.failed_operations(dead_.max_jobs(), dead_.max_age(), t);
  for (auto& x : kept) {
    auto& rec = x.record;
    dead_job job;
    job.id = rec.id;
    if (!rec.history.empty())
      job.attempt = rec.history.back().attempt;
    job.payload = std::move(rec.payload);
    job.key = std::move(rec.key);
    job.concurrency_key = rec.options.concurrency_key();
    job.policy = policy_of(rec.options);
    job.failed_at = t - x.ago;
    job.submitted_at = job.failed_at;
    if (!rec.history.empty())
      job.submitted_at -= rec.history.back().after_submit;
    job.history = std::move(rec.history);
    dead_.add(std::move(job), t);
  }
  if (!kept.empty())
    fx_.log(log_level::info,
            "listing " + std::to_string(dead_.size()) +
                " operations that failed for good from the store (dead set)");
}

void shepherd_core::keep_ended(uint64_t id, job_state state) {
  if (!dead_.enabled())
    return;
  auto op = table_.find(id);
  if (op == nullptr)
    return;
  auto extras = table_.find_extras(id);
  keep_dead(id, *op,
            extras != nullptr ? extras->history
                              : std::vector<attempt_failure>{},
            state);
}

bool shepherd_core::status_of_ended(uint64_t id,
                                    caf::response_promise& promise) {
  dead_.expire(now());
  operation_record rec;
  rec.id = id;
  if (auto x = dead_.find(id)) {
    rec.state = record_state(x->state);
    rec.attempt = x->attempt;
    rec.payload = x->payload;
    rec.error = final_error(*x);
    rec.history = x->history;
    rec.key = x->key;
  } else if (dead_.discarded(id)) {
    rec.state = operation_state::discarded;
  } else {
    return false;
  }
  fx_.deliver(promise, caf::make_message(std::move(rec)));
  return true;
}

std::vector<uint64_t> shepherd_core::dead_matching(const job_filter& filter) {
  dead_.expire(now());
  std::vector<uint64_t> result;
  // As a listing's pages from `after` on, all of them (no `limit`).
  auto after = filter.after;
  if (filter.id != 0)
    after = std::max(after, filter.id - 1);
  dead_.scan(after, std::numeric_limits<uint64_t>::max(),
             [&](const dead_job& x) {
               if (matches(x, filter))
                 result.push_back(x.id);
               return filter.id == 0;
             });
  return result;
}

void shepherd_core::list_dead(const job_filter& filter, job_page& page) {
  auto t = now();
  // The table's part covers its ids up to `bound`; so must this one.
  auto bound = page.next_after != 0 ? page.next_after
                                    : std::numeric_limits<uint64_t>::max();
  auto after = filter.after;
  if (filter.id != 0)
    after = std::max(after, filter.id - 1);
  std::vector<job_info> found;
  uint64_t last = 0;
  auto scanned = dead_.scan(after, job_scan_budget, [&](const dead_job& x) {
    if (x.id > bound || (filter.id != 0 && x.id != filter.id))
      return false;
    last = x.id;
    if (matches(x, filter))
      found.push_back(info_of(x, t, filter.payloads));
    return found.size() < filter.limit;
  });
  page.scanned += scanned;
  if (found.empty() && scanned < job_scan_budget)
    return;
  // Stopped early: what lies beyond `last` waits for the next page.
  if ((found.size() == filter.limit || scanned == job_scan_budget) &&
      filter.id == 0 && last < dead_.last_id())
    bound = std::min(bound, last);
  auto& jobs = page.jobs;
  jobs.erase(std::remove_if(jobs.begin(), jobs.end(),
                            [&](const job_info& x) { return x.id > bound; }),
             jobs.end());
  auto middle = static_cast<ptrdiff_t>(jobs.size());
  jobs.insert(jobs.end(), std::make_move_iterator(found.begin()),
              std::make_move_iterator(found.end()));
  std::inplace_merge(
      jobs.begin(), jobs.begin() + middle, jobs.end(),
      [](const job_info& x, const job_info& y) { return x.id < y.id; });
  if (jobs.size() > filter.limit) {
    jobs.resize(filter.limit);
    bound = jobs.back().id;
  }
  page.next_after =
      bound != std::numeric_limits<uint64_t>::max() ? bound : uint64_t{0};
}

caf::expected<jobs_acted> shepherd_core::retry_dead(const job_filter& filter) {
  if (auto err = dead_filter_error(filter, "retry_jobs"))
    return err;
  if (draining())
    return caf::make_error(pool_errc::closed,
                           std::string{"the pool is draining"});
  jobs_acted result;
  auto ids = dead_matching(filter);
  for (auto id : ids) {
    // A retry the queue has no room for stays (and so do those after it).
    if (adm_.check(table_.waiting()) == admission_verdict::reject) {
      result.kept = ids.size() - result.ids.size();
      break;
    }
    auto job = dead_.take(id);
    if (durable_) // (before the retry's key is looked up in the store)
      record(caf::make_message(queue_msg::forget_v, id), false);
    auto next = table_.next_id();
    submit(retry_of(std::move(job->payload), job->policy, job->key,
                    std::move(job->concurrency_key)));
    result.ids.push_back(id);
    result.new_ids.push_back(new_id_since(next, job->key));
  }
  note_retried(result);
  return result;
}

submission shepherd_core::retry_of(caf::message payload,
                                   const operation_policy& policy,
                                   std::string key, std::string ckey) {
  submission sub;
  sub.payload = std::move(payload);
  sub.policy = policy;
  sub.key = std::move(key);
  // The failed operation's own key does not count against its retry.
  sub.window = caf::timespan{0};
  sub.concurrency_key = std::move(ckey);
  return sub;
}

uint64_t shepherd_core::new_id_since(uint64_t next, const std::string& key) {
  if (table_.next_id() != next)
    return next;
  // None yet: parked, or its key looked up; or an operation with its key
  // runs already.
  return key.empty() ? uint64_t{0} : table_.find_key(key);
}

void shepherd_core::note_retried(jobs_acted& result) {
  result.note =
      "retried " + std::to_string(result.ids.size()) + " as new operations";
  if (!result.ids.empty())
    result.note += "; their callers were told how they ended (failed, "
                   "cancelled or stopped) and wait no more: nobody waits "
                   "for the new "
                   "operations (follow them in the jobs view or with "
                   "op_status)";
  if (result.kept > 0)
    result.note += "; " + std::to_string(result.kept) +
                   " stay in the dead set: the queue is full (capacity " +
                   std::to_string(adm_.capacity().value_or(0)) +
                   "), retry them later";
}

caf::expected<uint64_t> shepherd_core::take_limit(const job_filter& filter,
                                                  bool discard) {
  if (auto err = dead_filter_error(filter, discard ? "discard_jobs"
                                                   : "retry_jobs"))
    return err;
  if (!discard && draining())
    return caf::make_error(pool_errc::closed,
                           std::string{"the pool is draining"});
  auto cap = adm_.capacity();
  if (discard || !cap)
    return most_per_action;
  auto held = table_.waiting() + adm_.looking_up();
  return held >= *cap ? uint64_t{0}
                      : std::min<uint64_t>(most_per_action, *cap - held);
}

jobs_acted shepherd_core::retry_taken(ended_taken& taken) {
  // The store deleted them: each is accepted now, whatever came into the
  // queue since the room was measured (nothing taken is lost).
  jobs_acted result;
  for (auto& x : taken.ops) {
    auto& rec = x.record;
    static_cast<void>(dead_.take(rec.id)); // (this process's copy, if any)
    auto sub = retry_of(std::move(rec.payload), policy_of(rec.options),
                        rec.key, rec.options.concurrency_key());
    sub.intake = waits_.arrive(); // (as `submit` does)
    auto next = table_.next_id();
    if (sub.key.empty())
      accept(std::move(sub));
    else
      submit_unique(std::move(sub));
    result.ids.push_back(rec.id);
    result.new_ids.push_back(new_id_since(next, rec.key));
  }
  result.kept = taken.left;
  note_retried(result);
  return result;
}

jobs_acted shepherd_core::discard_taken(const ended_taken& taken) {
  jobs_acted result;
  auto t = now();
  for (auto& x : taken.ops) {
    dead_.discard(x.record.id, t); // (this process's copy, if any)
    result.ids.push_back(x.record.id);
  }
  result.note = "discarded " + std::to_string(result.ids.size());
  if (taken.left > 0)
    result.note += "; " + std::to_string(taken.left) +
                   " more match: discard again for them";
  return result;
}

caf::expected<jobs_acted>
shepherd_core::discard_dead(const job_filter& filter) {
  if (auto err = dead_filter_error(filter, "discard_jobs"))
    return err;
  jobs_acted result;
  auto t = now();
  for (auto id : dead_matching(filter)) {
    dead_.discard(id, t);
    if (durable_)
      record(caf::make_message(queue_msg::forget_v, id), false);
    result.ids.push_back(id);
  }
  result.note = "discarded " + std::to_string(result.ids.size());
  return result;
}

} // namespace pool
