// A durable pool on the testing scheduler when things go wrong: a submit
// that cannot be made durable, a queue that dies in the middle of a group,
// inputs CAF cannot serialize, a file that is not a store, commits that
// fail; and retention in the background.
#include <doctest/doctest.h>

#include <map>
#include <memory>

#include "deterministic.hpp"
#include "pool/sqlite_store.hpp"
#include "durable_fixture.hpp"
#include "sqlite_files.hpp"

using namespace std::chrono_literals;
using namespace pool::test::durable;

TEST_CASE_FIXTURE(durable_fixture,
                  "a submit that cannot be made durable is refused, and the "
                  "pool keeps serving" *
                      doctest::timeout(60)) {
  auto store = pool::sqlite_store::open(
      sys, file, pool::sqlite_options{}.max_size(64 * 1024));
  REQUIRE(store);
  auto pool = pool::spawn_pool(sys, log.job(), options(),
                               std::shared_ptr<pool::work_store>{*store});
  REQUIRE(pool);
  run();
  frozen = "pool.worker";
  // Long unique keys (stored with each operation) fill 64 KiB quickly.
  auto padding = std::string(1000, 'x'); // (keys are at most 1024 bytes)
  size_t accepted = 0;
  caf::error refused;
  for (int i = 0; i < 256 && !refused; ++i) {
    auto answer =
        self->request(*pool, caf::infinite, pool::enqueue_unique_atom_v,
                      padding + std::to_string(i), i);
    run();
    answer.receive([&](uint64_t) { ++accepted; },
                   [&](caf::error& err) { refused = std::move(err); });
  }
  REQUIRE(refused);
  MESSAGE(pool::describe(refused));
  CHECK(pool::is(refused, pool::pool_errc::store_failed));
  CHECK(accepted > 0);
  auto st = stats_of(*pool);
  CHECK(st.rejected == 1);
  frozen.clear();
  run();
  st = stats_of(*pool);
  CHECK(st.completed == accepted); // everything acknowledged ran
}

namespace {

// A store that kills its queue actor in the middle of a group: after
// `crash_at` pushes it throws, before delegating, as a crash would.
class crashing_store final : public pool::work_store {
public:
  crashing_store(std::shared_ptr<pool::work_store> inner, int crash_at)
      : inner_(std::move(inner)), crash_at_(crash_at) {
    // nop
  }

  caf::error push(pool::work_record x, time_point due,
                  time_point now) override {
    if (++pushes_ == crash_at_)
      throw std::runtime_error("crash in the middle of a group");
    return inner_->push(std::move(x), due, now);
  }

  std::optional<pool::work_record> pop_due(time_point now) override {
    return inner_->pop_due(now);
  }

  std::optional<time_point> next_due(time_point now) override {
    return inner_->next_due(now);
  }

  size_t remove(uint64_t op) override {
    return inner_->remove(op);
  }

  size_t available(time_point now) override {
    return inner_->available(now);
  }

  size_t delayed(time_point now) override {
    return inner_->delayed(now);
  }

  bool durable() const noexcept override {
    return true;
  }

  caf::error commit() override {
    if (failing_commits > 0) {
      // As a busy or full disk would: the group stays open in the inner
      // store and the next commit may take it.
      --failing_commits;
      return caf::make_error(pool::pool_errc::store_failed,
                             std::string{"injected commit failure"});
    }
    return inner_->commit();
  }

  void discard() override {
    ++discards;
    inner_->discard();
  }

  std::vector<pool::attempt_id> lost_pushes() const override {
    return inner_->lost_pushes();
  }

  caf::error set_key(uint64_t op, std::string key) override {
    return inner_->set_key(op, std::move(key));
  }

  std::optional<uint64_t> find_key(const std::string& key, time_point now,
                                   caf::timespan window) override {
    return inner_->find_key(key, now, window);
  }

  caf::error note_failure(uint64_t op,
                          const pool::attempt_failure& x) override {
    return inner_->note_failure(op, x);
  }

  caf::error finish(uint64_t op, const caf::message& result,
                    time_point now) override {
    return inner_->finish(op, result, now);
  }

  caf::error finish(uint64_t op, const caf::error& failure,
                    time_point now) override {
    return inner_->finish(op, failure, now);
  }

  std::optional<pool::operation_record> lookup(uint64_t op) override {
    return inner_->lookup(op);
  }

  std::vector<pool::operation_record> unfinished() override {
    return inner_->unfinished();
  }

  uint64_t last_operation_id() override {
    return inner_->last_operation_id();
  }

  int discards = 0;

