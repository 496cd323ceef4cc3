// Adaptive batching, step by step on CAF's testing scheduler: several jobs
// per work_to_do while more is due than there are workers and jobs are
// short, one at a time otherwise; entries due now go to the queue in one
// add_work while another add is on its way; a batch reports once, or
// attempt by attempt when a timeout bounds each attempt; attempts a worker
// did not start go back without counting.
#include <doctest/doctest.h>

#include <map>
#include <memory>

#include "deterministic.hpp"

using namespace std::chrono_literals;
using pool::test::deterministic;
using pool::test::doubled;
using pool::test::results;

namespace {

/// Records how often the job ran for each input.
struct calls {
  std::map<int, int> n;
};

/// The sizes of the batches in `events` (work_to_do messages carrying a
/// vector of more than one entry: the pool's own workers get single jobs
/// as vectors too), in order.
std::vector<size_t> batch_sizes(const std::vector<pool::test::event>& events) {
  std::vector<size_t> result;
  for (auto& ev : events)
    if (ev.tag == "work_to_do" &&
        ev.content.match_element<std::vector<pool::work_record>>(1))
      if (auto n = ev.content.get_as<std::vector<pool::work_record>>(1).size();
          n > 1)
        result.push_back(n);
  return result;
}

/// Adds a way of building a deep queue.
struct batching : deterministic {
  /// Submits `from` .. `to - 1` while the pool's workers are stuck (the
  /// first may go to a sleeping worker; the rest queue behind it, or are
  /// sent ahead to it). The workers stay stuck until the test clears
  /// `frozen`. Returns the messages meanwhile.
  std::vector<pool::test::event>
  submit_behind_stuck_workers(const caf::actor& pool, int from, int to) {
    frozen = "pool.worker";
    for (int x = from; x < to; ++x)
      self->send(pool, pool::submit_atom_v, x);
    return run();
  }

  /// A pool doubling its inputs, logging each call in `log`; the first
  /// run of 1 freezes the workers, so the job after it in a batch gets
  /// stuck (until the test clears `frozen`).
  caf::actor spawn_stuck_after_one(std::shared_ptr<calls> log,
                                   pool::pool_options opts) {
    auto made = pool::spawn_pool(
        sys,
        [this, log](int x) {
          ++log->n[x];
          if (x == 1 && log->n[x] == 1)
            frozen = "pool.worker";
          return 2 * x;
        },
        std::move(opts));
    REQUIRE(made);
    return *made;
  }
};

} // namespace

TEST_CASE_FIXTURE(batching,
                  "a deep queue of short jobs goes out in batches, in order, "
                  "each job once" *
                      doctest::timeout(30)) {
  auto log = std::make_shared<calls>();
  auto pool = spawn(
      [log](int x) {
        ++log->n[x];
        return 2 * x;
      },
      1);
  run();
  submit_behind_stuck_workers(pool, 0, 41);
  frozen.clear();
  auto events = run();
  auto sizes = batch_sizes(events);
  REQUIRE(!sizes.empty());
  // No batch holds more than max_batch, and the reports come as one
  // status_rep per batch.
  for (auto n : sizes)
    CHECK(n <= pool::pool_options{}.max_batch());
  CHECK(*std::max_element(sizes.begin(), sizes.end()) > 1);
  CHECK(results(self, 41) == doubled(0, 41));
  for (int x = 0; x < 41; ++x)
    CHECK(log->n[x] == 1);
  auto st = stats_of(pool);
  CHECK(st.completed == 41);
  CHECK(st.batches == sizes.size() - std::count(sizes.begin(), sizes.end(), 1));
  CHECK(st.batched > 1);
  CHECK(st.stale_replies == 0);
  CHECK(st.busy + st.waiting + st.sleeping == 1);
}

