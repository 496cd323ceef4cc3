// Pool options from CAF's configuration: command line and ini file.
#include <doctest/doctest.h>

#include <sstream>

#include <caf/all.hpp>

#include "pool/all.hpp"

using namespace std::chrono_literals;

namespace {

struct config : caf::actor_system_config {
  config() {
    pool::declare_options(custom_options_);
  }
};

caf::expected<pool::pool_options> parse(std::vector<std::string> args,
                                        const std::string& ini = "") {
  config cfg;
  std::istringstream in{ini};
  if (auto err = cfg.parse(std::move(args), in))
    return err;
  return pool::options_from(cfg);
}

} // namespace

TEST_CASE("options come from the command line" * doctest::timeout(10)) {
  auto opts = parse({"--pool.workers=8", "--pool.max-attempts=3",
                     "--pool.attempt-timeout=2s", "--pool.dedicated",
                     "--pool.jitter=0.5", "--pool.seed=7"});
  REQUIRE(opts);
  CHECK(opts->workers() == 8);
  CHECK(opts->max_attempts() == 3);
  CHECK(opts->attempt_timeout() == caf::timespan{2s});
  CHECK(opts->kind() == pool::worker_kind::dedicated);
  CHECK(opts->jitter() == 0.5);
  CHECK(opts->seed() == uint64_t{7});
}

TEST_CASE("options come from caf-application.ini" * doctest::timeout(10)) {
  auto opts = parse({}, "[pool]\nworkers=3\nbackoff-initial=250ms\n"
                        "max-restarts=5\nrestart-window=1min\n");
  REQUIRE(opts);
  CHECK(opts->workers() == 3);
  CHECK(opts->backoff_initial() == caf::timespan{250ms});
  CHECK(opts->max_restarts() == 5);
  CHECK(opts->restart_window() == caf::timespan{60s});
}

TEST_CASE("monitoring, bounds and autoscaling come from the configuration" *
          doctest::timeout(10)) {
  auto opts =
      parse({"--pool.capacity=100", "--pool.wait-when-full=10",
             "--pool.overload-threshold=50", "--pool.overload-interval=5s",
             "--pool.backlog-alarm=2s", "--pool.autoscale-min=2",
             "--pool.autoscale-max=8", "--pool.autoscale-shrink-after=30s",
             "--pool.name=orders"});
  REQUIRE(opts);
  CHECK(opts->capacity() == size_t{100});
  CHECK(opts->max_parked() == 10);
  CHECK(opts->overload_threshold() == size_t{50});
  CHECK(opts->overload_interval() == caf::timespan{5s});
  CHECK(opts->backlog_alarm() == caf::timespan{2s});
  REQUIRE(opts->autoscale());
  CHECK(opts->autoscale()->min == 2);
  CHECK(opts->autoscale()->max == 8);
  CHECK(opts->autoscale()->grow_after == caf::timespan{10s});
  CHECK(opts->autoscale()->shrink_after == caf::timespan{30s});
  CHECK(opts->workers() == 2);
  CHECK(opts->name() == "orders");
}

TEST_CASE("the dead set's bounds come from the configuration" *
          doctest::timeout(10)) {
  auto opts = parse({"--pool.dead-set-size=50", "--pool.dead-set-age=2h"});
  REQUIRE(opts);
  CHECK(opts->dead_set().max_jobs == 50);
  CHECK(opts->dead_set().max_age == caf::timespan{2h});
  auto off = parse({}, "[pool]\ndead-set-size=0\n");
  REQUIRE(off);
  CHECK(off->dead_set().max_jobs == 0);
  CHECK(off->dead_set().max_age == caf::timespan{std::chrono::hours(168)});
  auto bad = parse({"--pool.dead-set-size=-1"});
  REQUIRE(!bad);
  CHECK(pool::describe(bad.error()).find("dead_set.max_jobs") !=
        std::string::npos);
}

TEST_CASE("nothing configured gives the defaults" * doctest::timeout(10)) {
  auto opts = parse({});
  REQUIRE(opts);
  CHECK(opts->workers() == 4);
  CHECK(opts->max_attempts() == 1);
  CHECK(!opts->attempt_timeout());
}

