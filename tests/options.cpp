// Option validation: every invalid value is refused with the field's name.
#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "pool/all.hpp"

TEST_CASE("default options are valid" * doctest::timeout(10)) {
  pool::pool_options opts;
  CHECK(!opts.validate());
  CHECK(opts.workers() == 4);
  CHECK(opts.kind() == pool::worker_kind::cooperative);
}

TEST_CASE("zero workers is refused, naming the field" * doctest::timeout(10)) {
  auto err = pool::pool_options{}.workers(0).validate();
  REQUIRE(err);
  CHECK(pool::is(err, pool::pool_errc::invalid_option));
  CHECK(pool::describe(err) ==
        "pool.invalid_option: workers: must be at least 1");
}

TEST_CASE("an empty name is refused, naming the field" * doctest::timeout(10)) {
  auto err = pool::pool_options{}.name("").validate();
  REQUIRE(err);
  CHECK(pool::describe(err).find("name") != std::string::npos);
}

TEST_CASE("dedicated pools default to cores - 1 workers, at least 1" *
          doctest::timeout(10)) {
  auto opts = pool::pool_options{}.kind(pool::worker_kind::dedicated);
  CHECK(opts.workers() == pool::default_dedicated_workers());
  CHECK(opts.workers() >= 1);
  CHECK(opts.workers(3).workers() == 3);
}

TEST_CASE("spawning with invalid options fails with the validation error" *
          doctest::timeout(30)) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto pool = pool::spawn_pool(
      sys, [](int x) { return x; }, pool::pool_options{}.workers(0));
  REQUIRE(!pool);
  CHECK(pool::is(pool.error(), pool::pool_errc::invalid_option));
  CHECK(pool::describe(pool.error()).find("workers") != std::string::npos);
}

namespace {

std::string field_of(const pool::pool_options& opts) {
  auto err = opts.validate();
  REQUIRE(err);
  REQUIRE(pool::is(err, pool::pool_errc::invalid_option));
  return err.context().get_as<std::string>(0);
}

} // namespace

TEST_CASE("failure-handling options are validated, naming the field" *
          doctest::timeout(10)) {
  using namespace std::chrono_literals;
  using opts = pool::pool_options;
  CHECK(field_of(opts{}.max_attempts(0)) == "max_attempts");
  CHECK(field_of(opts{}.backoff(-1s, 1s)) == "backoff.initial");
  CHECK(field_of(opts{}.backoff(5s, 1s)) == "backoff.max"); // inverted
  CHECK(field_of(opts{}.backoff(1s, 5s, 0.5)) == "backoff.multiplier");
  CHECK(field_of(opts{}.jitter(-0.1)) == "jitter");
  CHECK(field_of(opts{}.jitter(1.5)) == "jitter");
  CHECK(field_of(opts{}.attempt_timeout(0s)) == "attempt_timeout");
  CHECK(field_of(opts{}.attempt_timeout(-1s)) == "attempt_timeout");
  CHECK(field_of(opts{}.restart_intensity(0, 1s)) ==
        "restart_intensity.max_restarts");
  CHECK(field_of(opts{}.restart_intensity(-3, 1s)) ==
        "restart_intensity.max_restarts");
  CHECK(field_of(opts{}.restart_intensity(3, 0s)) ==
        "restart_intensity.window");
  CHECK(field_of(opts{}.capacity(0)) == "capacity");
  CHECK(!opts{}.max_attempts(1).backoff(0s, 0s).validate());
  CHECK(field_of(opts{}.max_batch(0)) == "max_batch");
  CHECK(field_of(opts{}.max_batch(pool::max_batch_limit + 1)) == "max_batch");
  CHECK(field_of(opts{}.batch_time(0s)) == "batch_time");
  CHECK(!opts{}.max_batch(1).validate());
  CHECK(!opts{}.max_batch(pool::max_batch_limit).batch_time(1ms).validate());
}

