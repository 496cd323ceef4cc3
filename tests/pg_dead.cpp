// The dead set over PostgreSQL, against a private server: operations that
// failed for good are listed by any store of the queue after a reopen
// (newest first, within age and count), cancelled ones are not, and a
// forgotten one leaves the database with its history; the jobs view over
// the whole queue (every store's operations) and an operator's retry or
// discard, taken once whichever store asks.
#include <doctest/doctest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "pg_store_fixture.hpp"

using namespace std::chrono_literals;

namespace {

caf::error failed_for_good(uint64_t id, std::vector<pool::attempt_failure> h) {
  return caf::make_error(pool::pool_errc::operation_failed, id, std::move(h));
}

// A first attempt that failed with "boom" 5 ms after its submit.
pool::attempt_failure first_boom() {
  return {1, 5ms, caf::make_error(pool::pool_errc::job_failed, uint32_t{1},
                                  std::string{"boom"})};
}

} // namespace

TEST_CASE("failed operations survive the store and are forgotten when "
          "retried or discarded" *
          doctest::timeout(120)) {
  pool::test::pg_store_fixture fx;
  auto t0 = fx.now;
  std::vector<uint64_t> ids;
  {
    auto a = fx.open();
    for (int i = 1; i <= 4; ++i) {
      pool::work_record x{pool::attempt_id{a->last_operation_id() + 1, 1},
                          caf::make_message(-i)};
      ids.push_back(x.id.operation);
      REQUIRE(!a->push(x, t0, t0));
      REQUIRE(!a->commit());
      REQUIRE(a->pop_due(t0));
      REQUIRE(!a->commit());
    }
    auto boom = caf::make_error(pool::pool_errc::job_failed, uint32_t{1},
                                std::string{"boom"});
    pool::attempt_failure first{1, 5ms, boom};
    pool::attempt_failure second{2, 2s, boom};
    for (size_t i = 0; i < 3; ++i) {
      REQUIRE(!a->note_failure(ids[i], first));
      REQUIRE(!a->note_failure(ids[i], second));
      auto at = i == 0 ? t0 : t0 + 1h + std::chrono::seconds(i);
      REQUIRE(!a->finish(ids[i], failed_for_good(ids[i], {first, second}), at));
    }
    REQUIRE(
        !a->finish(ids[3], caf::make_error(pool::pool_errc::cancelled), t0));
    REQUIRE(!a->commit());
  }
  // Another store of the queue (a restarted process) lists them.
  auto b = fx.open();
  auto now = t0 + 1h + 10s;
  auto all = b->failed_operations(10, 24h, now);
  REQUIRE(all.size() == 3);
  CHECK(all[0].record.id == ids[2]); // newest first
  CHECK(all[2].record.id == ids[0]);
  CHECK(all[0].record.payload.get_as<int>(0) == -3);
  REQUIRE(all[0].record.history.size() == 2);
  CHECK(all[0].record.history[1].after_submit == 2s);
  CHECK(std::chrono::abs(all[0].ago - 8s) < 1s);
  CHECK(b->failed_operations(2, 24h, now).size() == 2);
  CHECK(b->failed_operations(10, 30min, now).size() == 2);
  REQUIRE(!b->forget_failed(ids[2]));
  REQUIRE(!b->commit());
  auto c = fx.open();
  auto left = c->failed_operations(10, 24h, now);
  REQUIRE(left.size() == 2);
  CHECK(left[0].record.id == ids[1]);
  CHECK(!c->lookup(ids[2]));
  CHECK(c->lookup(ids[3])); // cancelled: neither listed nor forgotten
}

namespace {

// Pushes a new operation of `store` (input `x`), due at `due`, and commits;
// returns its id.
uint64_t push(pool::pg_store& store, int x, pool::pg_store::time_point due,
              pool::pg_store::time_point now, int32_t priority = 0,
              std::string ckey = {}) {
  pool::work_record rec{pool::attempt_id{store.last_operation_id() + 1, 1},
                        caf::make_message(x)};
  rec.priority = priority;
  rec.concurrency_key = std::move(ckey);
  REQUIRE(!store.push(rec, due, now));
  REQUIRE(!store.commit());
  return rec.id.operation;
}

// Store `store` claims the queue's only due entry, operation `id`.
void hold(pool::pg_store& store, uint64_t id, pool::pg_store::time_point now) {
  auto x = store.pop_due(now);
  REQUIRE(x);
  REQUIRE(x->id.operation == id);
  REQUIRE(!store.commit());
}

std::vector<uint64_t> ids_of(const pool::job_page& page) {
  std::vector<uint64_t> result;
  for (auto& x : page.jobs)
    result.push_back(x.id);
  return result;
}

const pool::job_info& job_of(const pool::job_page& page, uint64_t id) {
  for (auto& x : page.jobs)
    if (x.id == id)
      return x;
  FAIL("op#" << id << " is not on the page");
  throw std::logic_error("unreachable");
}

} // namespace