  /// The next this many commits fail.
  int failing_commits = 0;

private:
  std::shared_ptr<pool::work_store> inner_;
  int crash_at_;
  int pushes_ = 0;
};

/// A durable pool over a `crashing_store` that throws at push `crash_at`
/// (-1: never), on the fixture's file.
std::pair<std::shared_ptr<crashing_store>, caf::actor>
start_over_crashing_store(durable_fixture& t, int crash_at) {
  auto inner = pool::sqlite_store::open(t.sys, t.file);
  REQUIRE(inner);
  auto store = std::make_shared<crashing_store>(*inner, crash_at);
  auto pool = pool::spawn_pool(t.sys, t.log.job(), t.options(), store);
  REQUIRE(pool);
  t.run();
  return {store, *pool};
}

} // namespace

TEST_CASE_FIXTURE(durable_fixture,
                  "a queue killed in the middle of a group: nothing lost, "
                  "nothing twice, nothing half-written" *
                      doctest::timeout(60)) {
  auto [store, pool] = start_over_crashing_store(*this, 6);
  frozen = "pool.worker";
  for (int i = 0; i < 10; ++i)
    self->send(pool, pool::enqueue_atom_v, i);
  run();
  CHECK(replies() == 10); // every submit acknowledged, once
  auto st = stats_of(pool);
  CHECK(st.queue_restarts == 1);
  CHECK(store->discards == 2); // at the first start and after the crash
  {
    pool::test::connection other{file};
    CHECK(other.query("SELECT count(*) FROM operations") == 10);
  }
  frozen.clear();
  run();
  st = stats_of(pool);
  CHECK(st.completed == 10);
  for (int i = 0; i < 10; ++i)
    CHECK((*log.runs)[i] == 1);
}

TEST_CASE_FIXTURE(durable_fixture,
                  "a durable pool refuses inputs CAF cannot serialize" *
                      doctest::timeout(30)) {
  struct opaque {
    int x;
  };
  auto pool = pool::spawn_pool(
      sys, [](opaque v) { return v.x; }, options());
  REQUIRE(!pool);
  MESSAGE(pool::describe(pool.error()));
  CHECK(pool::is(pool.error(), pool::pool_errc::invalid_option));
  CHECK(pool::describe(pool.error()).find("durable") != std::string::npos);
}

TEST_CASE_FIXTURE(durable_fixture,
                  "a file that is not a store is refused at spawn" *
                      doctest::timeout(30)) {
  {
    pool::test::connection other{file};
    other.exec("CREATE TABLE mine(x INTEGER)");
  }
  auto pool = pool::spawn_pool(sys, log.job(), options());
  REQUIRE(!pool);
  MESSAGE(pool::describe(pool.error()));
  CHECK(pool::is(pool.error(), pool::pool_errc::store_incompatible));
}

TEST_CASE_FIXTURE(durable_fixture,
                  "a failed commit holds acknowledgements until a later "
                  "commit succeeds" *
                      doctest::timeout(30)) {
  auto [store, pool] = start_over_crashing_store(*this, -1);
  frozen = "pool.worker";
  store->failing_commits = 2;
  self->send(pool, pool::enqueue_atom_v, 1);
  run();
  CHECK(replies() == 0); // not on disk: not acknowledged
  advance(10ms);
  CHECK(replies() == 0); // the second try fails too
  advance(10ms);
  CHECK(replies() == 1); // the third commits
  frozen.clear();
  run();
  CHECK((*log.runs)[1] == 1);
}

TEST_CASE_FIXTURE(durable_fixture,
                  "commits failing again and again refuse the held submits" *
                      doctest::timeout(30)) {
  auto [store, pool] = start_over_crashing_store(*this, -1);
  store->failing_commits = 100;
  auto answer = self->request(pool, caf::infinite, pool::enqueue_atom_v, 1);
  run();
  for (int i = 0; i < 5; ++i)
    advance(10ms);
  REQUIRE(replies() == 1);
  answer.receive([](uint64_t) { FAIL("acknowledged without a commit"); },
                 [](caf::error& err) {
                   CHECK(pool::is(err, pool::pool_errc::store_failed));
                 });
  store->failing_commits = 0;
  CHECK(stats_of(pool).rejected == 1);
  // The store works again: new submits are taken.
  CHECK(enqueue(pool, 2) > 0);
}

TEST_CASE_FIXTURE(durable_fixture,
                  "with retention, the queue prunes finished operations older "
                  "than the age in the background, and keeps younger ones" *
                      doctest::timeout(30)) {
  auto pool = start(options().retention(1h));
  auto old_op = enqueue(pool, 1);
  auto rec = status(pool, old_op);
  REQUIRE(rec);
  CHECK(rec->state == pool::operation_state::done);
  advance(30min);
  auto young_op = enqueue(pool, 2);
  // Rounds every retention / 10 (6 min): by 67 min the old outcome (from
  // 0 min) is older than 1 h, the young one (from 30 min) is not.
  advance(37min);
  auto gone = status(pool, old_op);
  REQUIRE(!gone);
  CHECK(pool::is(gone.error(), pool::pool_errc::unknown_operation));
  rec = status(pool, young_op);
  REQUIRE(rec);
  CHECK(rec->state == pool::operation_state::done);
  CHECK(rec->result.get_as<int>(0) == 20);
}
