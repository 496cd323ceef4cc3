#include "pool/prometheus.hpp"

#include <cstdint>
#include <functional>

#include <fmt/format.h>

namespace pool {

namespace {

using figure = std::function<double(const pool_metrics&)>;

struct family {
  const char* name;
  const char* type;
  const char* help;
  figure value;
};

double seconds(caf::timespan x) {
  return static_cast<double>(x.count()) / 1e9;
}

double num(uint64_t x) {
  return static_cast<double>(x);
}

// The bucket bounds: 2^10 .. 2^36 ns, every second power of two. A value of
// at most 2^k - 1 ns lies in a bucket that ends below 2^k, so the
// cumulative counts are exact at these bounds (see count_at_most).
constexpr int first_bound_exponent = 10;
constexpr int last_bound_exponent = 36;

void add_family_header(std::string& out, const char* name, const char* type,
                       const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void add_histogram(std::string& out, const std::vector<named_metrics>& pools,
                   const char* name, const char* help,
                   const histogram_data pool_metrics::*member) {
  add_family_header(out, name, "histogram", help);
  for (auto& p : pools) {
    auto& h = p.metrics.*member;
    auto label = prometheus_label(p.pool);
    for (auto e = first_bound_exponent; e <= last_bound_exponent; e += 2) {
      auto bound = uint64_t{1} << e;
      out += fmt::format("{}_bucket{{pool=\"{}\",le=\"{}\"}} {}\n", name, label,
                         static_cast<double>(bound) / 1e9,
                         count_at_most(h, bound - 1));
    }
    out += fmt::format("{}_bucket{{pool=\"{}\",le=\"+Inf\"}} {}\n", name, label,
                       h.count);
    out += fmt::format("{}_sum{{pool=\"{}\"}} {}\n", name, label, seconds(h.sum));
    out += fmt::format("{}_count{{pool=\"{}\"}} {}\n", name, label, h.count);
  }
}

} // namespace

std::string prometheus_label(const std::string& value) {
  std::string result;
  result.reserve(value.size());
  for (auto c : value) {
    switch (c) {
      case '\\':
        result += "\\\\";
        break;
      case '"':
        result += "\\\"";
        break;
      case '\n':
        result += "\\n";
        break;
      default:
        result += c;
    }
  }
  return result;
}

std::string prometheus_text(const std::vector<named_metrics>& pools) {
  static const family families[] = {
    {"pool_operations_submitted_total", "counter",
     "Submits taken in (accepted, parked or looked up).",
     [](auto& m) { return num(m.stats.submitted); }},
    {"pool_operations_completed_total", "counter",
     "Operations whose caller received a result.",
     [](auto& m) { return num(m.stats.completed); }},
    {"pool_operations_failed_total", "counter",
     "Operations whose caller received a final error.",
     [](auto& m) { return num(m.stats.failed); }},
    {"pool_operations_cancelled_total", "counter", "Operations cancelled by id.",
     [](auto& m) { return num(m.stats.cancelled); }},
    {"pool_operations_rejected_total", "counter",
     "Submits refused because the queue was at its capacity.",
     [](auto& m) { return num(m.stats.rejected); }},
    {"pool_operations_deduplicated_total", "counter",
     "Unique submits answered with an existing operation's id.",
     [](auto& m) { return num(m.stats.deduplicated); }},
    {"pool_attempts_retried_total", "counter",
     "Attempts that failed and were enqueued again.",
     [](auto& m) { return num(m.stats.retried); }},
    {"pool_attempts_snoozed_total", "counter",
     "Attempts whose job snoozed its operation (not counted as attempts).",
     [](auto& m) { return num(m.stats.snoozed); }},
    {"pool_attempts_timed_out_total", "counter",
     "Attempts that ran past the attempt timeout.",
     [](auto& m) { return num(m.stats.timed_out); }},
    {"pool_stale_replies_total", "counter",
     "Status replies dropped because their attempt was no longer awaited.",
     [](auto& m) { return num(m.stats.stale_replies); }},
    {"pool_worker_restarts_total", "counter",
     "Local workers respawned after dying or timing out.",
     [](auto& m) { return num(m.stats.worker_restarts); }},
    {"pool_queue_restarts_total", "counter",
     "Queue actors respawned over the same store.",
     [](auto& m) { return num(m.stats.queue_restarts); }},
    {"pool_operations_adopted_total", "counter",
     "Operations of other shepherds of a shared queue taken to run here.",
     [](auto& m) { return num(m.stats.adopted); }},
    {"pool_leases_lost_total", "counter",
     "Attempts whose lease another shepherd of a shared queue took back.",
     [](auto& m) { return num(m.stats.leases_lost); }},
    {"pool_workers_dropped_total", "counter",
     "Joined workers dropped for staying silent after they were woken.",
     [](auto& m) { return num(m.stats.workers_dropped); }},
    {"pool_slow_jobs_total", "counter",
     "Jobs on cooperative workers that ran past the slow-job threshold.",
     [](auto& m) { return num(m.stats.slow_jobs); }},
    {"pool_backlog_alarms_total", "counter", "Times the backlog alarm was raised.",
     [](auto& m) { return num(m.stats.alarms_raised); }},
    {"pool_configured_workers", "gauge",
     "Local workers the pool is configured with.",
     [](auto& m) { return num(m.stats.configured); }},
    {"pool_joined_workers", "gauge",
     "Workers that joined through the protocol (e.g. remote).",
     [](auto& m) { return num(m.stats.joined); }},
    {"pool_abandoned_workers", "gauge",
     "Replaced workers that have not terminated yet.",
     [](auto& m) { return num(m.stats.abandoned); }},
    {"pool_operations_available", "gauge",
     "Operations due now and waiting for a worker.",
     [](auto& m) { return num(m.stats.available); }},
    {"pool_operations_delayed", "gauge", "Operations not yet due.",
     [](auto& m) { return num(m.stats.delayed); }},
    {"pool_operations_parked", "gauge",
     "Submits waiting for room in a full queue or for a key lookup.",
     [](auto& m) { return num(m.stats.parked); }},
    {"pool_operations_held", "gauge",
     "Operations held by workers (running or later in a batch).",
     [](auto& m) { return num(m.stats.held); }},
    {"pool_oldest_due_age_seconds", "gauge",
     "How long the oldest due operation has waited for a worker.",
     [](auto& m) { return seconds(m.oldest_due_age); }},
    {"pool_backlog_alarm", "gauge", "1 while the backlog alarm is raised.",
     [](auto& m) { return m.stats.backlog_alarm ? 1.0 : 0.0; }},
    {"pool_paused", "gauge", "1 while the pool is paused (no attempt starts).",
     [](auto& m) { return m.stats.paused ? 1.0 : 0.0; }},
    {"pool_expected_operations", "gauge",
     "Operations the caller expects in all (0: not said).",
     [](auto& m) { return num(m.stats.expected_total); }},
    {"pool_dead_jobs", "gauge",
     "Operations in the dead set: failed for good, kept for a retry.",
     [](auto& m) { return num(m.stats.dead); }},
  };
  std::string out;
  for (auto& f : families) {
    add_family_header(out, f.name, f.type, f.help);
    for (auto& p : pools)
      out += fmt::format("{}{{pool=\"{}\"}} {}\n", f.name,
                         prometheus_label(p.pool), f.value(p.metrics));
  }
  add_family_header(out, "pool_workers", "gauge",
                    "Workers in the pool by phase.");
  for (auto& p : pools) {
    auto label = prometheus_label(p.pool);
    auto& s = p.metrics.stats;
    for (auto [phase, n] : {std::pair{"busy", s.busy},
                            std::pair{"waiting", s.waiting},
                            std::pair{"sleeping", s.sleeping}})
      out += fmt::format("pool_workers{{pool=\"{}\",phase=\"{}\"}} {}\n", label,
                         phase, n);
  }
  add_histogram(out, pools, "pool_queue_wait_seconds",
                "From an attempt's due time to its dispatch to a worker.",
                &pool_metrics::queue_wait);
  add_histogram(out, pools, "pool_processing_seconds",
                "From dispatch to the worker's status reply.",
                &pool_metrics::processing);
  return out;
}

} // namespace pool
