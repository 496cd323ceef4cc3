// Periodic operations on CAF's testing scheduler, with a wall clock that
// follows simulated time: ticks run the job, each tick once with a durable
// store (also after a restart within the tick), bad specs are refused by
// field, and a refused tick is logged.
#include <doctest/doctest.h>

#include <map>
#include <memory>

#include <date/date.h>

#include "deterministic.hpp"
#include "faulty_store.hpp"
#include "sqlite_files.hpp"

using namespace std::chrono;
using namespace std::chrono_literals;
using pool::test::deterministic;

namespace {

struct periodic_fixture : deterministic {
  pool::test::temp_dir tmp;
  std::string file = tmp.path + "/pool.db";
  /// Simulated time's start, on the wall clock: 2026-11-25 10:00:05 UTC.
  system_clock::time_point base =
      date::sys_days{date::year{2026} / 11 / 25} + 10h + 5s;
  caf::actor_clock::time_point start = sched.clock().now();
  /// What the job ran on, in order.
  std::shared_ptr<std::vector<int>> ran = std::make_shared<std::vector<int>>();

  std::function<system_clock::time_point()> wall() {
    return [this] {
      return base + duration_cast<system_clock::duration>(sched.clock().now() -
                                                          start);
    };
  }

  pool::periodic_spec spec(std::string name, std::string cron) {
    pool::periodic_spec x;
    x.name = std::move(name);
    x.cron = std::move(cron);
    x.clock = wall();
    x.log = pool::silent_log_hook();
    return x;
  }

  caf::actor start_pool(bool durable) {
    auto opts = pool::pool_options{}.workers(1).log(pool::silent_log_hook());
    if (durable)
      opts.durable(file).commit_interval(caf::timespan{0});
    auto log = ran;
    auto pool = pool::spawn_pool(
        sys, [log](int x) { log->push_back(x); return x; }, std::move(opts));
    REQUIRE_MESSAGE(pool, pool::describe(pool.error()));
    run();
    return *pool;
  }

  caf::actor every(const caf::actor& pool, pool::periodic_spec s, int input) {
    auto ticker = pool::spawn_periodic(sys, pool, std::move(s), input);
    REQUIRE_MESSAGE(ticker, pool::describe(ticker.error()));
    run();
    return *ticker;
  }

  void stop(caf::actor& x) {
    self->send_exit(x, caf::exit_reason::user_shutdown);
    run();
    x = nullptr;
  }
};

/// A durable store in memory that keeps finished operations' keys with
/// their finish time and answers `find_key` by its window, as SQLite and
/// PostgreSQL do: a tick's key is there however long ago it finished.
class key_store final : public pool::test::memory_backed_store {
public:
  caf::error push(pool::work_record x, time_point due,
                  time_point now) override {
    if (auto i = pending_.find(x.id.operation); i != pending_.end()) {
      keys_[i->second] = {x.id.operation, std::nullopt};
      pending_.erase(i);
    }
    return memory_backed_store::push(std::move(x), due, now);
  }
  bool durable() const noexcept override {
    return true;
  }
  caf::error set_key(uint64_t operation, std::string key) override {
    pending_[operation] = std::move(key);
    return caf::none;
  }
  std::optional<uint64_t> find_key(const std::string& key, time_point now,
                                   caf::timespan window) override {
    auto i = keys_.find(key);
    if (i == keys_.end())
      return std::nullopt;
    auto& [id, finished] = i->second;
    if (!finished || *finished >= now - window)
      return id;
    return std::nullopt;
  }
  caf::error finish(uint64_t operation, const caf::message&,
                    time_point now) override {
    for (auto& [key, entry] : keys_)
      if (entry.first == operation)
        entry.second = now;
    return caf::none;
  }
  uint64_t last_operation_id() override {
    return 1000; // (ids of a restarted pool come after the old ones)
  }

private:
  std::map<uint64_t, std::string> pending_;
  std::map<std::string, std::pair<uint64_t, std::optional<time_point>>> keys_;
};

} // namespace

TEST_CASE_FIXTURE(periodic_fixture,
                  "a tick's key counts however long ago its operation "
                  "finished, an enq_unique key only within unique_window" *
                      doctest::timeout(30)) {
  auto store = std::make_shared<key_store>();
  auto log = ran;
  auto pool = pool::spawn_pool(
      sys, [log](int x) { log->push_back(x); return x; },
      pool::pool_options{}.workers(1).commit_interval(caf::timespan{0}).log(
          pool::silent_log_hook()),
      store);
  REQUIRE(pool);
  run();
  auto ticker = every(*pool, spec("nightly", "*/10 * * * * *"), 3);
  advance(5s); // 10:00:10
  CHECK(ran->size() == 1);
  stop(ticker);
  // An hour later a scheduler whose clock lags (another process) fires the
  // same tick: it is not run again.
  advance(1h);
  base -= 1h + 1s; // its wall clock reads 10:00:09
  ticker = every(*pool, spec("nightly", "*/10 * * * * *"), 3);
  advance(1s);
  CHECK(ran->size() == 1);
  CHECK(stats_of(*pool).deduplicated == 1);
  stop(ticker);
  // The same key through enq_unique (unique_window 0) runs again.
  self->send(*pool, pool::enqueue_unique_atom_v, std::string{"cron:nightly:"} +
             std::to_string(duration_cast<seconds>(
                 (date::sys_days{date::year{2026} / 11 / 25} + 10h + 10s)
                     .time_since_epoch()).count()), 3);
  run();
  CHECK(ran->size() == 2);
  self->send_exit(*pool, caf::exit_reason::user_shutdown);
  run();
}