TEST_CASE("monitoring and autoscaling options are validated, naming the field" *
          doctest::timeout(10)) {
  using namespace std::chrono_literals;
  using opts = pool::pool_options;
  CHECK(field_of(opts{}.backlog_alarm(0s)) == "backlog_alarm");
  CHECK(field_of(opts{}.backlog_alarm(-1s)) == "backlog_alarm");
  CHECK(field_of(opts{}.overload_warning(0, 1s)) ==
        "overload_warning.threshold");
  CHECK(field_of(opts{}.overload_warning(10, 0s)) ==
        "overload_warning.interval");
  CHECK(field_of(opts{}.autoscale(5, 2, 1s, 1s)) == "autoscale.min");
  CHECK(field_of(opts{}.autoscale(0, 2, 1s, 1s)) == "autoscale.min");
  CHECK(field_of(opts{}.autoscale(1, 2, 0s, 1s)) == "autoscale.grow_after");
  CHECK(field_of(opts{}.autoscale(1, 2, 1s, -1s)) == "autoscale.shrink_after");
  CHECK(field_of(opts{}.workers(8).autoscale(1, 4, 1s, 1s)) == "workers");
  // Without an explicit size, an autoscaled pool starts at its minimum.
  auto scaled = opts{}.autoscale(2, 6, 1s, 1s);
  CHECK(!scaled.validate());
  CHECK(scaled.workers() == 2);
  CHECK(!opts{}.backlog_alarm(1ms).overload_warning(1, 1ms).validate());
}

TEST_CASE("durations in messages use the largest exact unit" *
          doctest::timeout(10)) {
  using namespace std::chrono_literals;
  CHECK(pool::duration_text(30ms) == "30ms");
  CHECK(pool::duration_text(2s) == "2s");
  CHECK(pool::duration_text(5min) == "5min");
  CHECK(pool::duration_text(1500us) == "1500us");
  CHECK(pool::duration_text(-3ns) == "-3ns");
  CHECK(pool::duration_text(0s) == "0ns");
}

TEST_CASE("retention is validated, naming the field" * doctest::timeout(10)) {
  using namespace std::chrono_literals;
  using opts = pool::pool_options;
  CHECK(field_of(opts{}.retention(0s)) == "retention");
  CHECK(field_of(opts{}.retention(-1s)) == "retention");
  // A key must outlive its unique window.
  CHECK(field_of(opts{}.unique_window(1h).retention(30min)) == "retention");
  CHECK(!opts{}.unique_window(1h).retention(1h).validate());
  CHECK(!opts{}.retention(24h).validate());
  CHECK(!opts{}.retention());
  CHECK(opts{}.retention(24h).retention() == caf::timespan{24h});
}

TEST_CASE("job_options: default options are valid and mean the pool's" *
          doctest::timeout(10)) {
  pool::job_options opts;
  CHECK(!opts.validate());
  CHECK(opts.max_attempts() == 0);
  CHECK(opts.unique_key().empty());
}

TEST_CASE("pg_options: default options are valid" * doctest::timeout(10)) {
  CHECK(!pool::pg_options{}.validate());
}

TEST_CASE("sqlite_options: default options are valid" * doctest::timeout(10)) {
  CHECK(!pool::sqlite_options{}.validate());
}

TEST_CASE("durations for humans: three digits in the unit that fits" *
          doctest::timeout(10)) {
  using namespace std::chrono;
  CHECK_EQ(pool::short_duration(nanoseconds{850}), "850ns");
  CHECK_EQ(pool::short_duration(microseconds{850}), "850us");
  CHECK_EQ(pool::short_duration(microseconds{35'120}), "35.1ms");
  CHECK_EQ(pool::short_duration(milliseconds{1200}), "1.2s");
  CHECK_EQ(pool::short_duration(seconds{90}), "90s");
  CHECK_EQ(pool::short_duration(seconds{150}), "2.5min");
  CHECK_EQ(pool::short_duration(hours{3}), "3h");
}