TEST_CASE_FIXTURE(batching, "with max_batch(1) every job goes out on its own" *
                                doctest::timeout(30)) {
  auto made = pool::spawn_pool(
      sys, [](int x) { return 2 * x; },
      pool::pool_options{}.workers(1).max_batch(1));
  REQUIRE(made);
  auto pool = *made;
  run();
  submit_behind_stuck_workers(pool, 0, 20);
  frozen.clear();
  auto events = run();
  CHECK(batch_sizes(events).empty());
  // Each job in a work_to_do of its own; one sent ahead and taken back
  // (docs/protocol.md "Lookahead") was sent twice.
  auto st = stats_of(pool);
  CHECK(count(events, "work_to_do") == 20 + st.taken_back);
  CHECK(results(self, 20) == doubled(0, 20));
  CHECK(stats_of(pool).batches == 0);
}

TEST_CASE_FIXTURE(batching, "jobs as long as batch_time go one at a time" *
                                doctest::timeout(30)) {
  // Each job takes 1 ms: the worker measures it (time passes on the test
  // clock while the job runs), and its report says so.
  auto pool = spawn(
      [this](int x) {
        sched.advance_time(1ms);
        return 2 * x;
      },
      1);
  run();
  self->send(pool, pool::submit_atom_v, 0);
  run();
  CHECK(results(self, 1) == doubled(0, 1));
  // Ten more, queued while the worker is stuck: a job observed to take as
  // long as batch_time keeps them apart.
  submit_behind_stuck_workers(pool, 1, 12);
  frozen.clear();
  auto events = run();
  CHECK(batch_sizes(events).empty());
  CHECK(results(self, 11) == doubled(1, 12));
  CHECK(stats_of(pool).batches == 0);
}

TEST_CASE_FIXTURE(batching, "joined workers get one attempt at a time" *
                                doctest::timeout(30)) {
  auto pool = spawn([](int x) { return 2 * x; }, 1);
  run();
  frozen = "pool.worker";
  join_as_worker(pool);
  for (int x = 0; x < 20; ++x)
    self->send(pool, pool::submit_atom_v, x);
  run();
  // The scoped actor, a joined worker, was woken: it gets a single record
  // in the one-attempt shape, whatever the depth of the queue.
  auto record = take_work(pool);
  CHECK(record.id.attempt == 1);
  self->send(pool, pool::status_reply_atom_v, record.id,
             caf::make_message(record.payload.get_as<int>(0) * 2));
  self->send(pool, pool::give_me_work_atom_v);
  run();
  self->receive([&](pool::work_to_do_atom, pool::work_record& x) {
    CHECK(x.id.attempt == 1);
  });
  frozen.clear();
  run();
}

TEST_CASE_FIXTURE(batching,
                  "entries due now wait while an add is on its way, then go "
                  "to the queue in one add_work, in order" *
                      doctest::timeout(30)) {
  auto pool = spawn([](int x) { return 2 * x; }, 1);
  run();
  frozen = "pool.worker";
  for (int x = 0; x < 10; ++x)
    self->send(pool, pool::submit_atom_v, x);
  auto events = run();
  // The first goes to the queue (its sleeping worker asks for it right
  // behind it); the other nine arrive before the queue answers and follow
  // in one message.
  std::vector<size_t> adds;
  for (auto& ev : events)
    if (ev.tag == "add_work")
      adds.push_back(
          ev.content.match_element<std::vector<pool::work_record>>(1)
              ? ev.content.get_as<std::vector<pool::work_record>>(1).size()
              : 1);
  CHECK(adds == std::vector<size_t>{1, 9});
  auto st = stats_of(pool);
  CHECK(st.available == 9);
  frozen.clear();
  run();
  CHECK(results(self, 10) == doubled(0, 10));
}