TEST_CASE_FIXTURE(periodic_fixture,
                  "each tick of the schedule enqueues the input once" *
                      doctest::timeout(30)) {
  auto pool = start_pool(false);
  auto ticker = every(pool, spec("report", "*/10 * * * * *"), 7);
  CHECK(ran->empty());
  advance(4s); // 10:00:09
  CHECK(ran->empty());
  advance(1s); // 10:00:10
  CHECK(*ran == std::vector<int>{7});
  advance(9s);
  CHECK(ran->size() == 1);
  advance(1s); // 10:00:20
  CHECK(ran->size() == 2);
  advance(30s); // one wake-up covers 10:00:30; the ticks after it follow
  CHECK(ran->size() >= 3);
  stop(ticker);
  auto before = ran->size();
  advance(60s);
  CHECK(ran->size() == before); // stopped: no more ticks
}

TEST_CASE_FIXTURE(periodic_fixture,
                  "two schedulers of one name over a durable store run each "
                  "tick once, also after the pool restarts within the tick" *
                      doctest::timeout(60)) {
  auto pool = start_pool(true);
  auto a = every(pool, spec("sync", "*/10 * * * * *"), 1);
  auto b = every(pool, spec("sync", "*/10 * * * * *"), 1);
  advance(5s); // 10:00:10: both fire
  CHECK(ran->size() == 1);
  advance(10s); // 10:00:20
  CHECK(ran->size() == 2);
  stop(a);
  stop(b);
  // The pool restarts over the same file while it is still 10:00:20 on the
  // wall clock (a scheduler whose clock lags, or a quick restart): the
  // tick of 10:00:20 does not run again, the next one does.
  stop(pool);
  advance(1s); // (the tick's operation finished a while ago)
  pool = start_pool(true);
  base -= 2s; // its wall clock reads 10:00:19
  auto c = every(pool, spec("sync", "*/10 * * * * *"), 1);
  advance(1s); // 10:00:20 again
  CHECK(ran->size() == 2);
  CHECK(stats_of(pool).deduplicated == 1); // the tick came, and was known
  advance(10s); // 10:00:30
  CHECK(ran->size() == 3);
  // Another name is another schedule.
  auto d = every(pool, spec("other", "*/10 * * * * *"), 2);
  advance(10s); // 10:00:40
  CHECK(ran->size() == 5);
  stop(c);
  stop(d);
}

TEST_CASE_FIXTURE(periodic_fixture,
                  "a bad schedule is refused naming the field" *
                      doctest::timeout(30)) {
  auto pool = start_pool(false);
  auto field_of = [&](pool::periodic_spec s) {
    auto x = pool::spawn_periodic(sys, pool, std::move(s), 1);
    REQUIRE(!x);
    CHECK(pool::is(x.error(), pool::pool_errc::invalid_option));
    return x.error().context().get_as<std::string>(0);
  };
  CHECK(field_of(spec("", "* * * * *")) == "name");
  CHECK(field_of(spec(std::string(201, 'n'), "* * * * *")) == "name");
  CHECK(field_of(spec("x", "* * * *")) == "cron");
  CHECK(field_of(spec("x", "0 0 32 * *")) == "cron");
  auto s = spec("x", "@daily");
  s.time_zone = "Europe/Atlantis";
  CHECK(field_of(s) == "time_zone");
  // A unique key over 1024 bytes is refused, naming the field.
  auto err = ask(pool, caf::make_message(pool::enqueue_once_atom_v,
                                         std::string(1025, 'k'), 1));
  CHECK(pool::is(err, pool::pool_errc::invalid_option));
  CHECK(pool::describe(err).find("key: must be at most 1024 bytes (got "
                                 "1025)") != std::string::npos);
  auto none = pool::spawn_periodic(sys, caf::actor{}, spec("x", "@daily"), 1);
  REQUIRE(!none);
  CHECK(none.error().context().get_as<std::string>(0) == "pool");
}

TEST_CASE_FIXTURE(periodic_fixture,
                  "a tick the pool refuses is logged, and the schedule goes on, "
                  "the scheduler stops with its pool" *
                      doctest::timeout(30)) {
  auto pool = start_pool(false);
  auto lines = std::make_shared<std::vector<std::string>>();
  auto s = spec("wrong", "*/10 * * * * *");
  s.log = [lines](pool::log_level, const std::string& who,
                  const std::string& text) {
    lines->push_back(who + ": " + text);
  };
  auto ticker =
      pool::spawn_periodic(sys, pool, std::move(s), std::string{"not an int"});
  REQUIRE(ticker);
  run();
  advance(5s);
  advance(10s);
  CHECK(ran->empty());
  REQUIRE(lines->size() == 2);
  CHECK((*lines)[0].find("periodic wrong") != std::string::npos);
  CHECK((*lines)[0].find("cron:wrong:") != std::string::npos);
  CHECK((*lines)[0].find("wrong_input_type") != std::string::npos);
  self->monitor(*ticker);
  stop(pool);
  bool down = false;
  self->receive([&](caf::down_msg& msg) { down = msg.source == *ticker; });
  CHECK(down);
}
