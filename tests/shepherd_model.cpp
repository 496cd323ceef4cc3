// A randomized model test of the shepherd core (roster, admission,
// dispatcher and the rest), in the spirit of poolboy's QuickCheck model:
// random submits, job reports (successes and failures), worker deaths,
// resizes, cancels, time passing and message interleavings, against a
// simple reference of what must hold; the invariants are checked after
// every step, then everything drains and every caller must have exactly one
// outcome. The seed is printed: POOL_MODEL_SEED=<seed> replays a failure;
// POOL_MODEL_STEPS sets the steps per configuration.
#include <doctest/doctest.h>

#include <cstdlib>
#include <random>
#include <set>

#include "core_sim.hpp"

using namespace std::chrono_literals;
using pool::test::core_sim;

namespace {

uint64_t env_or(const char* name, uint64_t fallback) {
  if (auto x = std::getenv(name))
    return std::strtoull(x, nullptr, 10);
  return fallback;
}

struct model_run {
  core_sim sim;
  std::mt19937_64 rng;
  std::optional<size_t> capacity;
  int next_submit = 1;
  /// Submits sent, and the ones the shepherd refused at once.
  size_t sent = 0;

  model_run(pool::pool_options opts, uint64_t seed)
      : sim(opts.log(pool::silent_log_hook())), rng(seed),
        capacity(opts.capacity()) {
    // nop
  }

  size_t pick(size_t n) {
    return std::uniform_int_distribution<size_t>{0, n - 1}(rng);
  }

  bool chance(int percent) {
    return static_cast<int>(pick(100)) < percent;
  }

  template <class Container>
  auto any_of(const Container& xs) {
    auto i = xs.begin();
    std::advance(i, pick(xs.size()));
    return *i;
  }

  /// Jobs ended by the test, and how many of them failed.
  size_t finished = 0;
  size_t job_failures = 0;

  void step() {
    auto roll = pick(100);
    if (roll < 8) { // a submit: due now, or delayed, sometimes with a key
      auto delay =
          chance(20) ? std::chrono::milliseconds(pick(500)) : caf::timespan{0};
      auto key = chance(10) ? "k" + std::to_string(pick(5)) : std::string{};
      sim.enqueue(next_submit++, delay, key);
      ++sent;
    } else if (roll < 23) { // a running job ends, now and then failing
      auto busy = sim.in_phase(pool::worker_phase::working);
      if (!busy.empty()) {
        auto fail = chance(15);
        if (sim.finish(any_of(busy), fail)) {
          ++finished;
          job_failures += fail ? 1 : 0;
        }
      }
    } else if (roll < 24) { // a worker dies, busy or not
      std::vector<uint64_t> alive;
      for (auto& kvp : sim.workers)
        if (kvp.second.alive)
          alive.push_back(kvp.first);
      if (!alive.empty())
        sim.kill(any_of(alive));
    } else if (roll < 25) { // resize
      sim.shepherd_box.push_back(
          {0, caf::make_message(pool::resize_atom_v, uint64_t{1 + pick(6)})});
    } else if (roll < 26) { // cancel something pending
      if (!sim.core.table().empty()) {
        auto ids = sim.core.table().ids();
        sim.shepherd_box.push_back(
            {0, caf::make_message(pool::cancel_op_atom_v, any_of(ids))});
      }
    } else if (roll < 32) { // time passes
      sim.advance(std::chrono::milliseconds(pick(100)));
    } else if (roll < 67) {
      sim.shepherd_step();
    } else if (roll < 82) {
      sim.queue_step();
    } else {
      std::vector<uint64_t> ready;
      for (auto& kvp : sim.workers)
        if (kvp.second.alive && !kvp.second.mailbox.empty())
          ready.push_back(kvp.first);
      if (!ready.empty())
        sim.worker_step(any_of(ready));
    }
  }