TEST_CASE_FIXTURE(batching,
                  "with a timeout, a batch reports attempt by attempt: a "
                  "stuck attempt times out alone and the ones after it go "
                  "back unstarted" *
                      doctest::timeout(30)) {
  auto log = std::make_shared<calls>();
  // (Without lookahead, which would send entry 1 ahead on its own: the
  // batch after it goes out when the worker asks.)
  auto pool = spawn_stuck_after_one(log, pool::pool_options{}
                                             .workers(1)
                                             .lookahead(false)
                                             .attempt_timeout(1s)
                                             .max_attempts(3)
                                             .backoff(0s, 0s));
  run();
  // A job that took no time; then a deep queue behind a stuck worker.
  self->send(pool, pool::submit_atom_v, 100);
  run();
  CHECK(results(self, 1) == std::vector<int>{200});
  auto events = submit_behind_stuck_workers(pool, 0, 8); // (a batch is sent
                                                         // ahead meanwhile)
  frozen.clear();
  for (auto& ev : run()) // the job for 1 freezes the worker after it
    events.push_back(std::move(ev));
  auto sizes = batch_sizes(events);
  REQUIRE(!sizes.empty());
  CHECK(sizes.front() > 2);
  // Attempts reported one by one, each as it finished.
  CHECK(count(events, "status_rep") >= 2);
  CHECK(log->n[2] == 0);
  // The attempt after 1 was the one running when time ran out: it alone
  // fails with timed_out; the rest of the batch goes back unstarted.
  advance(1s);
  frozen.clear();
  run();
  // Replies in whatever order they arrived; each input exactly once.
  std::vector<int> got = results(self, 8);
  std::sort(got.begin(), got.end());
  CHECK(got == doubled(0, 8));
  auto st = stats_of(pool);
  CHECK(st.timed_out == 1);
  CHECK(st.retried == 1);
  CHECK(st.completed == 9);
  CHECK(st.worker_restarts == 1);
  for (int x = 0; x < 8; ++x)
    CHECK(log->n[x] == 1); // the killed worker ran nothing after 1
  CHECK(st.busy + st.waiting + st.sleeping == 1);
}

TEST_CASE_FIXTURE(batching,
                  "a broken resource ends a batch: the attempts after it go "
                  "back unstarted, without counting" *
                      doctest::timeout(30)) {
  auto log = std::make_shared<calls>();
  auto made = pool::spawn_resource_pool(
      sys, [] { return 0; },
      [log](int& connection, int x) {
        ++log->n[x];
        if (x == 3 && log->n[x] == 1)
          throw pool::resource_broken("connection reset");
        return 2 * x + connection;
      },
      pool::pool_options{}.workers(1).max_attempts(3).backoff(0s, 0s));
  REQUIRE(made);
  auto pool = *made;
  run();
  submit_behind_stuck_workers(pool, 0, 12);
  frozen.clear();
  auto events = run();
  REQUIRE(!batch_sizes(events).empty());
  std::vector<int> got = results(self, 12);
  std::sort(got.begin(), got.end());
  CHECK(got == doubled(0, 12));
  for (int x = 0; x < 12; ++x)
    CHECK(log->n[x] == (x == 3 ? 2 : 1));
  auto st = stats_of(pool);
  CHECK(st.retried == 1); // only the attempt that broke
  CHECK(st.worker_restarts == 1);
  CHECK(st.completed == 12);
  CHECK(st.stale_replies == 0);
}

TEST_CASE_FIXTURE(batching,
                  "the queue hands out up to n entries for (get_work, n) and "
                  "adds several with one add_work" *
                      doctest::timeout(30)) {
  auto store = std::make_shared<pool::memory_store>();
  auto queue = sys.spawn(pool::queue_actor, store, caf::timespan{0},
                         caf::actor_addr{});
  std::vector<pool::work_record> records;
  for (uint64_t i = 1; i <= 5; ++i)
    records.push_back({pool::attempt_id{i, 1}, caf::make_message(int(i))});
  auto added = self->request(queue, caf::infinite, pool::add_work_atom_v,
                             std::move(records));
  run();
  added.receive([](pool::queue_counts& c) { CHECK(c.available == 5); },
                [](caf::error& err) { FAIL(pool::describe(err)); });
  auto ids = [&](uint32_t n) {
    std::vector<uint64_t> result;
    self->send(queue, pool::get_work_atom_v, n);
    run();
    self->receive(
        [&](std::vector<pool::work_record>& xs) {
          for (auto& x : xs)
            result.push_back(x.id.operation);
        },
        [&](pool::no_work_atom, caf::timespan) {},
        [](caf::error& err) { FAIL(pool::describe(err)); },
        caf::after(0s) >> [] { FAIL("no answer"); });
    return result;
  };
  CHECK(ids(3) == std::vector<uint64_t>{1, 2, 3});
  CHECK(ids(3) == std::vector<uint64_t>{4, 5});
  CHECK(ids(3).empty()); // no_work
  CHECK(pool::is(
      ask(queue, caf::make_message(pool::get_work_atom_v, uint32_t{0})),
      pool::pool_errc::unexpected_message));
  self->send_exit(queue, caf::exit_reason::user_shutdown);
  run();
}

