// A durable pool on the testing scheduler: acknowledgement after the
// commit, grouped commits, restart over the same file (at-least-once,
// delayed due times, attempts and history kept), outcomes by id, unique
// operations, and a queue that dies in the middle of a group.
#include <doctest/doctest.h>

#include <map>
#include <memory>

#include "deterministic.hpp"
#include "pool/sqlite_store.hpp"
#include "sqlite_files.hpp"

using namespace std::chrono_literals;
using pool::test::deterministic;

namespace {

/// Counts how often each input ran; fails inputs below 0.
struct job_log {
  std::shared_ptr<std::map<int, int>> runs =
      std::make_shared<std::map<int, int>>();

  auto job() const {
    return [runs = runs](int x) -> int {
      ++(*runs)[x];
      if (x < 0)
        throw std::runtime_error("negative input");
      return x * 10;
    };
  }
};

struct durable_fixture : deterministic {
  pool::test::temp_dir tmp;
  std::string file = tmp.path + "/pool.db";
  job_log log;

  /// Commits as soon as the queue's mailbox is drained: simulated time only
  /// moves when a test says so.
  pool::pool_options options(size_t workers = 1) {
    return pool::pool_options{}
        .workers(workers)
        .durable(file)
        .commit_interval(caf::timespan{0})
        .log(pool::silent_log_hook());
  }

  caf::actor start(pool::pool_options opts) {
    auto pool = pool::spawn_pool(sys, log.job(), std::move(opts));
    REQUIRE_MESSAGE(pool, pool::describe(pool.error()));
    run();
    return *pool;
  }

  /// Kills `pool` as a crash would (nothing is drained or recorded).
  void crash(caf::actor& pool) {
    // A crash ends the process: frozen workers holding work must not run it
    // once the pool is gone, so they die first (an urgent exit message is
    // handled before anything else in their mailboxes).
    if (!frozen.empty())
      for (auto job : sched.jobs)
        if (auto actor = dynamic_cast<caf::scheduled_actor*>(job);
            actor != nullptr && frozen == actor->name())
          caf::anon_send<caf::message_priority::high>(
              caf::actor_cast<caf::actor>(actor->ctrl()),
              caf::exit_msg{caf::actor_addr{}, caf::exit_reason::kill});
    caf::anon_send_exit(pool, caf::exit_reason::kill);
    pool = nullptr;
    frozen.clear();
    run();
    drop_outcomes(); // notifications and replies from the dead pool
  }

  uint64_t enqueue(const caf::actor& pool, int x) {
    uint64_t id = 0;
    auto answer = self->request(pool, caf::infinite, pool::enqueue_atom_v, x);
    run();
    answer.receive([&](uint64_t op) { id = op; },
                   [](caf::error& err) { FAIL(pool::describe(err)); });
    return id;
  }

  caf::expected<uint64_t> enqueue_unique(const caf::actor& pool,
                                         const std::string& key, int x) {
    caf::expected<uint64_t> result{uint64_t{0}};
    auto answer =
        self->request(pool, caf::infinite, pool::enqueue_unique_atom_v, key, x);
    run();
    answer.receive([&](uint64_t op) { result = op; },
                   [&](caf::error& err) { result = std::move(err); });
    return result;
  }

  caf::expected<pool::operation_record> status(const caf::actor& pool,
                                               uint64_t id) {
    caf::expected<pool::operation_record> result{pool::operation_record{}};
    auto answer =
        self->request(pool, caf::infinite, pool::op_status_atom_v, id);
    run();
    answer.receive([&](pool::operation_record& x) { result = std::move(x); },
                   [&](caf::error& err) { result = std::move(err); });
    return result;
  }

  /// Drops outcome notifications (`op_done` / `op_failed`) and plain
  /// replies from the scoped actor's mailbox.
  void drop_outcomes() {
    while (!self->mailbox().empty())
      self->receive([](pool::op_done_atom, uint64_t, caf::message&) {},
                    [](pool::op_failed_atom, uint64_t, caf::error&) {},
                    [](uint64_t) {}, [](int) {}, [](caf::error&) {});
  }
};

} // namespace

TEST_CASE_FIXTURE(durable_fixture,
                  "an enqueue to a durable pool is acknowledged only after "
                  "its commit" *
                      doctest::timeout(30)) {
  auto pool = start(options());
  frozen = "pool.worker";
  self->send(pool, pool::enqueue_atom_v, 1);
  auto events = run();
  // add_work, then the flush that commits it, then the reply with the id.
  auto tags = deterministic::tags(events);
  auto add = std::find(tags.begin(), tags.end(), "add_work");
  auto flush = std::find(tags.begin(), tags.end(), "q_flush");
  REQUIRE(add != tags.end());
  REQUIRE(flush != tags.end());
  CHECK(add < flush);
  REQUIRE(replies() == 1);
  pool::test::connection other{file};
  CHECK(other.query("SELECT count(*) FROM operations") == 1);
  frozen.clear();
}

TEST_CASE_FIXTURE(durable_fixture, "many submits are grouped into one commit" *
                                       doctest::timeout(30)) {
  auto pool = start(options());
  frozen = "pool.worker";
  for (int i = 0; i < 100; ++i)
    self->send(pool, pool::enqueue_atom_v, i);
  auto events = run();
  CHECK(count(events, "add_work") == 100);
  CHECK(count(events, "q_flush") == 1);
  CHECK(replies() == 100);
  frozen.clear();
  run();
  CHECK(stats_of(pool).completed == 100);
}

