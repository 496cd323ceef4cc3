// The dead set's bounds: by count (the oldest failure goes first) and by
// age, on an injected clock; its options' validation.
#include <doctest/doctest.h>

#include <caf/make_message.hpp>

#include "asking.hpp"
#include "pool/detail/dead_set.hpp"
#include "pool/errors.hpp"
#include "pool/jobs.hpp"
#include "pool/options.hpp"

using namespace std::chrono_literals;
using time_point = pool::dead_set::time_point;

namespace {

pool::dead_job job(uint64_t id, time_point failed_at) {
  pool::dead_job x;
  x.id = id;
  x.payload = caf::make_message(static_cast<int>(id));
  x.history.push_back(pool::attempt_failure{1, 1ms, caf::error{}});
  x.submitted_at = failed_at - 1s;
  x.failed_at = failed_at;
  return x;
}

std::vector<uint64_t> ids(const pool::dead_set& dead) {
  std::vector<uint64_t> result;
  dead.scan(0, 1'000'000, [&](const pool::dead_job& x) {
    result.push_back(x.id);
    return true;
  });
  return result;
}

} // namespace

TEST_CASE("the dead set keeps at most its count, dropping the oldest "
          "failure first" *
          doctest::timeout(10)) {
  pool::dead_set dead{3, 1h};
  time_point t{};
  // Ids do not come in failure order: id 5 failed first.
  dead.add(job(5, t + 1s), t + 1s);
  dead.add(job(2, t + 2s), t + 2s);
  dead.add(job(9, t + 3s), t + 3s);
  CHECK(dead.size() == 3);
  dead.add(job(7, t + 4s), t + 4s);
  CHECK(dead.size() == 3);
  CHECK(dead.find(5) == nullptr);
  CHECK(ids(dead) == std::vector<uint64_t>{2, 7, 9});
  CHECK(dead.dropped() == 1);
  // A thousand more failures: the set stays at its bound.
  for (uint64_t i = 100; i < 1100; ++i) {
    dead.add(job(i, t + 5s + std::chrono::milliseconds(i)), t + 5s);
    REQUIRE(dead.size() <= 3);
  }
  CHECK(ids(dead) == std::vector<uint64_t>{1097, 1098, 1099});
  CHECK(dead.last_id() == 1099);
}

TEST_CASE("the dead set drops failures older than its age at the next add "
          "or read" *
          doctest::timeout(10)) {
  pool::dead_set dead{100, 10min};
  time_point t{};
  dead.add(job(1, t), t);
  dead.add(job(2, t + 5min), t + 5min);
  dead.expire(t + 10min); // exactly the age: kept
  CHECK(dead.size() == 2);
  dead.expire(t + 10min + 1ns);
  CHECK(ids(dead) == std::vector<uint64_t>{2});
  // An add drops the expired ones too.
  dead.add(job(3, t + 16min), t + 16min);
  CHECK(ids(dead) == std::vector<uint64_t>{3});
  CHECK(dead.dropped() == 2);
}

TEST_CASE("taking a job out of the dead set removes it from both bounds" *
          doctest::timeout(10)) {
  pool::dead_set dead{2, 1h};
  time_point t{};
  dead.add(job(1, t), t);
  dead.add(job(2, t + 1s), t + 1s);
  auto x = dead.take(1);
  REQUIRE(x);
  CHECK(x->payload.get_as<int>(0) == 1);
  CHECK(!dead.take(1));
  // The slot it left is free: two more fit, the oldest of them goes.
  dead.add(job(3, t + 2s), t + 2s);
  CHECK(ids(dead) == std::vector<uint64_t>{2, 3});
  CHECK(dead.dropped() == 0);
  dead.expire(t + 1h + 1500ms); // 2 is older than an hour, 3 is not
  CHECK(ids(dead) == std::vector<uint64_t>{3});
  // Scans start after an id and stop when told.
  dead.add(job(8, t + 3s), t + 3s);
  uint64_t seen = 0;
  auto scanned = dead.scan(3, 10, [&](const pool::dead_job& j) {
    seen = j.id;
    return false;
  });
  CHECK(scanned == 1);
  CHECK(seen == 8);
}