namespace {

struct tally {
  int ints = 0;
  int errors = 0;
};

/// Counts the integer replies and the error replies waiting for `self`.
tally drain_replies(caf::scoped_actor& self) {
  tally t;
  bool more = true;
  while (more)
    self->receive([&](int) { ++t.ints; }, [&](caf::error&) { ++t.errors; },
                  caf::after(0s) >> [&] { more = false; });
  return t;
}

} // namespace

TEST_CASE_FIXTURE(batching,
                  "cancelling the stuck attempt of a timed batch still times "
                  "it out, and the rest of the batch runs elsewhere" *
                      doctest::timeout(30)) {
  auto log = std::make_shared<calls>();
  // Stuck in the job after 1 (x == 2).
  auto pool = spawn_stuck_after_one(
      log, pool::pool_options{}.workers(1).attempt_timeout(1s));
  run();
  self->send(pool, pool::submit_atom_v, 100); // operation 1
  run();
  drain_replies(self);
  submit_behind_stuck_workers(pool, 0, 8); // operations 2..9; x 2 is 4
  frozen.clear();
  run();
  REQUIRE(log->n[1] == 1);
  REQUIRE(log->n[2] == 0);
  auto before = drain_replies(self);
  // The stuck job's operation is cancelled; its caller is answered at once.
  self->send(pool, pool::cancel_op_atom_v, uint64_t{4});
  run();
  advance(1s);
  frozen.clear();
  run();
  auto after = drain_replies(self);
  auto st = stats_of(pool);
  CHECK(st.timed_out == 1);
  CHECK(st.worker_restarts == 1);
  CHECK(before.ints + after.ints == 7); // 0, 1, 3, 4, 5, 6, 7
  CHECK(after.errors == 1);             // the cancelled one
  CHECK(st.busy == 0);
}

TEST_CASE_FIXTURE(batching,
                  "delayed adds on their way do not hold back an entry due "
                  "now" *
                      doctest::timeout(30)) {
  auto pool = spawn([](int x) { return 2 * x; }, 1);
  run();
  // Runs exactly one message of the actor called `name`.
  auto step = [&](const std::string& name) {
    auto& jobs = sched.jobs;
    auto i = std::find_if(jobs.begin(), jobs.end(), [&](caf::resumable* j) {
      auto a = dynamic_cast<caf::scheduled_actor*>(j);
      return a != nullptr && name == a->name();
    });
    REQUIRE(i != jobs.end());
    auto job = *i;
    jobs.erase(i);
    jobs.push_front(job);
    sched.run_once();
  };
  frozen = "pool.queue";
  self->send(pool, pool::submit_after_atom_v, caf::timespan{1h}, 1000);
  run();                                    // a delayed add on its way
  self->send(pool, pool::submit_atom_v, 1); // due now
  self->send(pool, pool::submit_after_atom_v, caf::timespan{1h}, 1001);
  run();
  size_t work = 0;
  // Six rounds: the adds of 1000, 1 and 1001, two more delayed ones, then
  // the woken worker's get_work (it asked after the add sent meanwhile).
  for (int round = 0; round < 6; ++round) {
    step("pool.queue"); // answers the oldest add
    // Another delayed submit arrives meanwhile: there is always a delayed
    // add on its way.
    self->send(pool, pool::submit_after_atom_v, caf::timespan{1h},
               2000 + round);
    work += count(run(), "work_to_do");
  }
  CHECK(work == 1); // the submit due now went to the worker
  int got = 0;
  self->receive([&](int y) { got = y; }, caf::after(0s) >> [] {});
  CHECK(got == 2);
  frozen.clear();
  run();
}
