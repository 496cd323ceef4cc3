#include "pool/detail/monitors.hpp"

#include <algorithm>

#include "pool/duration_text.hpp"

namespace pool {

monitors::monitors(const pool_options& opts, shepherd_effects& fx)
    : opts_(opts), fx_(fx) {
  // nop
}

void monitors::log(log_level level, const std::string& text) {
  fx_.log(level, text);
}

std::optional<size_t> monitors::note_available(uint64_t available,
                                               size_t workers,
                                               size_t configured,
                                               bool draining) {
  available_ = available;
  counters_.available_high = std::max(counters_.available_high, available);
  std::optional<size_t> grow;
  if (opts_.backlog_alarm() || opts_.autoscale())
    check_backlog(workers, configured, draining, grow);
  return grow;
}

std::optional<size_t>
monitors::on_backlog_timer(size_t workers, size_t configured, bool draining) {
  backlog_timer_.fired(fx_.now());
  std::optional<size_t> grow;
  check_backlog(workers, configured, draining, grow);
  return grow;
}

void monitors::check_backlog(size_t workers, size_t configured, bool draining,
                             std::optional<size_t>& grow) {
  auto n = workers;
  if (available_ < n) {
    backlog_since_.reset();
    grow_since_.reset();
    if (alarm_) {
      alarm_ = false;
      log(log_level::info,
          "backlog alarm cleared: " + std::to_string(available_) +
              " operations available, " + std::to_string(n) + " workers");
      if (fx_.wants(event_kind::alarm_cleared))
        fx_.publish({event_kind::alarm_cleared, 0, 0, available_, {}, {}});
    }
    return;
  }
  if (available_ == n)
    return; // Neither above nor below: the condition keeps its state.
  auto t = fx_.now();
  if (!backlog_since_)
    backlog_since_ = t;
  if (!grow_since_)
    grow_since_ = t;
  if (auto after = opts_.backlog_alarm(); after && !alarm_) {
    if (t - *backlog_since_ >= *after) {
      alarm_ = true;
      ++counters_.alarms_raised;
      log(log_level::warning, "backlog alarm: " + std::to_string(available_) +
                                  " operations available for more than " +
                                  duration_text(*after) + " with " +
                                  std::to_string(n) + " workers");
      if (fx_.wants(event_kind::alarm_raised))
        fx_.publish({event_kind::alarm_raised, 0, 0, available_, {}, {}});
    } else {
      backlog_timer_.arm(fx_, *backlog_since_ + *after,
                         timer_event{timer_kind::backlog, {}, {}});
    }
  }
  if (auto& limits = opts_.autoscale();
      limits && configured < limits->max && !draining) {
    if (t - *grow_since_ >= limits->grow_after) {
      // Double, but not beyond the backlog or the maximum.
      auto target = std::min<uint64_t>(2 * configured, available_);
      target = std::max<uint64_t>(target, configured + 1);
      target = std::min<uint64_t>(target, limits->max);
      grow_since_ = t;
      log(log_level::info,
          "autoscale: growing to " + std::to_string(target) + " workers");
      grow = static_cast<size_t>(target);
    } else {
      backlog_timer_.arm(fx_, *grow_since_ + limits->grow_after,
                         timer_event{timer_kind::backlog, {}, {}});
    }
  }
}

void monitors::on_overload_timer(size_t configured) {
  overload_timer_.fired(fx_.now());
  check_overload(configured);
}

void monitors::check_overload(size_t configured) {
  auto threshold = overload_threshold(configured);
  if (waiting_ <= threshold) {
    overload_since_.reset();
    return;
  }
  // While the sustain timer runs, nothing can change before it fires: no
  // clock read on each submit of a burst.
  if (overload_timer_.armed()) {
    if (!overload_since_)
      overload_since_ = fx_.now(); // A new overload, before the old timer.
    return;
  }
  auto t = fx_.now();
  if (!overload_since_)
    overload_since_ = t;
  // Only a sustained overload warns: a burst that drains within the
  // sustain time is what a queue is for.
  if (t - *overload_since_ < opts_.overload_sustain()) {
    overload_timer_.arm(fx_, *overload_since_ + opts_.overload_sustain(),
                        timer_event{timer_kind::overload, {}, {}});
    return;
  }
  if (last_overload_ && t - *last_overload_ < opts_.overload_interval()) {
    // Quiet until the next warning may go out.
    overload_timer_.arm(fx_, *last_overload_ + opts_.overload_interval(),
                        timer_event{timer_kind::overload, {}, {}});
    return;
  }
  last_overload_ = t;
  ++counters_.overload_warnings;
  log(log_level::warning,
      "overloaded: " + std::to_string(waiting_) + " operations waiting" +
          (opts_.overload_sustain() > caf::timespan::zero()
               ? " for " + duration_text(t - *overload_since_)
               : std::string{}) +
          ", threshold " + std::to_string(threshold) + " with " +
          std::to_string(configured) + " workers");
  if (fx_.wants(event_kind::overload))
    fx_.publish({event_kind::overload, 0, 0, waiting_, {}, {}});
}

void monitors::note_job_time(caf::timespan elapsed) {
  auto limit = opts_.slow_job_warning();
  if (limit <= caf::timespan::zero() || elapsed <= limit)
    return;
  ++counters_.slow_jobs;
  ++slow_since_warning_;
  auto t = fx_.now();
  if (last_slow_warning_ && t - *last_slow_warning_ < std::chrono::minutes(1))
    return;
  last_slow_warning_ = t;
  log(log_level::warning,
      "a job ran " + duration_text(elapsed) + " on a cooperative worker (" +
          std::to_string(slow_since_warning_) + " over " +
          duration_text(limit) +
          " since the last warning): it kept a CAF "
          "scheduler thread from every other actor meanwhile; give jobs that "
          "block or compute for long dedicated workers (kind(dedicated))");
  slow_since_warning_ = 0;
}

void monitors::note_sleeping(const worker_slot& slot, size_t configured) {
  auto& limits = opts_.autoscale();
  if (limits && !slot.joined && configured > limits->min)
    idle_timer_.arm(fx_, slot.slept_at + limits->shrink_after,
                    timer_event{timer_kind::idle, {}, {}});
}

std::optional<size_t> monitors::on_idle_timer(worker_roster& roster,
                                              bool draining) {
  auto t = fx_.now();
  idle_timer_.fired(t);
  auto& limits = opts_.autoscale();
  auto configured = roster.configured();
  if (!limits || configured <= limits->min || draining)
    return std::nullopt;
  size_t idle = 0;
  std::optional<time_point> next; // When the next sleeper becomes idle.
  roster.for_each(worker_phase::sleeping,
                  [&](worker_ref, const worker_slot& slot) {
                    if (slot.joined)
                      return true;
                    if (t - slot.slept_at >= limits->shrink_after)
                      ++idle;
                    else if (!next || slot.slept_at < *next)
                      next = slot.slept_at;
                    return true;
                  });
  auto surplus = std::min(idle, configured - limits->min);
  std::optional<size_t> result;
  if (surplus > 0) {
    // Resizing stops the longest-sleeping workers first: exactly these.
    log(log_level::info,
        "autoscale: shrinking to " + std::to_string(configured - surplus) +
            " workers (idle for " + duration_text(limits->shrink_after) + ")");
    result = configured - surplus;
  }
  if (next && configured - surplus > limits->min)
    idle_timer_.arm(fx_, *next + limits->shrink_after,
                    timer_event{timer_kind::idle, {}, {}});
  return result;
}

pool_stats monitors::snapshot(const worker_roster& roster,
                              operation_table& table, const admission& adm,
                              size_t abandoned) {
  auto result = counters_;
  auto now = fx_.now();
  result.configured = roster.configured();
  result.workers = roster.size();
  result.busy = roster.busy();
  result.busy_high = roster.busy_high();
  result.waiting = roster.waiting();
  result.sleeping = roster.sleeping();
  result.joined = roster.joined();
  result.abandoned = abandoned;
  // (Attempts sent ahead to busy workers have not started: available.)
  result.available = table.available(now) + table.sent_ahead();
  result.delayed = table.waiting() - result.available;
  result.held = table.held();
  result.parked = adm.parked() + adm.looking_up();
  result.backlog_alarm = alarm_;
  result.queue_wait = summarize(queue_wait_);
  result.processing = summarize(processing_);
  return result;
}

pool_metrics monitors::metrics(const worker_roster& roster,
                              operation_table& table, const admission& adm,
                              size_t abandoned) {
  pool_metrics result;
  result.stats = snapshot(roster, table, adm, abandoned);
  result.queue_wait = export_histogram(queue_wait_);
  result.processing = export_histogram(processing_);
  auto now = fx_.now();
  if (auto oldest = table.oldest_due(now))
    result.oldest_due_age = now - *oldest;
  return result;
}

} // namespace pool
