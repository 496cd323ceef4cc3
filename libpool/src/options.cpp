#include "pool/options.hpp"

#include <thread>

#include "pool/errors.hpp"

namespace pool {

std::string to_string(sqlite_sync x) {
  switch (x) {
    case sqlite_sync::full:
      return "full";
    case sqlite_sync::normal:
      return "normal";
  }
  return "sqlite_sync(" + std::to_string(static_cast<int>(x)) + ")";
}

namespace {

caf::error bad(const char* field, const char* why) {
  return caf::make_error(pool_errc::invalid_option, std::string{field},
                         std::string{why});
}

} // namespace

std::string to_string(worker_kind x) {
  return x == worker_kind::dedicated ? "dedicated" : "cooperative";
}

size_t default_dedicated_workers() {
  auto cores = std::thread::hardware_concurrency();
  return cores > 1 ? cores - 1 : 1;
}

size_t sizing_options::initial_workers() const noexcept {
  if (!workers_set && autoscale)
    return autoscale->min;
  if (!workers_set && kind == worker_kind::dedicated)
    return default_dedicated_workers();
  return workers;
}

caf::error sizing_options::validate() const {
  if (autoscale) {
    if (autoscale->min == 0)
      return bad("autoscale.min", "must be at least 1");
    if (autoscale->min > autoscale->max)
      return bad("autoscale.min", "must not exceed autoscale.max");
    if (autoscale->max > max_pool_workers)
      return bad("autoscale.max", "must be at most 1000000");
    if (autoscale->grow_after <= caf::timespan::zero())
      return bad("autoscale.grow_after", "must be greater than zero");
    if (autoscale->shrink_after <= caf::timespan::zero())
      return bad("autoscale.shrink_after", "must be greater than zero");
  }
  auto n = initial_workers();
  if (n == 0)
    return bad("workers", "must be at least 1");
  if (n > max_pool_workers)
    return bad("workers", "must be at most 1000000");
  if (autoscale && (n < autoscale->min || n > autoscale->max))
    return bad("workers", "must lie within autoscale.min and autoscale.max");
  return caf::none;
}

caf::error retry_options::validate() const {
  if (max_attempts == 0)
    return bad("max_attempts", "must be at least 1 (1 = no retry)");
  if (backoff_initial < caf::timespan::zero())
    return bad("backoff.initial", "must not be negative");
  if (backoff_max < backoff_initial)
    return bad("backoff.max", "must not be less than backoff.initial");
  if (!(backoff_multiplier >= 1.0))
    return bad("backoff.multiplier", "must be at least 1.0");
  if (!(jitter >= 0.0 && jitter <= 1.0))
    return bad("jitter", "must be between 0.0 and 1.0");
  if (attempt_timeout && *attempt_timeout <= caf::timespan::zero())
    return bad("attempt_timeout", "must be greater than zero");
  return dead_set.validate();
}

caf::error dead_set_options::validate() const {
  if (max_jobs > max_dead_jobs)
    return bad("dead_set.max_jobs", "must be at most 10000000 (0 = off)");
  if (max_age < caf::timespan::zero())
    return bad("dead_set.max_age", "must not be negative (0 = off)");
  return caf::none;
}

caf::error supervision_options::validate() const {
  if (max_restarts <= 0)
    return bad("restart_intensity.max_restarts", "must be at least 1");
  if (restart_window <= caf::timespan::zero())
    return bad("restart_intensity.window", "must be greater than zero");
  return caf::none;
}

caf::error admission_options::validate() const {
  if (capacity && *capacity == 0)
    return bad("capacity", "must be at least 1");
  if (rate_limit)
    return rate_limit->validate("rate_limit");
  return caf::none;
}

caf::error monitoring_options::validate() const {
  if (name.empty())
    return bad("name", "must not be empty");
  if (overload_threshold && *overload_threshold == 0)
    return bad("overload_warning.threshold", "must be at least 1");
  if (overload_interval <= caf::timespan::zero())
    return bad("overload_warning.interval", "must be greater than zero");
  if (overload_sustain < caf::timespan::zero())
    return bad("overload_sustain", "must not be negative");
  if (backlog_alarm && *backlog_alarm <= caf::timespan::zero())
    return bad("backlog_alarm", "must be greater than zero");
  if (slow_job < caf::timespan::zero())
    return bad("slow_job_warning", "must not be negative (0 = off)");
  return caf::none;
}

caf::error durability_options::validate() const {
  if (path && path->empty())
    return bad("durable", "needs a file path");
  if (commit_interval < caf::timespan::zero())
    return bad("commit_interval", "must not be negative");
  if (unique_window < caf::timespan::zero())
    return bad("unique_window", "must not be negative");
  if (retention && *retention <= caf::timespan::zero())
    return bad("retention", "must be greater than zero");
  if (postgres && path)
    return bad("postgres", "excludes durable: pick one store (SQLite for "
                           "one process, PostgreSQL for a shared queue)");
  if (postgres && postgres->empty())
    return bad("postgres", "needs a conninfo (postgres://user@host/db)");
  if (postgres)
    if (auto err = pg.validate())
      return err;
  if (retention && *retention < unique_window)
    return bad("retention", "must be at least unique_window (a key must "
                            "outlive its window)");
  return caf::none;
}

caf::error validate(const dispatch_tuning& x) {
  if (x.max_batch == 0)
    return bad("max_batch", "must be at least 1 (1 = no batches)");
  if (x.max_batch > max_batch_limit)
    return bad("max_batch", "must be at most 4096");
  if (x.batch_time <= caf::timespan::zero())
    return bad("batch_time", "must be greater than zero");
  return caf::none;
}

size_t pool_options::workers() const noexcept {
  return sizing_.initial_workers();
}

caf::error pool_options::validate() const {
  for (auto err :
       {sizing_.validate(), validate_dispatch(), monitoring_.validate(),
        retry_.validate(), admission_.validate(), supervision_.validate(),
        durability_.validate(), key_flow_.validate()})
    if (err)
      return err;
  return caf::none;
}

caf::error pool_options::validate_dispatch() const {
  return pool::validate(dispatch_);
}

log_hook pool_options::log() const {
  return monitoring_.log ? monitoring_.log : default_log_hook();
}

} // namespace pool
