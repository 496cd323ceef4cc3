// The dead set over SQLite: operations that failed for good survive a
// reopen of the store and a restart of the pool, are listed again, and
// leave the file when retried or discarded.
#include <doctest/doctest.h>

#include <map>
#include <memory>

#include "asking.hpp"
#include "pool/jobs.hpp"
#include "pool/sqlite_store.hpp"
#include "sqlite_files.hpp"
#include "store_config.hpp"

using namespace std::chrono_literals;
using pool::job_state;

namespace {

using time_point = pool::sqlite_store::time_point;

pool::work_record entry(uint64_t id, int x) {
  return pool::work_record{pool::attempt_id{id, 1}, caf::make_message(x)};
}

caf::error failed_for_good(uint64_t id, std::vector<pool::attempt_failure> h) {
  return caf::make_error(pool::pool_errc::operation_failed, id, std::move(h));
}

} // namespace

TEST_CASE("a store lists its failed operations after a reopen, newest first, "
          "within age and count, and forgets those retried or discarded" *
          doctest::timeout(30)) {
  pool::test::store_config cfg;
  caf::actor_system sys{cfg};
  pool::test::temp_dir tmp;
  auto file = tmp.path + "/pool.db";
  auto t0 = sys.clock().now();
  {
    auto store = pool::sqlite_store::open(sys, file, {});
    REQUIRE(store);
    auto& s = **store;
    for (uint64_t id = 1; id <= 4; ++id) {
      REQUIRE(!s.push(entry(id, -static_cast<int>(id)), t0, t0));
      REQUIRE(s.pop_due(t0));
    }
    auto boom = caf::make_error(pool::pool_errc::job_failed, uint32_t{1},
                                std::string{"boom"});
    pool::attempt_failure first{1, 5ms, boom};
    pool::attempt_failure second{2, 2s, boom};
    for (uint64_t id = 1; id <= 3; ++id) {
      REQUIRE(!s.note_failure(id, first));
      REQUIRE(!s.note_failure(id, second));
      // Op 1 failed an hour before the others.
      auto at = id == 1 ? t0 : t0 + 1h + std::chrono::seconds(id);
      REQUIRE(!s.finish(id, failed_for_good(id, {first, second}), at));
    }
    // Cancelled (a failure, but not for good): never listed.
    REQUIRE(!s.finish(4, caf::make_error(pool::pool_errc::cancelled), t0));
    REQUIRE(!s.commit());
  }
  auto store = pool::sqlite_store::open(sys, file, {});
  REQUIRE(store);
  auto& s = **store;
  auto now = t0 + 1h + 10s;
  auto all = s.failed_operations(10, 24h, now);
  REQUIRE(all.size() == 3);
  CHECK(all[0].record.id == 3); // newest first
  CHECK(all[2].record.id == 1);
  CHECK(all[0].record.payload.get_as<int>(0) == -3);
  REQUIRE(all[0].record.history.size() == 2);
  CHECK(all[0].record.history[1].after_submit == 2s);
  // (Each open measures the wall clock's offset anew: a few microseconds.)
  CHECK(std::chrono::abs(all[0].ago - 7s) < 1s);
  CHECK(std::chrono::abs(all[2].ago - (1h + 10s)) < 1s);
  // Bounded by count and by age.
  CHECK(s.failed_operations(2, 24h, now).size() == 2);
  CHECK(s.failed_operations(10, 30min, now).size() == 2);
  // Forgotten (retried or discarded): gone after a reopen, history too.
  REQUIRE(!s.forget_failed(3));
  REQUIRE(!s.commit());
  *store = nullptr; // (one owner at a time)
  store = pool::sqlite_store::open(sys, file, {});
  REQUIRE(store);
  auto left = (*store)->failed_operations(10, 24h, now);
  REQUIRE(left.size() == 2);
  CHECK(left[0].record.id == 2);
  CHECK(!(*store)->lookup(3));
  CHECK((*store)->lookup(4)); // cancelled: neither listed nor forgotten
  pool::test::connection db{file};
  CHECK(db.query("SELECT count(*) FROM failures WHERE operation = 3") == 0);
}