TEST_CASE("the jobs view of a shared store lists every store's operations "
          "by state, filtered and paged" *
          doctest::timeout(120)) {
  using pool::job_state;
  pool::test::pg_store_fixture fx;
  auto t0 = fx.now;
  auto a = fx.open();
  auto b = fx.open();
  // Running: the only due entry when store b claims. (Each claim below
  // finds only the entry it is for: the waiting ones come last.)
  auto running = push(*a, 1, t0, t0, 5, "hot");
  REQUIRE(b->pop_due(t0));
  REQUIRE(!b->commit());
  // Retrying: its first attempt failed, the second is due in 10 s.
  auto retrying = push(*a, 4, t0, t0);
  hold(*a, retrying, t0);
  REQUIRE(!a->note_failure(retrying, first_boom()));
  pool::work_record again{pool::attempt_id{retrying, 2}, caf::make_message(4)};
  REQUIRE(!a->push(again, t0 + 10s, t0));
  REQUIRE(!a->commit());
  auto failed = push(*a, 5, t0, t0);
  hold(*a, failed, t0);
  REQUIRE(!a->note_failure(failed, first_boom()));
  REQUIRE(!a->finish(failed, failed_for_good(failed, {}), t0));
  REQUIRE(!a->commit());
  auto failed_long_ago = push(*a, 6, t0, t0);
  hold(*a, failed_long_ago, t0);
  REQUIRE(!a->finish(failed_long_ago, failed_for_good(failed_long_ago, {}),
                     t0 - 2h));
  REQUIRE(!a->commit());
  auto cancelled = push(*a, 7, t0, t0);
  a->remove(cancelled);
  REQUIRE(!a->commit());
  auto done = push(*a, 8, t0, t0);
  hold(*a, done, t0);
  REQUIRE(!a->finish(done, caf::make_message(8), t0));
  REQUIRE(!a->commit());
  auto waiting = push(*a, 2, t0, t0);
  auto delayed = push(*a, 3, t0 + 1h, t0);
  // (Entries due at once are due by the server's clock at their insert.)
  auto now = fx.sys.clock().now() + 1s;
  // Store b sees store a's operations; done ones and failures older than
  // the dead set's age are not listed.
  auto page = b->list_jobs(pool::job_filter{}, 1h, now);
  REQUIRE_MESSAGE(page, pool::describe(page.error()));
  CHECK(ids_of(*page) == std::vector<uint64_t>{running, retrying, failed,
                                               cancelled, waiting, delayed});
  CHECK(page->total == 4);
  CHECK(page->next_after == 0);
  CHECK(job_of(*page, running).state == job_state::running);
  CHECK(job_of(*page, running).holder == b->owner());
  CHECK(job_of(*page, running).priority == 5);
  CHECK(job_of(*page, running).concurrency_key == "hot");
  CHECK(job_of(*page, waiting).state == job_state::waiting);
  CHECK(job_of(*page, waiting).since >= caf::timespan{0});
  CHECK(job_of(*page, waiting).payload == "(2)");
  CHECK(job_of(*page, delayed).state == job_state::delayed);
  CHECK(job_of(*page, delayed).since < -50min);
  auto& y = job_of(*page, retrying);
  CHECK(y.state == job_state::retrying);
  CHECK(y.attempt == 2);
  REQUIRE(y.history.size() == 1);
  CHECK(y.last_error.find("boom") != std::string::npos);
  auto& f = job_of(*page, failed);
  CHECK(f.state == job_state::failed);
  CHECK(f.history.size() == 1);
  CHECK(!f.last_error.empty());
  CHECK(job_of(*page, cancelled).state == job_state::cancelled);
  // Filters: state, key, priority, id; no inputs unless asked.
  pool::job_filter by;
  by.state = job_state::failed;
  CHECK(ids_of(*b->list_jobs(by, 1h, now)) == std::vector<uint64_t>{failed});
  CHECK(ids_of(*b->list_jobs(by, 24h, now))
        == std::vector<uint64_t>{failed, failed_long_ago});
  by = {};
  by.key = "hot";
  CHECK(ids_of(*b->list_jobs(by, 1h, now)) == std::vector<uint64_t>{running});
  by = {};
  by.priority = 5;
  CHECK(ids_of(*b->list_jobs(by, 1h, now)) == std::vector<uint64_t>{running});
  by = {};
  by.id = delayed;
  by.payloads = false;
  auto one = b->list_jobs(by, 1h, now);
  CHECK(ids_of(*one) == std::vector<uint64_t>{delayed});
  CHECK(one->jobs.front().payload.empty());
  // Pages of two, by id.
  by = {};
  by.limit = 2;
  auto first = b->list_jobs(by, 1h, now);
  CHECK(ids_of(*first) == std::vector<uint64_t>{running, retrying});
  REQUIRE(first->next_after == retrying);
  by.after = first->next_after;
  CHECK(ids_of(*b->list_jobs(by, 1h, now))
        == std::vector<uint64_t>{failed, cancelled});
  // A store's claim covers both due entries; the one it has not handed
  // out yet is still waiting.
  auto extra = push(*a, 9, t0, t0);
  auto c = fx.open();
  auto out = c->pop_due(now);
  REQUIRE(out);
  REQUIRE(out->id.operation == waiting);
  REQUIRE(!c->commit());
  page = b->list_jobs(pool::job_filter{}, 1h, now);
  CHECK(job_of(*page, waiting).state == job_state::running);
  CHECK(job_of(*page, waiting).holder == c->owner());
  CHECK(job_of(*page, extra).state == job_state::waiting);
}

