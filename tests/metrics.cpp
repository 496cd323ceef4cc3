// The exporters' plain units: histogram snapshots and windows, the
// Prometheus text, the sample history, the event log and the JSON of one
// pool. No actor system.
#include <doctest/doctest.h>

#include <chrono>

#include <nlohmann/json.hpp>

#include "pool/errors.hpp"
#include "pool/metrics_history.hpp"
#include "pool/prometheus.hpp"

using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

pool::histogram_data histogram_of(std::initializer_list<caf::timespan> xs) {
  pool::log_histogram h;
  for (auto x : xs)
    h.record(x);
  return pool::export_histogram(h);
}

caf::timestamp at(int seconds) {
  return caf::timestamp{std::chrono::seconds(1'700'000'000 + seconds)};
}

pool::pool_metrics with_done(uint64_t completed) {
  pool::pool_metrics m;
  m.stats.completed = completed;
  m.stats.workers = 4;
  m.stats.busy = 3;
  return m;
}

} // namespace

TEST_CASE("a histogram snapshot keeps count, sum, max and trimmed buckets" *
          doctest::timeout(10)) {
  auto h = histogram_of({1us, 2us, 3ms});
  CHECK_EQ(h.count, 3u);
  CHECK_EQ(h.sum, 1us + 2us + 3ms);
  CHECK_EQ(h.max, 3ms);
  CHECK_EQ(h.buckets.size(),
           pool::log_histogram::bucket_of(3'000'000) + 1); // trimmed
  CHECK(pool::export_histogram(pool::log_histogram{}).buckets.empty());
}

TEST_CASE("counts at powers of two are exact" * doctest::timeout(10)) {
  // 1023 ns lies below the 1024 ns bound; 1024 ns above it.
  auto h = histogram_of({1023ns, 1024ns, 5us, 2ms});
  CHECK_EQ(pool::count_at_most(h, 1023), 1u);
  CHECK_EQ(pool::count_at_most(h, (uint64_t{1} << 12) - 1), 2u);
  CHECK_EQ(pool::count_at_most(h, (uint64_t{1} << 22) - 1), 4u);
  CHECK_EQ(pool::count_at_most(h, uint64_t{1} << 40), 4u);
  CHECK_EQ(pool::count_at_most(pool::histogram_data{}, 100), 0u);
}

TEST_CASE("quantiles over a window see only the values in it" *
          doctest::timeout(10)) {
  pool::log_histogram h;
  for (int i = 0; i < 1000; ++i)
    h.record(10ms); // before the window
  auto older = pool::export_histogram(h);
  for (int i = 0; i < 100; ++i)
    h.record(100us); // in the window
  auto newer = pool::export_histogram(h);
  auto p99 = pool::window_quantile(newer, older, 0.99);
  CHECK_GE(p99, 100us);
  CHECK_LE(p99, 113us); // the bucket's bound: at most 12.5 % above
  // The whole history is dominated by the older values.
  CHECK_GE(pool::window_quantile(newer, pool::histogram_data{}, 0.5), 10ms);
  // Nothing recorded in between.
  CHECK_EQ(pool::window_quantile(newer, newer, 0.5), 0ns);
  // A histogram that restarted (fewer values than before) reads from zero.
  auto restarted = histogram_of({1ms});
  CHECK_GE(pool::window_quantile(restarted, newer, 0.5), 1ms);
}

TEST_CASE("the Prometheus text has typed families, labels and buckets" *
          doctest::timeout(10)) {
  pool::pool_metrics m;
  m.stats.completed = 7;
  m.stats.busy = 2;
  m.stats.backlog_alarm = true;
  m.stats.paused = true;
  m.stats.dead = 3;
  m.processing = histogram_of({500ns, 3us, 2ms});
  m.processing.count = 3;
  auto text = pool::prometheus_text({{"a\"b\\c\nd", m}});
  CHECK_NE(text.find("# TYPE pool_operations_completed_total counter\n"),
           std::string::npos);
  CHECK_NE(text.find("pool_operations_completed_total{pool=\"a\\\"b\\\\c\\nd\"} 7\n"),
           std::string::npos);
  CHECK_NE(text.find("pool_backlog_alarm{pool=\"a\\\"b\\\\c\\nd\"} 1\n"),
           std::string::npos);
  CHECK_NE(text.find("pool_paused{pool=\"a\\\"b\\\\c\\nd\"} 1\n"),
           std::string::npos);
  CHECK_NE(text.find("# TYPE pool_dead_jobs gauge\n"), std::string::npos);
  CHECK_NE(text.find("pool_dead_jobs{pool=\"a\\\"b\\\\c\\nd\"} 3\n"),
           std::string::npos);
  CHECK_NE(text.find("pool_workers{pool=\"a\\\"b\\\\c\\nd\",phase=\"busy\"} 2\n"),
           std::string::npos);
  CHECK_NE(text.find("# TYPE pool_processing_seconds histogram\n"),
           std::string::npos);
  // 1.024 µs holds the 500 ns value; 4.096 µs both small ones; +Inf all.
  CHECK_NE(text.find("pool_processing_seconds_bucket{pool=\"a\\\"b\\\\c\\nd\","
                     "le=\"1.024e-06\"} 1\n"),
           std::string::npos);
  CHECK_NE(text.find("pool_processing_seconds_bucket{pool=\"a\\\"b\\\\c\\nd\","
                     "le=\"4.096e-06\"} 2\n"),
           std::string::npos);
  CHECK_NE(text.find("pool_processing_seconds_bucket{pool=\"a\\\"b\\\\c\\nd\","
                     "le=\"+Inf\"} 3\n"),
           std::string::npos);
  CHECK_NE(text.find("pool_processing_seconds_count{pool=\"a\\\"b\\\\c\\nd\"} 3\n"),
           std::string::npos);
  // No pools: the families are still declared, with no samples.
  auto empty = pool::prometheus_text({});
  CHECK_NE(empty.find("# TYPE pool_workers gauge"), std::string::npos);
  CHECK_EQ(empty.find("{pool="), std::string::npos);
}

TEST_CASE("the history is bounded and finds the sample a window back" *
          doctest::timeout(10)) {
  pool::metrics_history h{3};
  for (int i = 0; i < 5; ++i)
    h.add(at(i), with_done(static_cast<uint64_t>(10 * i)));
  REQUIRE_EQ(h.samples().size(), 3u);
  CHECK_EQ(h.samples().front().metrics.stats.completed, 20u);
  CHECK_EQ(h.latest().metrics.stats.completed, 40u);
  CHECK_EQ(h.before(1s).metrics.stats.completed, 30u);
  CHECK_EQ(h.before(60s).metrics.stats.completed, 20u); // the oldest kept
}

TEST_CASE("the event log keeps attempt errors until the final failure" *
          doctest::timeout(10)) {
  pool::event_log log{2, 2};
  auto retried = [](uint64_t op, const char* what) {
    pool::pool_event ev;
    ev.kind = pool::event_kind::retried;
    ev.operation = op;
    ev.error = caf::make_error(pool::pool_errc::job_failed, std::string{what});
    return ev;
  };
  auto failed = [](uint64_t op) {
    pool::pool_event ev;
    ev.kind = pool::event_kind::failed;
    ev.operation = op;
    ev.error = caf::make_error(pool::pool_errc::job_failed,
                               std::string{"final"});
    return ev;
  };
  log.note(retried(1, "first"), at(0));
  log.note(retried(1, "second"), at(1));
  log.note(failed(1), at(2));
  REQUIRE_EQ(log.failures().size(), 1u);
  auto& f = log.failures().front();
  CHECK_EQ(f.operation, 1u);
  CHECK_NE(f.error.find("final"), std::string::npos);
  REQUIRE_EQ(f.attempts.size(), 2u);
  CHECK_NE(f.attempts[0].find("first"), std::string::npos);
  CHECK_NE(f.attempts[1].find("second"), std::string::npos);
  // At most 2 operations tracked: the oldest is forgotten and counted.
  log.note(retried(2, "x"), at(3));
  log.note(retried(3, "y"), at(4));
  log.note(retried(4, "z"), at(5));
  CHECK_EQ(log.forgotten(), 1u);
  log.note(failed(2), at(6));
  CHECK(log.failures().front().attempts.empty()); // forgotten
  log.note(failed(4), at(7));
  CHECK_EQ(log.failures().front().attempts.size(), 1u);
  CHECK_EQ(log.failures().size(), 2u); // keeps the last 2
  // Health events, newest first, bounded too.
  for (auto kind : {pool::event_kind::worker_restarted,
                    pool::event_kind::alarm_raised,
                    pool::event_kind::resized}) {
    pool::pool_event ev;
    ev.kind = kind;
    ev.count = 5;
    log.note(ev, at(8));
  }
  REQUIRE_EQ(log.health_events().size(), 2u);
  CHECK_EQ(log.health_events().front().kind, "resized");
}

TEST_CASE("the JSON of a pool has figures, windows, series and failures" *
          doctest::timeout(10)) {
  pool::metrics_history h{10};
  pool::event_log events;
  CHECK_EQ(json::parse(pool::pool_json("p", h, events, 60s))["sampled"],
           false);
  pool::log_histogram wait;
  for (int i = 0; i < 4; ++i) {
    auto m = with_done(static_cast<uint64_t>(100 * i));
    wait.record(std::chrono::milliseconds(i + 1));
    m.queue_wait = pool::export_histogram(wait);
    m.oldest_due_age = 2s;
    m.restarts_in_window = 1;
    m.max_restarts = 10;
    m.restart_window = 10s;
    h.add(at(2 * i), m);
  }
  pool::pool_event ev;
  ev.kind = pool::event_kind::failed;
  ev.operation = 9;
  ev.error = caf::make_error(pool::pool_errc::job_failed, std::string{"<b>"});
  events.note(ev, at(7));
  auto j = json::parse(pool::pool_json("p", h, events, 4s));
  CHECK_EQ(j["name"], "p");
  CHECK_EQ(j["stats"]["completed"], 300);
  CHECK_EQ(j["utilization"], doctest::Approx(0.75));
  CHECK_EQ(j["oldest_due_age"], doctest::Approx(2.0));
  CHECK_EQ(j["restarts"]["in_window"], 1);
  CHECK_EQ(j["restarts"]["max"], 10);
  // The last 4 s: from the sample at 2 s to the one at 6 s.
  CHECK_EQ(j["window"]["seconds"], doctest::Approx(4.0));
  CHECK_EQ(j["window"]["throughput"], doctest::Approx(50.0));
  CHECK_EQ(j["window"]["wait"]["count"], 2);
  CHECK_GE(j["window"]["wait"]["p99"].get<double>(), 0.004);
  REQUIRE_EQ(j["series"].size(), 3u);
  CHECK_EQ(j["series"][2]["throughput"], doctest::Approx(50.0));
  CHECK_EQ(j["series"][2]["busy"], 3);
  REQUIRE_EQ(j["failures"].size(), 1u);
  CHECK_EQ(j["failures"][0]["operation"], 9);
  // Texts stay texts: markup is the page's business (textContent).
  CHECK_NE(j["failures"][0]["error"].get<std::string>().find("<b>"),
           std::string::npos);
}

TEST_CASE("empty snapshots: no counts, zero quantiles, and a Prometheus "
          "text with the families but no samples" *
          doctest::timeout(10)) {
  pool::histogram_data none;
  CHECK(pool::count_at_most(none, 1'000'000) == 0);
  CHECK(pool::window_quantile(none, none, 0.99) == caf::timespan{0});
  CHECK(pool::export_histogram(pool::log_histogram{}).buckets.empty());
  auto text = pool::prometheus_text({});
  CHECK(text.find("# TYPE pool_operations_completed_total counter") !=
        std::string::npos);
  CHECK(text.find("{pool=") == std::string::npos);
  CHECK(pool::prometheus_label("").empty());
}