TEST_CASE("the dead set counts each state it keeps, and its discard notes "
          "follow its bounds" *
          doctest::timeout(10)) {
  pool::dead_set dead{2, 1h};
  time_point t{};
  auto cancelled = job(1, t);
  cancelled.state = pool::job_state::cancelled;
  dead.add(std::move(cancelled), t);
  dead.add(job(2, t + 1s), t + 1s);
  CHECK(dead.size(pool::job_state::failed) == 1);
  CHECK(dead.size(pool::job_state::cancelled) == 1);
  // The cancelled one is the oldest: the bound drops it, and its count.
  dead.add(job(3, t + 2s), t + 2s);
  CHECK(dead.size(pool::job_state::cancelled) == 0);
  CHECK(dead.size(pool::job_state::failed) == 2);
  // Discarded: gone from the set, noted; three notes into a bound of 2.
  CHECK(dead.discard(2, t + 3s));
  CHECK(!dead.discard(2, t + 3s));
  CHECK(dead.discard(3, t + 4s));
  CHECK(dead.size() == 0);
  CHECK(dead.discarded(2));
  auto stopped = job(4, t + 5s);
  stopped.state = pool::job_state::stopped;
  dead.add(std::move(stopped), t + 5s);
  CHECK(dead.size(pool::job_state::stopped) == 1);
  CHECK(dead.discard(4, t + 6s));
  CHECK(dead.size(pool::job_state::stopped) == 0);
  CHECK(!dead.discarded(2));
  CHECK(dead.discards() == 2);
  // ... and by age.
  dead.expire(t + 1h + 5s);
  CHECK(!dead.discarded(3));
  CHECK(dead.discarded(4));
}

