#include "pool/metrics_history.hpp"

#include "pool/errors.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace pool {

namespace {

using json = nlohmann::json;

double seconds(caf::timespan x) {
  return static_cast<double>(x.count()) / 1e9;
}

double unix_seconds(caf::timestamp x) {
  return seconds(x.time_since_epoch());
}

uint64_t finished(const pool_stats& x) {
  return x.completed + x.failed + x.cancelled;
}

json quantiles(const histogram_data& newer, const histogram_data& older) {
  return json{{"p50", seconds(window_quantile(newer, older, 0.5))},
              {"p95", seconds(window_quantile(newer, older, 0.95))},
              {"p99", seconds(window_quantile(newer, older, 0.99))},
              {"count", newer.count - std::min(newer.count, older.count)}};
}

// Figures over the interval from `older` to `newer`.
json interval(const metrics_sample& newer, const metrics_sample& older) {
  auto dt = seconds(newer.at - older.at);
  auto& n = newer.metrics;
  auto& o = older.metrics;
  auto done = finished(n.stats) - std::min(finished(n.stats), finished(o.stats));
  return json{{"seconds", dt},
              {"throughput", dt > 0 ? static_cast<double>(done) / dt : 0.0},
              {"wait", quantiles(n.queue_wait, o.queue_wait)},
              {"run", quantiles(n.processing, o.processing)}};
}

json stats_json(const pool_stats& x) {
  auto summary = [](const latency_summary& s) {
    return json{{"count", s.count}, {"p50", seconds(s.p50)},
                {"p90", seconds(s.p90)}, {"p99", seconds(s.p99)},
                {"max", seconds(s.max)}};
  };
  return json{{"configured", x.configured},
              {"workers", x.workers},
              {"busy", x.busy},
              {"busy_high", x.busy_high},
              {"waiting", x.waiting},
              {"sleeping", x.sleeping},
              {"joined", x.joined},
              {"available", x.available},
              {"available_high", x.available_high},
              {"delayed", x.delayed},
              {"submitted", x.submitted},
              {"deduplicated", x.deduplicated},
              {"held", x.held},
              {"workers_dropped", x.workers_dropped},
              {"slow_jobs", x.slow_jobs},
              {"completed", x.completed},
              {"failed", x.failed},
              {"rejected", x.rejected},
              {"parked", x.parked},
              {"cancelled", x.cancelled},
              {"retried", x.retried},
              {"snoozed", x.snoozed},
              {"timed_out", x.timed_out},
              {"stale_replies", x.stale_replies},
              {"worker_restarts", x.worker_restarts},
              {"queue_restarts", x.queue_restarts},
              {"abandoned", x.abandoned},
              {"backlog_alarm", x.backlog_alarm},
              {"paused", x.paused},
              {"expected_total", x.expected_total},
              {"dead", x.dead},
              {"alarms_raised", x.alarms_raised},
              {"overload_warnings", x.overload_warnings},
              {"waiting_high", x.waiting_high},
              {"adopted", x.adopted},
              {"leases_lost", x.leases_lost},
              {"released", x.released},
              {"queue_wait", summary(x.queue_wait)},
              {"processing", summary(x.processing)}};
}

} // namespace

metrics_history::metrics_history(size_t capacity)
  : capacity_(std::max<size_t>(capacity, 2)) {
  // nop
}

void metrics_history::add(caf::timestamp at, pool_metrics metrics) {
  samples_.push_back(metrics_sample{at, std::move(metrics)});
  while (samples_.size() > capacity_)
    samples_.pop_front();
}

const metrics_sample& metrics_history::before(caf::timespan window) const {
  auto limit = samples_.back().at - window;
  for (auto i = samples_.rbegin(); i != samples_.rend(); ++i)
    if (i->at <= limit)
      return *i;
  return samples_.front();
}

event_log::event_log(size_t keep, size_t tracked)
  : keep_(std::max<size_t>(keep, 1)), tracked_(std::max<size_t>(tracked, 1)) {
  // nop
}

void event_log::note(const pool_event& ev, caf::timestamp at) {
  switch (ev.kind) {
    case event_kind::retried: {
      auto i = attempts_.find(ev.operation);
      if (i == attempts_.end()) {
        while (attempts_.size() >= tracked_ && !tracked_order_.empty()) {
          if (attempts_.erase(tracked_order_.front()) > 0)
            ++forgotten_;
          tracked_order_.pop_front();
        }
        i = attempts_.emplace(ev.operation, std::vector<std::string>{}).first;
        tracked_order_.push_back(ev.operation);
      }
      i->second.push_back(describe(ev.error));
      break;
    }
    case event_kind::completed:
      attempts_.erase(ev.operation);
      break;
    case event_kind::failed: {
      failure entry;
      entry.operation = ev.operation;
      entry.at = at;
      entry.error = describe(ev.error);
      if (auto i = attempts_.find(ev.operation); i != attempts_.end()) {
        entry.attempts = std::move(i->second);
        attempts_.erase(i);
      }
      failures_.push_front(std::move(entry));
      if (failures_.size() > keep_)
        failures_.pop_back();
      break;
    }
    default:
      health_.push_front(health{at, to_string(ev.kind), ev.count});
      if (health_.size() > keep_)
        health_.pop_back();
  }
  // Ids of finished operations leave the order lazily, here; the ones still
  // tracked keep their place relative to each other.
  if (attempts_.empty())
    tracked_order_.clear();
  while (tracked_order_.size() > 2 * tracked_) {
    auto id = tracked_order_.front();
    tracked_order_.pop_front();
    if (attempts_.count(id) > 0)
      tracked_order_.push_back(id);
  }
}

std::string pool_json(const std::string& name, const metrics_history& history,
                      const event_log& events, caf::timespan window) {
  json out{{"name", name}};
  if (history.empty()) {
    out["sampled"] = false;
    return out.dump();
  }
  auto& last = history.latest();
  auto& s = last.metrics.stats;
  out["sampled"] = true;
  out["at"] = unix_seconds(last.at);
  out["stats"] = stats_json(s);
  out["oldest_due_age"] = seconds(last.metrics.oldest_due_age);
  out["restarts"] = json{{"in_window", last.metrics.restarts_in_window},
                         {"max", last.metrics.max_restarts},
                         {"window", seconds(last.metrics.restart_window)}};
  out["utilization"] = s.workers > 0 ? static_cast<double>(s.busy) /
                                           static_cast<double>(s.workers)
                                     : 0.0;
  out["window"] = interval(last, history.before(window));
  auto& series = out["series"] = json::array();
  auto& samples = history.samples();
  for (size_t i = 1; i < samples.size(); ++i) {
    auto point = interval(samples[i], samples[i - 1]);
    auto& st = samples[i].metrics.stats;
    point["at"] = unix_seconds(samples[i].at);
    point["busy"] = st.busy;
    point["workers"] = st.workers;
    point["available"] = st.available;
    point["delayed"] = st.delayed;
    series.push_back(std::move(point));
  }
  auto& failures = out["failures"] = json::array();
  for (auto& f : events.failures())
    failures.push_back(json{{"operation", f.operation},
                            {"at", unix_seconds(f.at)},
                            {"error", f.error},
                            {"attempts", f.attempts}});
  auto& health = out["events"] = json::array();
  for (auto& h : events.health_events())
    health.push_back(
        json{{"at", unix_seconds(h.at)}, {"kind", h.kind}, {"count", h.count}});
  out["histories_forgotten"] = events.forgotten();
  return out.dump();
}

} // namespace pool