TEST_CASE_FIXTURE(durable_fixture,
                  "commits are spaced by the commit interval, a lone submit "
                  "after a quiet spell is committed at once" *
                      doctest::timeout(30)) {
  auto pool = start(options().commit_interval(5ms));
  frozen = "pool.worker";
  self->send(pool, pool::enqueue_atom_v, 1);
  run();
  CHECK(replies() == 1); // the first commit: nothing to wait for
  self->send(pool, pool::enqueue_atom_v, 2);
  self->send(pool, pool::enqueue_atom_v, 3);
  run();
  CHECK(replies() == 1); // within 5 ms of the last commit: grouped, held
  advance(5ms);
  CHECK(replies() == 3); // one commit for both
  advance(1h);
  self->send(pool, pool::enqueue_atom_v, 4);
  run();
  CHECK(replies() == 4); // after a quiet spell: at once
  frozen.clear();
}

TEST_CASE_FIXTURE(durable_fixture,
                  "after a crash, a pool over the same file runs what was "
                  "unfinished, not what finished" *
                      doctest::timeout(30)) {
  auto pool = start(options());
  auto done = enqueue(pool, 1);
  CHECK((*log.runs)[1] == 1);
  frozen = "pool.worker"; // the next ones never finish in this process
  auto queued = enqueue(pool, 2);
  auto last = enqueue(pool, 3);
  crash(pool);
  CHECK((*log.runs)[2] == 0);
  drop_outcomes();
  pool = start(options());
  auto st = stats_of(pool);
  CHECK(st.completed == 2); // both adopted operations ran
  CHECK((*log.runs)[1] == 1);
  CHECK((*log.runs)[2] == 1);
  CHECK((*log.runs)[3] == 1);
  auto rec = status(pool, done);
  REQUIRE(rec);
  CHECK(rec->state == pool::operation_state::done);
  CHECK(rec->result.get_as<int>(0) == 10);
  rec = status(pool, queued);
  REQUIRE(rec);
  CHECK(rec->state == pool::operation_state::done);
  CHECK(rec->result.get_as<int>(0) == 20);
  // New operations are numbered after the old ones.
  CHECK(enqueue(pool, 4) > last);
  CHECK(!status(pool, 4242));
}

TEST_CASE_FIXTURE(durable_fixture,
                  "delayed work keeps its due time across a restart" *
                      doctest::timeout(30)) {
  auto pool = start(options());
  self->send(pool, pool::submit_after_atom_v, caf::timespan{1h}, 5);
  run();
  crash(pool);
  pool = start(options());
  auto st = stats_of(pool);
  CHECK(st.delayed == 1);
  advance(58min);
  CHECK((*log.runs)[5] == 0);
  advance(3min);
  CHECK((*log.runs)[5] == 1);
}

TEST_CASE_FIXTURE(durable_fixture,
                  "attempt counts and history survive a restart" *
                      doctest::timeout(30)) {
  auto opts = options().max_attempts(3).backoff(1h, 1h).jitter(0);
  auto pool = start(opts);
  auto id = enqueue(pool, -1); // fails every time
  CHECK((*log.runs)[-1] == 1);
  crash(pool);
  pool = start(opts);
  auto rec = status(pool, id);
  REQUIRE(rec);
  CHECK(rec->state == pool::operation_state::queued);
  CHECK(rec->attempt == 2);
  REQUIRE(rec->history.size() == 1);
  CHECK(rec->history[0].attempt == 1);
  advance(1h);
  advance(1h);
  CHECK((*log.runs)[-1] == 3); // attempts 2 and 3, not a fresh count
  rec = status(pool, id);
  REQUIRE(rec);
  CHECK(rec->state == pool::operation_state::failed);
  CHECK(rec->history.size() == 3);
  CHECK(pool::is(rec->error, pool::pool_errc::operation_failed));
}

TEST_CASE_FIXTURE(durable_fixture,
                  "a unique submit returns the id of the unfinished operation "
                  "with its key, across a restart" *
                      doctest::timeout(30)) {
  auto opts = options().unique_window(1h);
  auto pool = start(opts);
  frozen = "pool.worker";
  auto first = enqueue_unique(pool, "report-7", 7);
  REQUIRE(first);
  auto again = enqueue_unique(pool, "report-7", 7);
  REQUIRE(again);
  CHECK(*again == *first);
  auto other = enqueue_unique(pool, "report-8", 8);
  REQUIRE(other);
  CHECK(*other != *first);
  crash(pool);
  pool = start(opts);
  // Adopted and finished now; within the window it still matches.
  CHECK((*log.runs)[7] == 1);
  auto after = enqueue_unique(pool, "report-7", 7);
  REQUIRE(after);
  CHECK(*after == *first);
  CHECK((*log.runs)[7] == 1);
  advance(2h);
  auto later = enqueue_unique(pool, "report-7", 7);
  REQUIRE(later);
  CHECK(*later != *first); // outside the window: a new operation
  CHECK((*log.runs)[7] == 2);
  auto empty = enqueue_unique(pool, "", 7);
  CHECK(!empty);
}

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
