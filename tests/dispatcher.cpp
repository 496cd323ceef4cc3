// The dispatcher's decisions, one mechanism at a time, in the simulated
// world of core_sim.hpp (no actor system): how work reaches workers with
// each speed mechanism on or off, and the plain pull joined workers get.
#include <doctest/doctest.h>

#include <map>

#include "core_sim.hpp"

using namespace std::chrono_literals;
using pool::test::core_sim;

namespace {

pool::pool_options opts(size_t workers, pool::dispatch_tuning tuning = {}) {
  return pool::pool_options{}.workers(workers).dispatch(tuning).log(
      pool::silent_log_hook());
}

size_t to_queue(core_sim& sim, caf::atom_value tag) {
  return sim.fx.count_atom("queue", tag);
}

size_t to_workers(core_sim& sim, caf::atom_value tag) {
  return sim.fx.count_atom("worker", tag);
}

} // namespace

TEST_CASE("dispatcher: a submit on an idle pool goes to the queue first, "
          "and the most recent sleeper's work is asked for right behind it, "
          "without a wake-up" *
          doctest::timeout(10)) {
  core_sim sim{opts(2)};
  sim.enqueue(1);
  // In one step: the add, and the get on the sleeper's behalf behind it.
  sim.shepherd_step();
  CHECK(sim.queue_box.size() == 2);
  sim.settle();
  CHECK(to_queue(sim, pool::add_work_atom::value) == 1);
  CHECK(to_queue(sim, pool::get_work_atom::value) == 1);
  CHECK(to_workers(sim, pool::wake_up_atom::value) == 0);
  CHECK(to_workers(sim, pool::work_to_do_atom::value) == 1);
  CHECK(sim.workers[2].phase == pool::worker_phase::working); // (top)
  // It reports, asks again, and sleeps without a trip to the queue, and
  // without being told (the pool's own takes work in any state and is
  // never sent a wake-up: a go_to_sleep would change nothing for it).
  sim.finish(2);
  sim.settle();
  CHECK(to_queue(sim, pool::get_work_atom::value) == 1);
  CHECK(to_workers(sim, pool::go_to_sleep_atom::value) == 0);
  CHECK(sim.core.stats().sleeping == 2);
  CHECK(sim.outcomes.size() == 1);
  // The next submit still reaches it, asleep as the shepherd sees it.
  sim.enqueue(2);
  sim.settle();
  CHECK(to_workers(sim, pool::wake_up_atom::value) == 0);
  CHECK(to_workers(sim, pool::work_to_do_atom::value) == 2);
  sim.finish(2);
  sim.settle();
  CHECK(sim.outcomes.size() == 2);
}

TEST_CASE("dispatcher: a sleeper asked for in vain is not told to sleep: "
          "it never knew it was woken" *
          doctest::timeout(10)) {
  core_sim sim{opts(1)};
  sim.enqueue(1);
  sim.shepherd_step(); // the add and the get behind it
  // The operation is cancelled before the queue answers: the get finds
  // nothing.
  CHECK(!sim.core.cancel(1));
  sim.settle();
  CHECK(to_queue(sim, pool::get_work_atom::value) == 1);
  CHECK(to_workers(sim, pool::work_to_do_atom::value) == 0);
  CHECK(to_workers(sim, pool::go_to_sleep_atom::value) == 0);
  CHECK(sim.workers[1].phase == pool::worker_phase::sleeping);
  CHECK(sim.core.roster().sleeping() == 1);
  // The next submit finds it asleep and asks for it again.
  sim.enqueue(2);
  sim.settle();
  CHECK(to_workers(sim, pool::work_to_do_atom::value) == 1);
}