TEST_CASE("bad configured values are refused, naming the field" *
          doctest::timeout(10)) {
  auto field = [](std::vector<std::string> args) {
    auto opts = parse(std::move(args));
    REQUIRE(!opts);
    return pool::describe(opts.error());
  };
  CHECK(field({"--pool.workers=-1"}).find("workers") != std::string::npos);
  CHECK(field({"--pool.max-attempts=0"}).find("max_attempts") !=
        std::string::npos);
  CHECK(field({"--pool.attempt-timeout=0s"}).find("attempt_timeout") !=
        std::string::npos);
  CHECK(field({"--pool.backoff-initial=5s", "--pool.backoff-max=1s"})
            .find("backoff.max") != std::string::npos);
  CHECK(field({"--pool.capacity=0"}).find("capacity") != std::string::npos);
  CHECK(field({"--pool.capacity=-5"}).find("capacity") != std::string::npos);
  CHECK(field({"--pool.backlog-alarm=0s"}).find("backlog_alarm") !=
        std::string::npos);
  CHECK(field({"--pool.autoscale-min=4", "--pool.autoscale-max=2"})
            .find("autoscale.min") != std::string::npos);
  CHECK(field({"--pool.autoscale-min=2"}).find("autoscale") !=
        std::string::npos);
  CHECK(field({"--pool.overload-threshold=-1"}).find("overload_warning") !=
        std::string::npos);
  CHECK(field({"--pool.max-batch=0"}).find("max_batch") != std::string::npos);
  CHECK(field({"--pool.max-batch=100000"}).find("max_batch") !=
        std::string::npos);
  CHECK(field({"--pool.batch-time=0s"}).find("batch_time") !=
        std::string::npos);
}

TEST_CASE("batching comes from the configuration" * doctest::timeout(10)) {
  auto opts = parse({"--pool.max-batch=4", "--pool.batch-time=2ms"});
  REQUIRE(opts);
  CHECK(opts->max_batch() == 4);
  CHECK(opts->batch_time() == caf::timespan{2ms});
  auto defaults = parse({});
  REQUIRE(defaults);
  CHECK(defaults->max_batch() == pool::pool_options{}.max_batch());
}

TEST_CASE("lookahead and the short cuts come from the configuration, and "
          "the removed hand-ahead is refused by name" *
          doctest::timeout(10)) {
  auto defaults = parse({});
  REQUIRE(defaults);
  CHECK(defaults->lookahead());
  CHECK(defaults->short_cuts());
  auto opts = parse({}, "[pool]\nlookahead=false\nshort-cuts=false\n");
  REQUIRE(opts);
  CHECK(!opts->lookahead());
  CHECK(!opts->short_cuts());
  auto old = parse({}, "[pool]\nhand-ahead=false\n");
  REQUIRE(!old);
  CHECK(pool::describe(old.error()).find("hand-ahead") != std::string::npos);
  CHECK(pool::describe(old.error()).find("lookahead") != std::string::npos);
}

TEST_CASE("pool::configure skips the scheduler's moderate polling unless the "
          "application chose it" *
          doctest::timeout(10)) {
  constexpr auto key = "work-stealing.moderate-poll-attempts";
  caf::actor_system_config plain;
  pool::configure(plain);
  CHECK(caf::get_or(plain, key, size_t{500}) == 0);
  caf::actor_system_config chosen;
  chosen.set(key, size_t{200});
  pool::configure(chosen);
  CHECK(caf::get_or(chosen, key, size_t{500}) == 200);
  // The command line still wins.
  caf::actor_system_config cli;
  pool::configure(cli);
  std::vector<std::string> args{"--work-stealing.moderate-poll-attempts=7"};
  REQUIRE(!cli.parse(std::move(args)));
  CHECK(caf::get_or(cli, key, size_t{500}) == 7);
}