TEST_CASE("a dead set with a zero bound keeps nothing, and its options are "
          "checked" *
          doctest::timeout(10)) {
  time_point t{};
  pool::dead_set no_count{0, 1h};
  no_count.add(job(1, t), t);
  CHECK(!no_count.enabled());
  CHECK(no_count.size() == 0);
  pool::dead_set no_age{10, caf::timespan{0}};
  no_age.add(job(1, t), t);
  CHECK(no_age.size() == 0);
  pool::pool_options defaults;
  CHECK(defaults.dead_set().max_jobs == 10'000);
  CHECK(defaults.dead_set().max_age == std::chrono::hours(24 * 7));
  auto err =
      pool::pool_options{}.dead_set(pool::dead_set_options{10, -1s}).validate();
  CHECK(pool::is(err, pool::pool_errc::invalid_option));
  CHECK(pool::describe(err).find("dead_set.max_age") != std::string::npos);
  err = pool::pool_options{}
            .dead_set(pool::dead_set_options{pool::max_dead_jobs + 1, 1h})
            .validate();
  CHECK(pool::describe(err).find("dead_set.max_jobs") != std::string::npos);
  CHECK(!pool::pool_options{}.dead_set({0, caf::timespan{0}}).validate());
}

// -- the shepherd's dead set, on CAF's testing scheduler ----------------------

namespace {

using pool::job_state;

// Inputs below zero fail until the test heals them.
bool healed = false;

int flaky(int x) {
  if (x < 0 && !healed)
    throw std::runtime_error("negative input " + std::to_string(x));
  return x;
}

struct dead_fixture : pool::test::asking {
  dead_fixture() {
    healed = false;
  }

  pool::job_page failed(const caf::actor& p, pool::job_filter f = {}) {
    f.state = job_state::failed;
    return ask_for<pool::job_page>(p, caf::make_message(pool::list_jobs_v, f));
  }

  pool::jobs_acted retry(const caf::actor& p, pool::job_filter f) {
    return ask_for<pool::jobs_acted>(p,
                                     caf::make_message(pool::retry_jobs_v, f));
  }

  pool::jobs_acted discard(const caf::actor& p, pool::job_filter f) {
    return ask_for<pool::jobs_acted>(
        p, caf::make_message(pool::discard_jobs_v, f));
  }

  // Enqueues `x` with `opts` and runs it to its end (each retry included);
  // returns its id.
  uint64_t fail_one(const caf::actor& p, int x, pool::job_options opts = {}) {
    auto id = ask_for<uint64_t>(
        p, caf::make_message(pool::enqueue_with_atom_v, std::move(opts), x));
    for (int i = 0; i < 5; ++i)
      advance(std::chrono::seconds(2));
    return id;
  }

  std::vector<uint64_t> ids_of(const pool::job_page& pg) {
    std::vector<uint64_t> result;
    for (auto& x : pg.jobs)
      result.push_back(x.id);
    return result;
  }
};

pool::pool_options two_attempts() {
  return pool::pool_options{}.workers(1).max_attempts(2).backoff(1s, 1s);
}

} // namespace

TEST_CASE_FIXTURE(dead_fixture,
                  "an operation failing for good is listed as failed with its "
                  "input and history, and a retry runs it again and it leaves" *
                      doctest::timeout(30)) {
  auto p = spawn_with(flaky, two_attempts());
  run();
  CHECK(ask_for<pool::job_page>(
            p, caf::make_message(pool::list_jobs_v, pool::job_filter{}))
            .jobs.empty());
  auto id = fail_one(p, -5);
  auto pg = failed(p);
  REQUIRE(pg.jobs.size() == 1);
  auto& job = pg.jobs.front();
  CHECK(job.id == id);
  CHECK(job.state == job_state::failed);
  CHECK(job.attempt == 2);
  CHECK(job.payload.find("-5") != std::string::npos);
  CHECK(job.last_error.find("negative input -5") != std::string::npos);
  REQUIRE(job.history.size() == 2);
  CHECK(job.history[0].attempt == 1);
  CHECK(job.history[1].after_submit >= 1s); // after the backoff
  CHECK(pg.total == 1);
  CHECK(stats_of(p).dead == 1); // the snapshot counts it
  // Without a state filter, it is among the others.
  CHECK(ask_for<pool::job_page>(
            p, caf::make_message(pool::list_jobs_v, pool::job_filter{}))
            .jobs.size() == 1);
  auto before = stats_of(p);
  healed = true;
  pool::job_filter f;
  f.id = id;
  auto acted = retry(p, f);
  REQUIRE(acted.ids == std::vector<uint64_t>{id});
  REQUIRE(acted.new_ids.size() == 1);
  CHECK(acted.new_ids[0] > id);
  CHECK(acted.kept == 0);
  CHECK(acted.note.find("wait no more") != std::string::npos);
  run();
  CHECK(failed(p).jobs.empty());
  auto after = stats_of(p);
  CHECK(after.completed == before.completed + 1);
  CHECK(after.submitted == before.submitted + 1);
  CHECK(after.dead == 0);
  // Retried once: a second retry of the same id finds nothing.
  CHECK(retry(p, f).ids.empty());
}

TEST_CASE_FIXTURE(dead_fixture,
                  "failed jobs are discarded or retried one by one or by "
                  "filter, and a bad filter is refused" *
                      doctest::timeout(30)) {
  auto p = spawn_with(flaky, two_attempts());
  run();
  auto a = fail_one(p, -1);
  auto b = fail_one(p, -2, pool::job_options{}.priority(5));
  auto c = fail_one(p, -3, pool::job_options{}.concurrency_key("k"));
  auto d = fail_one(p, -4);
  CHECK(ids_of(failed(p)) == std::vector<uint64_t>{a, b, c, d});
  // By key, by priority (a filter form), by id.
  pool::job_filter f;
  f.key = "k";
  CHECK(discard(p, f).ids == std::vector<uint64_t>{c});
  f = {};
  f.priority = 5;
  pool::job_filter page_f;
  page_f.priority = 5;
  CHECK(ids_of(failed(p, page_f)) == std::vector<uint64_t>{b});
  healed = true;
  auto retried = retry(p, f);
  CHECK(retried.ids == std::vector<uint64_t>{b});
  run();
  f = {};
  f.id = a;
  CHECK(discard(p, f).ids == std::vector<uint64_t>{a});
  CHECK(ids_of(failed(p)) == std::vector<uint64_t>{d});
  // The retried one kept its priority and ran to success.
  CHECK(stats_of(p).completed == 1);
  // Retry and discard act on failed jobs only.
  f = {};
  f.state = job_state::waiting;
  auto err = ask(p, caf::make_message(pool::retry_jobs_v, f));
  CHECK(pool::is(err, pool::pool_errc::invalid_option));
  CHECK(pool::describe(err).find("failed jobs only") != std::string::npos);
  f.state = job_state::failed;
  f.limit = 0;
  CHECK(pool::is(ask(p, caf::make_message(pool::discard_jobs_v, f)),
                 pool::pool_errc::invalid_option));
  // All that match an empty filter.
  CHECK(discard(p, pool::job_filter{}).ids == std::vector<uint64_t>{d});
  CHECK(failed(p).jobs.empty());
}

TEST_CASE_FIXTURE(dead_fixture,
                  "a retry the queue has no room for stays in the dead set" *
                      doctest::timeout(30)) {
  auto p = spawn_with(flaky, two_attempts().capacity(1));
  run();
  auto a = fail_one(p, -1);
  auto b = fail_one(p, -2);
  healed = true;
  CHECK(!ask(p, caf::make_message(pool::pause_atom_v)));
  auto acted = retry(p, pool::job_filter{});
  CHECK(acted.ids == std::vector<uint64_t>{a}); // the one that fits
  CHECK(acted.kept == 1);
  CHECK(acted.note.find("queue is full") != std::string::npos);
  CHECK(ids_of(failed(p)) == std::vector<uint64_t>{b});
  CHECK(!ask(p, caf::make_message(pool::resume_atom_v)));
  run();
  CHECK(retry(p, pool::job_filter{}).ids == std::vector<uint64_t>{b});
  run();
  CHECK(stats_of(p).completed == 2);
}

TEST_CASE_FIXTURE(dead_fixture,
                  "the shepherd's dead set stays at its count and drops what "
                  "outlived its age, and 0 keeps none" *
                      doctest::timeout(60)) {
  auto p = spawn_with(flaky, pool::pool_options{}.workers(2).dead_set(
                                 pool::dead_set_options{5, 10min}));
  run();
  std::vector<uint64_t> ids;
  for (int i = 1; i <= 40; ++i)
    ids.push_back(
        ask_for<uint64_t>(p, caf::make_message(pool::enqueue_atom_v, -i)));
  run();
  auto pg = failed(p);
  // The newest five failures, in id order.
  CHECK(ids_of(pg) == std::vector<uint64_t>(ids.end() - 5, ids.end()));
  CHECK(pg.total == 5);
  CHECK(stats_of(p).failed == 40);
  CHECK(stats_of(p).dead == 5);
  advance(11min);
  CHECK(stats_of(p).dead == 0); // (what outlived its age is not counted)
  CHECK(failed(p).jobs.empty());
  auto off = spawn_with(flaky, pool::pool_options{}.workers(1).dead_set(
                                   pool::dead_set_options{0, 10min}));
  run();
  ask_for<uint64_t>(off, caf::make_message(pool::enqueue_atom_v, -1));
  run();
  CHECK(failed(off).jobs.empty());
  CHECK(stats_of(off).failed == 1);
}

TEST_CASE_FIXTURE(dead_fixture,
                  "pages of every state follow each other by id across the "
                  "operation table and the dead set" *
                    doctest::timeout(30)) {
  auto p = spawn_with(flaky, two_attempts());
  run();
  auto later = [&] {
    return ask_for<uint64_t>(
      p, caf::make_message(pool::enqueue_with_atom_v,
                           pool::job_options{}.delay(1h), 1));
  };
  // Failed and delayed ones, ids interleaved.
  std::vector<uint64_t> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(fail_one(p, -1 - i));
    ids.push_back(later());
  }
  std::vector<uint64_t> seen;
  std::vector<std::string> states;
  pool::job_filter f;
  f.limit = 2;
  for (int pages = 0; pages < 10; ++pages) {
    auto pg = ask_for<pool::job_page>(p,
                                      caf::make_message(pool::list_jobs_v, f));
    CHECK(pg.total == 6);
    CHECK(pg.jobs.size() <= 2);
    for (auto& x : pg.jobs) {
      seen.push_back(x.id);
      states.push_back(pool::to_string(x.state));
    }
    if (pg.next_after == 0)
      break;
    f.after = pg.next_after;
  }
  CHECK(seen == ids);
  CHECK(states
        == std::vector<std::string>{"failed", "delayed", "failed", "delayed",
                                    "failed", "delayed"});
  // A search by id finds a failed one too.
  f = {};
  f.id = ids[2];
  auto one = ask_for<pool::job_page>(p,
                                     caf::make_message(pool::list_jobs_v, f));
  REQUIRE(one.jobs.size() == 1);
  CHECK(one.jobs[0].state == job_state::failed);
  CHECK(one.next_after == 0);
}

