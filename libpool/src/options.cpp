#include "pool/options.hpp"

#include <thread>

#include "pool/errors.hpp"

namespace pool {

std::string to_string(worker_kind x) {
  return x == worker_kind::dedicated ? "dedicated" : "cooperative";
}

size_t default_dedicated_workers() {
  auto cores = std::thread::hardware_concurrency();
  return cores > 1 ? cores - 1 : 1;
}

size_t pool_options::workers() const noexcept {
  if (!workers_set_ && autoscale_)
    return autoscale_->min;
  if (!workers_set_ && kind_ == worker_kind::dedicated)
    return default_dedicated_workers();
  return workers_;
}

caf::error pool_options::validate() const {
  auto bad = [](const char* field, const char* why) {
    return caf::make_error(pool_errc::invalid_option, std::string{field},
                           std::string{why});
  };
  if (autoscale_) {
    if (autoscale_->min == 0)
      return bad("autoscale.min", "must be at least 1");
    if (autoscale_->min > autoscale_->max)
      return bad("autoscale.min", "must not exceed autoscale.max");
    if (autoscale_->grow_after <= caf::timespan::zero())
      return bad("autoscale.grow_after", "must be greater than zero");
    if (autoscale_->shrink_after <= caf::timespan::zero())
      return bad("autoscale.shrink_after", "must be greater than zero");
  }
  if (workers() == 0)
    return bad("workers", "must be at least 1");
  if (workers() > max_pool_workers)
    return bad("workers", "must be at most 1000000");
  if (max_batch_ == 0)
    return bad("max_batch", "must be at least 1 (1 = no batches)");
  if (max_batch_ > max_batch_limit)
    return bad("max_batch", "must be at most 4096");
  if (batch_time_ <= caf::timespan::zero())
    return bad("batch_time", "must be greater than zero");
  if (name_.empty())
    return bad("name", "must not be empty");
  if (max_attempts_ == 0)
    return bad("max_attempts", "must be at least 1 (1 = no retry)");
  if (backoff_initial_ < caf::timespan::zero())
    return bad("backoff.initial", "must not be negative");
  if (backoff_max_ < backoff_initial_)
    return bad("backoff.max", "must not be less than backoff.initial");
  if (!(backoff_multiplier_ >= 1.0))
    return bad("backoff.multiplier", "must be at least 1.0");
  if (!(jitter_ >= 0.0 && jitter_ <= 1.0))
    return bad("jitter", "must be between 0.0 and 1.0");
  if (attempt_timeout_ && *attempt_timeout_ <= caf::timespan::zero())
    return bad("attempt_timeout", "must be greater than zero");
  if (capacity_ && *capacity_ == 0)
    return bad("capacity", "must be at least 1");
  if (max_restarts_ <= 0)
    return bad("restart_intensity.max_restarts", "must be at least 1");
  if (restart_window_ <= caf::timespan::zero())
    return bad("restart_intensity.window", "must be greater than zero");
  if (overload_threshold_ && *overload_threshold_ == 0)
    return bad("overload_warning.threshold", "must be at least 1");
  if (overload_interval_ <= caf::timespan::zero())
    return bad("overload_warning.interval", "must be greater than zero");
  if (backlog_alarm_ && *backlog_alarm_ <= caf::timespan::zero())
    return bad("backlog_alarm", "must be greater than zero");
  if (durable_path_ && durable_path_->empty())
    return bad("durable", "needs a file path");
  if (commit_interval_ < caf::timespan::zero())
    return bad("commit_interval", "must not be negative");
  if (unique_window_ < caf::timespan::zero())
    return bad("unique_window", "must not be negative");
  if (retention_ && *retention_ <= caf::timespan::zero())
    return bad("retention", "must be greater than zero");
  if (retention_ && *retention_ < unique_window_)
    return bad("retention", "must be at least unique_window (a key must "
                            "outlive its window)");
  if (autoscale_ &&
      (workers() < autoscale_->min || workers() > autoscale_->max))
    return bad("workers", "must lie within autoscale.min and autoscale.max");
  return caf::none;
}

log_hook pool_options::log() const {
  return log_ ? log_ : default_log_hook();
}

} // namespace pool