TEST_CASE("dispatcher: without the short cuts, the pattern's plain pull" *
          doctest::timeout(10)) {
  pool::dispatch_tuning plain;
  plain.short_cuts(false);
  core_sim sim{opts(1, plain)};
  sim.enqueue(1);
  sim.settle();
  CHECK(to_queue(sim, pool::add_work_atom::value) == 1);
  CHECK(to_workers(sim, pool::wake_up_atom::value) == 1);
  CHECK(to_queue(sim, pool::get_work_atom::value) == 1);
  CHECK(to_workers(sim, pool::work_to_do_atom::value) == 1);
  sim.finish(1);
  sim.settle();
  CHECK(to_queue(sim, pool::get_work_atom::value) == 2); // -> no_work
  CHECK(to_workers(sim, pool::go_to_sleep_atom::value) == 1);
}

TEST_CASE("dispatcher: when delayed work falls due, the queue is asked for "
          "it on a sleeping worker's behalf" *
          doctest::timeout(10)) {
  core_sim sim{opts(1)};
  sim.enqueue(1, 1s); // delayed
  sim.settle();
  sim.advance(1s);
  sim.settle();
  CHECK(to_workers(sim, pool::wake_up_atom::value) == 0);
  CHECK(to_queue(sim, pool::get_work_atom::value) == 1);
  CHECK(sim.workers[1].phase == pool::worker_phase::working);
}

TEST_CASE("dispatcher: while every worker is busy, due entries are taken "
          "out ahead and a worker that reports gets its next one at once" *
          doctest::timeout(10)) {
  pool::dispatch_tuning one_at_a_time;
  one_at_a_time.max_batch = 1;
  one_at_a_time.lookahead = false;
  core_sim sim{opts(2, one_at_a_time)};
  for (int i = 0; i < 4; ++i)
    sim.enqueue(i);
  sim.settle();
  // Two run; the rest wait, taken out of the queue ahead.
  CHECK(sim.in_phase(pool::worker_phase::working).size() == 2);
  auto st = sim.core.stats();
  CHECK(st.available == 2);
  CHECK(st.held == 2);
  auto gets = to_queue(sim, pool::get_work_atom::value);
  // The first to finish gets the oldest waiting entry without another trip
  // to the queue.
  auto first = sim.in_phase(pool::worker_phase::working).front();
  auto ran = sim.workers[first].running.front().payload.get_as<int>(0);
  sim.finish(first);
  sim.settle();
  CHECK(to_queue(sim, pool::get_work_atom::value) == gets);
  CHECK(sim.workers[first].phase == pool::worker_phase::working);
  CHECK(sim.workers[first].running.front().payload.get_as<int>(0) == 2);
  CHECK(ran < 2);
  // Every operation runs once and ends once.
  for (int i = 0; i < 10 && sim.core.stats().completed < 4; ++i) {
    for (auto key : sim.in_phase(pool::worker_phase::working))
      sim.finish(key);
    sim.settle();
  }
  CHECK(sim.core.stats().completed == 4);
  for (auto& kvp : sim.outcomes)
    CHECK(kvp.second.size() == 1);
}

TEST_CASE("dispatcher: with a backlog and short jobs, workers get batches, "
          "without batching, one job at a time" *
          doctest::timeout(10)) {
  for (auto batching : {true, false}) {
    pool::dispatch_tuning tuning;
    tuning.max_batch = batching ? 16 : 1;
    core_sim sim{opts(1, tuning)};
    sim.enqueue(0);
    sim.settle();
    sim.finish(1); // one report: the job time is known (0 here)
    sim.settle();
    for (int i = 1; i <= 40; ++i)
      sim.enqueue(i, 1s);
    sim.settle();
    sim.advance(1s);
    sim.settle();
    for (int i = 0; i < 50 && sim.core.stats().completed < 41; ++i) {
      sim.finish(1);
      sim.settle();
    }
    auto st = sim.core.stats();
    CHECK(st.completed == 41);
    if (batching)
      CHECK(st.batches > 0);
    else
      CHECK(st.batches == 0);
  }
}