TEST_CASE_FIXTURE(dead_fixture,
                  "retry and discard by filter act on every page of matches "
                  "after the filter's after id, whatever its limit" *
                      doctest::timeout(30)) {
  auto p = spawn_with(flaky, two_attempts());
  run();
  std::vector<uint64_t> ids;
  for (int i = 1; i <= 5; ++i)
    ids.push_back(fail_one(p, -i, pool::job_options{}.priority(i % 2)));
  // What a listing with the filter shows on all its pages together...
  pool::job_filter f;
  f.after = ids[0];
  f.priority = 1;
  f.limit = 1;
  std::vector<uint64_t> listed;
  for (auto pg = failed(p, f);; pg = failed(p, f)) {
    auto page = ids_of(pg);
    listed.insert(listed.end(), page.begin(), page.end());
    if (pg.next_after == 0)
      break;
    f.after = pg.next_after;
  }
  CHECK(listed == std::vector<uint64_t>{ids[2], ids[4]});
  // ... is what a discard with it acts on: not one page (limit 1), not
  // ids[0] (not after it), not the priority-0 ones.
  f.after = ids[0];
  CHECK(discard(p, f).ids == listed);
  CHECK(ids_of(failed(p)) == std::vector<uint64_t>{ids[0], ids[1], ids[3]});
  // A retry likewise: every match after ids[0].
  healed = true;
  f = {};
  f.after = ids[0];
  f.limit = 1;
  CHECK(retry(p, f).ids == std::vector<uint64_t>{ids[1], ids[3]});
  run();
  CHECK(ids_of(failed(p)) == std::vector<uint64_t>{ids[0]});
  CHECK(stats_of(p).dead == 1);
  // An id at or below `after` is not matched (as a listing does).
  f = {};
  f.id = ids[0];
  f.after = ids[0];
  CHECK(retry(p, f).ids.empty());
}
