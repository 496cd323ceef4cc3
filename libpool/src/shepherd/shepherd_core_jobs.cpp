// The jobs view: a page of the operation table by state (`list_jobs`).
// Read-only; bounded by `job_scan_budget` operations looked at per page.
#include "pool/detail/shepherd_core.hpp"

#include <caf/message.hpp>

#include "pool/errors.hpp"

namespace pool {

namespace {

job_state state_of(const operation& op, const operation_extras* extras,
                   caf::actor_clock::time_point now) {
  if (op.phase == operation_phase::held && !op.sent_ahead())
    return job_state::running;
  if (extras != nullptr && !extras->history.empty())
    return job_state::retrying;
  return op.stamp > now ? job_state::delayed : job_state::waiting;
}

} // namespace

caf::error shepherd_core::jobs_filter_error(const job_filter& filter) {
  if (auto why = check(filter); !why.empty())
    return caf::make_error(pool_errc::invalid_option, std::string{"jobs"},
                           std::move(why));
  return caf::none;
}

caf::expected<job_page> shepherd_core::jobs(const job_filter& filter) {
  if (auto err = jobs_filter_error(filter))
    return err;
  job_page page;
  dead_.expire(now()); // (what outlived its age is not counted)
  page.total = table_.size() + dead_.size();
  // (Failed, cancelled and stopped ones are in the dead set only.)
  auto ended_only = filter.state && kept_when_ended(*filter.state);
  if (!ended_only)
    list_table(filter, page);
  // The dead set's jobs, merged in by id (none in the table).
  if (!filter.state || ended_only)
    list_dead(filter, page);
  return page;
}

void shepherd_core::list_table(const job_filter& filter, job_page& page) {
  auto t = now();
  auto after = filter.after;
  if (filter.id != 0) // a search by id: that one only
    after = std::max(after, filter.id - 1);
  uint64_t last = 0;
  page.scanned = table_.scan(after, job_scan_budget, [&](uint64_t id,
                                                         operation& op) {
    last = id;
    if (filter.id != 0 && id != filter.id)
      return false;
    auto extras = table_.find_extras(id);
    auto state = state_of(op, extras, t);
    if (filter.state && state != *filter.state)
      return true;
    auto policy = table_.policy(id, op);
    if (filter.priority && policy.priority != *filter.priority)
      return true;
    if (!filter.key.empty()
        && (extras == nullptr
            || (extras->key != filter.key
                && extras->concurrency_key != filter.key)))
      return true;
    job_info x;
    x.id = id;
    x.state = state;
    x.attempt = op.attempt;
    x.priority = policy.priority;
    x.age = t - op.submitted_at;
    x.since = t - op.stamp;
    if (state == job_state::running)
      x.holder = "worker " + std::to_string(op.holder.index);
    if (extras != nullptr) {
      x.key = extras->key;
      x.concurrency_key = extras->concurrency_key;
      if (!extras->history.empty())
        x.last_error = describe(extras->history.back().reason);
      x.history = job_history(extras->history);
    }
    if (filter.payloads)
      x.payload = job_payload_text(op.payload);
    page.jobs.push_back(std::move(x));
    return page.jobs.size() < filter.limit;
  });
  // More may follow unless the scan ran off the end of the table (or found
  // the one id asked for).
  auto stopped_early = page.jobs.size() == filter.limit
                       || page.scanned == job_scan_budget;
  if (stopped_early && filter.id == 0 && last < table_.next_id() - 1)
    page.next_after = last;
}

void shepherd_core::own_part(job_page& page) {
  // The store names the holding store; here, which worker since when.
  auto t = now();
  for (auto& x : page.jobs) {
    if (x.state != job_state::running)
      continue;
    auto op = table_.find(x.id);
    if (op == nullptr || op->phase != operation_phase::held
        || op->sent_ahead())
      continue;
    auto worker = "worker " + std::to_string(op->holder.index);
    x.holder = x.holder.empty() ? worker : worker + " of " + x.holder;
    x.since = t - op->stamp;
  }
}

} // namespace pool