TEST_CASE("dispatcher: a joined worker gets plain pull: woken, it asks, "
          "never asked for, never handed ahead, never batched" *
          doctest::timeout(10)) {
  core_sim sim{opts(1)};
  auto key = pool::test::fake_effects::fake_key(100);
  REQUIRE(!sim.core.join(pool::worker_handle{caf::actor{}, key}));
  sim.workers[100].key = 100;
  sim.settle();
  // Keep the local worker busy, then queue work: the joined one is woken.
  sim.enqueue(1);
  sim.settle();
  for (int i = 2; i <= 5; ++i)
    sim.enqueue(i, 1s);
  sim.settle();
  sim.advance(1s);
  sim.settle();
  CHECK(to_workers(sim, pool::wake_up_atom::value) >= 1);
  auto& joined = sim.workers[100];
  CHECK(joined.phase == pool::worker_phase::working);
  CHECK(joined.running.size() == 1);
  CHECK(sim.core.stats().joined == 1);
}

TEST_CASE("dispatcher: a failed attempt is retried after the backoff" *
          doctest::timeout(10)) {
  core_sim sim{opts(1).max_attempts(2).jitter(0).backoff(
      std::chrono::seconds(1), std::chrono::seconds(1))};
  sim.enqueue(5);
  sim.settle();
  REQUIRE(sim.finish(1, true));
  sim.settle();
  CHECK(sim.core.stats().retried == 1);
  sim.advance(std::chrono::seconds(1));
  sim.settle();
  REQUIRE(sim.finish(1));
  sim.settle();
  auto st = sim.core.stats();
  CHECK(st.completed == 1);
  REQUIRE(sim.outcomes.size() == 1);
  CHECK(
      sim.outcomes.begin()->second.front().get_as<caf::message>(2).get_as<int>(
          0) == 10);
}

TEST_CASE("dispatcher: lookahead: a busy worker gets its next entry while it "
          "runs and starts it without asking, and one that asks while "
          "nothing else is ready takes back the entry sent ahead to another" *
          doctest::timeout(10)) {
  pool::dispatch_tuning one_at_a_time;
  one_at_a_time.max_batch = 1;
  core_sim sim{opts(2, one_at_a_time)};
  std::map<int, int> started; // input -> starts
  std::map<uint64_t, int> runs; // worker -> attempts started
  sim.on_start = [&](uint64_t key, const std::vector<pool::work_record>& xs) {
    for (auto& x : xs) {
      ++started[x.payload.get_as<int>(0)];
      ++runs[key];
    }
  };
  for (int i = 0; i < 4; ++i)
    sim.enqueue(i);
  sim.settle();
  auto busy = sim.in_phase(pool::worker_phase::working);
  REQUIRE(busy.size() == 2);
  auto st = sim.core.stats();
  CHECK(st.sent_ahead == 2);
  CHECK(st.available == 2); // sent ahead: not started, so still available
  CHECK(st.held == 2);
  auto a = busy[0];
  auto b = busy[1];
  // b finishes and starts the entry sent ahead to it.
  auto asks = sim.fx.count_atom("queue", pool::get_work_atom::value);
  sim.finish(b);
  sim.settle();
  CHECK(sim.workers[b].phase == pool::worker_phase::working);
  CHECK(runs[b] == 2);
  // b finishes that one too and asks: nothing else is ready, so it takes
  // the entry sent ahead to a, which is still busy with its first.
  sim.finish(b);
  sim.settle();
  CHECK(sim.core.stats().taken_back == 1);
  CHECK(runs[b] == 3);
  CHECK(sim.fx.count_atom("queue", pool::get_work_atom::value) ==
        asks);
  // a finishes its first; the entry sent ahead to it is gone (withdrawn).
  for (int i = 0; i < 10 && sim.core.stats().completed < 4; ++i) {
    for (auto key : sim.in_phase(pool::worker_phase::working))
      sim.finish(key);
    sim.settle();
  }
  st = sim.core.stats();
  CHECK(st.completed == 4);
  CHECK(st.stale_replies == 0);
  CHECK(runs[a] == 1);
  for (int i = 0; i < 4; ++i)
    CHECK(started[i] == 1);
  for (auto& kvp : sim.outcomes)
    CHECK(kvp.second.size() == 1);
}