namespace {

// Fails inputs below zero until the test heals them; counts runs.
struct healing_job {
  std::shared_ptr<bool> healed = std::make_shared<bool>(false);

  auto job() const {
    return [healed = healed](int x) -> int {
      if (x < 0 && !*healed)
        throw std::runtime_error("negative input " + std::to_string(x));
      return x;
    };
  }
};

struct durable_dead_fixture : pool::test::asking {
  pool::test::temp_dir tmp;
  std::string file = tmp.path + "/pool.db";
  healing_job log;

  caf::actor start() {
    auto pool = pool::spawn_pool(sys, log.job(),
                                 pool::pool_options{}
                                     .workers(1)
                                     .max_attempts(2)
                                     .backoff(1s, 1s)
                                     .durable(file)
                                     .commit_interval(caf::timespan{0})
                                     .log(pool::silent_log_hook()));
    REQUIRE_MESSAGE(pool, pool::describe(pool.error()));
    run();
    return *pool;
  }

  void stop(caf::actor& pool) {
    caf::anon_send_exit(pool, caf::exit_reason::kill);
    pool = nullptr;
    run();
    while (!self->mailbox().empty())
      self->receive([](pool::op_failed_atom, uint64_t, caf::error&) {},
                    [](pool::op_done_atom, uint64_t, caf::message&) {},
                    [](uint64_t) {}, [](caf::error&) {});
  }

  pool::job_page failed(const caf::actor& p) {
    pool::job_filter f;
    f.state = job_state::failed;
    return ask_for<pool::job_page>(p, caf::make_message(pool::list_jobs_v, f));
  }
};

} // namespace

TEST_CASE_FIXTURE(durable_dead_fixture,
                  "a durable pool lists its failed jobs again after a "
                  "restart, and a retried one stays gone" *
                      doctest::timeout(60)) {
  auto p = start();
  auto id = ask_for<uint64_t>(p, caf::make_message(pool::enqueue_atom_v, -7));
  auto other =
      ask_for<uint64_t>(p, caf::make_message(pool::enqueue_atom_v, -8));
  for (int i = 0; i < 5; ++i)
    advance(2s);
  REQUIRE(failed(p).jobs.size() == 2);
  stop(p);
  p = start();
  auto pg = failed(p);
  REQUIRE(pg.jobs.size() == 2);
  auto& job = pg.jobs.front();
  CHECK(job.id == id);
  CHECK(job.attempt == 2);
  CHECK(job.payload.find("-7") != std::string::npos);
  CHECK(job.last_error.find("negative input -7") != std::string::npos);
  REQUIRE(job.history.size() == 2);
  *log.healed = true;
  pool::job_filter f;
  f.id = id;
  auto acted =
      ask_for<pool::jobs_acted>(p, caf::make_message(pool::retry_jobs_v, f));
  REQUIRE(acted.ids.size() == 1);
  // (A durable store acknowledges later: the new id may be known now.)
  run();
  f.id = other;
  CHECK(ask_for<pool::jobs_acted>(p, caf::make_message(pool::discard_jobs_v, f))
            .ids == std::vector<uint64_t>{other});
  run();
  CHECK(failed(p).jobs.empty());
  CHECK(stats_of(p).completed == 1);
  // The store forgot the discarded one; the shepherd's note says so.
  CHECK(ask_for<pool::operation_record>(
          p, caf::make_message(pool::op_status_atom_v, other))
          .state
        == pool::operation_state::discarded);
  stop(p);
  p = start();
  CHECK(failed(p).jobs.empty());
  // (The note does not outlive the process.)
  CHECK(pool::is(ask(p, caf::make_message(pool::op_status_atom_v, other)),
                 pool::pool_errc::unknown_operation));
  pool::test::connection db{file};
  CHECK(db.query("SELECT count(*) FROM operations WHERE state = 3") == 0);
  stop(p);
}