TEST_CASE("an operator's retry or discard takes ended operations out of a "
          "shared store once, whichever store asks" *
          doctest::timeout(120)) {
  using pool::job_state;
  pool::test::pg_store_fixture fx;
  auto t0 = fx.now;
  auto a = fx.open();
  auto b = fx.open();
  std::vector<uint64_t> failed;
  for (int i = 1; i <= 3; ++i) {
    auto id = push(*a, -i, t0, t0);
    hold(*a, id, t0);
    REQUIRE(!a->note_failure(id, first_boom()));
    REQUIRE(!a->finish(id, failed_for_good(id, {}), t0));
    failed.push_back(id);
  }
  auto cancelled = push(*a, 9, t0, t0);
  a->remove(cancelled);
  REQUIRE(!a->commit());
  auto now = fx.sys.clock().now() + 1s;
  // A retry by b: the first failed one, with input and history; the store
  // deleted it, and says how many more match.
  pool::job_filter f;
  f.state = job_state::failed;
  auto taken = b->take_ended(f, 1, 1h, false, now);
  REQUIRE_MESSAGE(taken, pool::describe(taken.error()));
  REQUIRE(!b->commit());
  REQUIRE(taken->ops.size() == 1);
  auto& rec = taken->ops.front().record;
  CHECK(rec.id == failed[0]);
  CHECK(rec.state == pool::operation_state::failed);
  CHECK(rec.payload.get_as<int>(0) == -1);
  CHECK(rec.history.size() == 1);
  CHECK(taken->left == 2);
  CHECK(!a->lookup(failed[0]));
  // While store a holds one in its open group, store b does not take it.
  push(*a, 10, t0 + 1h, t0); // (commits)
  REQUIRE(!a->push(pool::work_record{pool::attempt_id{a->last_operation_id()
                                                       + 1,
                                                     1},
                                     caf::make_message(11)},
                   t0 + 1h, t0));
  f.id = failed[1];
  auto by_a = a->take_ended(f, 10, 1h, true, now);
  REQUIRE(by_a);
  CHECK(by_a->ops.size() == 1);
  auto by_b = b->take_ended(f, 10, 1h, true, now);
  REQUIRE(by_b);
  CHECK(by_b->ops.empty());
  REQUIRE(!a->commit());
  // Discarded: a note that any store reads, not listed, not taken again.
  auto note = b->lookup(failed[1]);
  REQUIRE(note);
  CHECK(note->state == pool::operation_state::discarded);
  CHECK(b->take_ended(f, 10, 1h, true, now)->ops.empty());
  // The cancelled one, by state; then what is left of the dead set.
  pool::job_filter c;
  c.state = job_state::cancelled;
  auto gone = b->take_ended(c, 10, 1h, true, now);
  REQUIRE(!b->commit());
  REQUIRE(gone->ops.size() == 1);
  CHECK(gone->ops.front().record.id == cancelled);
  CHECK(gone->ops.front().record.state == pool::operation_state::cancelled);
  pool::job_filter dead;
  dead.state = job_state::failed;
  CHECK(ids_of(*a->list_jobs(dead, 1h, now))
        == std::vector<uint64_t>{failed[2]});
  dead.state = job_state::cancelled;
  CHECK(a->list_jobs(dead, 1h, now)->jobs.empty());
  // Stopped ones are never stored as such: a drain here gives them back.
  dead.state = job_state::stopped;
  CHECK(b->take_ended(dead, 10, 1h, false, now)->ops.empty());
}