TEST_CASE("a value of the wrong type is refused with a sentence naming the "
          "option and what to write" *
          doctest::timeout(10)) {
  auto refused = [](std::vector<std::string> args,
                    const std::string& ini = "") {
    auto opts = parse(std::move(args), ini);
    REQUIRE(!opts);
    CHECK(pool::is(opts.error(), pool::pool_errc::invalid_option));
    return pool::describe(opts.error());
  };
  // CAF alone refuses these before the application runs, in its parser's
  // words (parser_error(unexpected_character, ...)).
  CHECK(refused({"--pool.workers=abc"}) ==
        "pool.invalid_option: pool.workers: \"abc\" is not a whole number: "
        "write e.g. --pool.workers=8 on the command line, or workers=8 under "
        "[pool] in caf-application.ini");
  CHECK(refused({"--pool.attempt-timeout=5"})
            .find("pool.attempt-timeout: \"5\" is not a duration with a unit "
                  "(ns, us, ms, s, min or h): write e.g. "
                  "--pool.attempt-timeout=30s") != std::string::npos);
  CHECK(refused({"--pool.jitter=x"}).find("\"x\" is not a number") !=
        std::string::npos);
  // CAF takes these from the file and the pool used to skip them silently.
  CHECK(refused({}, "[pool]\nworkers=\"8\"\n")
            .find("pool.workers: \"8\" is not a whole number") !=
        std::string::npos);
  CHECK(refused({}, "[pool]\ndedicated=5\n")
            .find("5 is neither true nor false: write e.g. --pool.dedicated "
                  "on the command line, or dedicated=true") !=
        std::string::npos);
  CHECK(refused({}, "[pool]\nname=8\n").find("name=\"orders\" under [pool]") !=
        std::string::npos);
}

TEST_CASE("a real number may be written as a whole one" *
          doctest::timeout(10)) {
  auto opts = parse({}, "[pool]\njitter=0\nbackoff-multiplier=3\n");
  REQUIRE(opts);
  CHECK(opts->jitter() == 0.0);
  CHECK(opts->backoff_multiplier() == 3.0);
}

TEST_CASE("flow control comes from the configuration: a start rate, limits "
          "for every concurrency key, aging" *
          doctest::timeout(10)) {
  auto opts = parse({"--pool.rate-limit=100", "--pool.rate-period=500ms",
                     "--pool.key-concurrency=2", "--pool.key-rate=5",
                     "--pool.priority-aging=10s"});
  REQUIRE(opts);
  REQUIRE(opts->rate_limit());
  CHECK(opts->rate_limit()->starts == 100);
  CHECK(opts->rate_limit()->per == caf::timespan{500ms});
  auto limit = opts->key_flow().limit_of("any-tenant");
  REQUIRE(limit != nullptr);
  CHECK(limit->concurrency == std::optional<uint32_t>{2});
  REQUIRE(limit->rate);
  CHECK(limit->rate->starts == 5);
  CHECK(limit->rate->per == caf::timespan{500ms});
  CHECK(opts->key_flow().priority_aging() == caf::timespan{10s});
  // The period defaults to a second; nothing configured, no limits.
  auto per_second = parse({"--pool.key-rate=3"});
  REQUIRE(per_second);
  CHECK(per_second->key_flow().limit_of("k")->rate->per == caf::timespan{1s});
  CHECK(!per_second->key_flow().limit_of("k")->concurrency);
  CHECK(!per_second->rate_limit());
  auto plain = parse({});
  REQUIRE(plain);
  CHECK(!plain->key_flow().limited());
  // Bad values are refused naming the field.
  auto text = [](caf::expected<pool::pool_options> x) {
    REQUIRE(!x);
    return caf::to_string(x.error());
  };
  CHECK(text(parse({"--pool.key-concurrency=0"}))
            .find("key_limit[every key].concurrency") != std::string::npos);
  CHECK(text(parse({"--pool.rate-limit=0"})).find("rate_limit")
        != std::string::npos);
  CHECK(text(parse({"--pool.key-rate=2", "--pool.rate-period=0s"}))
            .find("key_limit[every key].rate") != std::string::npos);
  CHECK(text(parse({"--pool.priority-aging=0s"})).find("priority_aging")
        != std::string::npos);
}