  void check() {
    auto& roster = sim.core.roster();
    REQUIRE(roster.consistent());
    auto& table = sim.core.table();
    // Fresh operations never wait beyond the capacity; one that runs again
    // (a retry, or put back unstarted) always finds its place.
    if (capacity)
      REQUIRE(table.waiting() - table.returned() <= *capacity);
    auto st = sim.core.stats();
    // One consistent snapshot.
    REQUIRE(st.available + st.delayed + st.held + st.parked ==
            st.submitted - st.completed - st.failed - st.cancelled -
                st.deduplicated);
    REQUIRE(st.busy + st.waiting + st.sleeping == st.workers);
    // Each operation a worker holds is in that worker's hands.
    table.for_each([&](uint64_t id, const pool::operation& op) {
      if (op.phase != pool::operation_phase::held)
        return;
      auto slot = roster.get(op.holder);
      REQUIRE(slot != nullptr);
      auto held = pool::attempt_id{id, op.attempt};
      REQUIRE(std::find(slot->held.begin(), slot->held.end(), held) !=
              slot->held.end());
    });
    // No caller hears twice.
    for (auto& kvp : sim.outcomes)
      REQUIRE(kvp.second.size() == 1);
    // Parked submits are let in first come, first served: ids follow the
    // order of the submits.
    int last = 0;
    for (auto& kvp : sim.accepted) {
      REQUIRE(kvp.second > last);
      last = kvp.second;
    }
    // No attempt runs on two workers at once.
    std::set<std::pair<uint64_t, uint32_t>> running;
    for (auto& kvp : sim.workers)
      if (kvp.second.alive)
        for (auto& x : kvp.second.running)
          REQUIRE(running.emplace(x.id.operation, x.id.attempt).second);
  }

  /// Lets everything finish, then drains: every accepted operation has
  /// exactly one outcome, and the drain ends the pool.
  void finish_all() {
    for (int round = 0; round < 10000; ++round) {
      sim.settle();
      // Jobs still fail now and then: a run whose random phase started
      // few jobs (a long queue backlog meets a churn of workers: an answer
      // that comes after its worker left goes back to the queue) still
      // exercises failures and retries.
      auto busy = sim.in_phase(pool::worker_phase::working);
      for (auto key : busy) {
        auto fail = chance(15);
        if (sim.finish(key, fail)) {
          ++finished;
          job_failures += fail ? 1 : 0;
        }
      }
      if (busy.empty() && !sim.busy()) {
        if (sim.timers.empty())
          break;
        sim.advance(sim.timers.begin()->first - sim.fx.clock);
      }
      check();
    }
    sim.shepherd_box.push_back({0, caf::make_message(pool::drain_atom_v)});
    sim.settle();
    REQUIRE(sim.core.table().empty());
    REQUIRE(sim.fx.quit_called);
    for (auto& kvp : sim.accepted)
      REQUIRE(sim.outcomes.count(kvp.first) == 1);
    auto st = sim.core.stats();
    REQUIRE(st.parked == 0);
    REQUIRE(st.completed + st.failed + st.cancelled + st.deduplicated ==
            st.submitted);
  }
};

void run_model(const char* name, pool::pool_options opts) {
  auto seed = env_or("POOL_MODEL_SEED", std::random_device{}());
  auto steps = env_or("POOL_MODEL_STEPS", 10000);
  MESSAGE(name << ": seed " << seed << " (POOL_MODEL_SEED=" << seed
               << " replays it), " << steps << " steps");
  // (Deaths are random: the restart intensity is not what is tested here.)
  opts.restart_intensity(1'000'000, std::chrono::seconds(1));
  model_run run{std::move(opts), seed};
  for (uint64_t i = 0; i < steps; ++i) {
    run.step();
    run.check();
  }
  run.finish_all();
  auto st = run.sim.core.stats();
  MESSAGE(name << ": " << run.sent << " submits, " << run.finished
               << " jobs ended by the test (" << run.job_failures
               << " failed), " << to_string(st));
  // The run exercised what it is about.
  CHECK(st.completed > 0);
  CHECK(run.job_failures > 0);
  CHECK(st.retried > 0);
  CHECK(st.worker_restarts > 0);
}

} // namespace

TEST_CASE("model: the defaults, 3 workers, retries" * doctest::timeout(120)) {
  run_model("defaults", pool::pool_options{}.workers(3).max_attempts(3).backoff(
                            10ms, 100ms));
}

TEST_CASE("model: a bounded queue with parked submits" *
          doctest::timeout(120)) {
  run_model("bounded", pool::pool_options{}
                           .workers(2)
                           .capacity(4)
                           .wait_when_full(3)
                           .max_attempts(2)
                           .backoff(5ms, 5ms));
}

TEST_CASE("model: one job at a time, entries taken out ahead" *
          doctest::timeout(120)) {
  run_model("one-at-a-time",
            pool::pool_options{}.workers(4).max_batch(1).max_attempts(2));
}

TEST_CASE("model: the plain sequence, no short cuts" * doctest::timeout(120)) {
  pool::dispatch_tuning plain;
  plain.short_cuts(false);
  plain.max_batch = 1;
  run_model("plain",
            pool::pool_options{}.workers(2).dispatch(plain).max_attempts(2));
}
