// The monitors on their own, with a clock the test moves: the backlog alarm
// and autoscale growth, the overload warning for a sustained overload only,
// the idle shrink, and the snapshot.
#include <doctest/doctest.h>

#include <caf/make_message.hpp>

#include <pool/detail/monitors.hpp>

#include "fake_effects.hpp"

using namespace std::chrono_literals;

namespace {

struct fixture {
  pool::test::fake_effects fx;
  pool::pool_options opts;

  void advance(caf::timespan d) {
    fx.clock += d;
  }
};

} // namespace

TEST_CASE_FIXTURE(fixture, "monitors: the backlog alarm rises once the "
                           "backlog lasted its time and clears below it" *
                               doctest::timeout(10)) {
  opts.backlog_alarm(5s);
  pool::monitors mon{opts, fx};
  CHECK(!mon.note_available(10, 4, 4, false)); // above: since now
  REQUIRE(fx.timers.size() == 1);
  CHECK(fx.timers[0].first == 5s);
  advance(5s);
  mon.on_backlog_timer(4, 4, false);
  CHECK(mon.counters().alarms_raised == 1);
  CHECK(fx.logged("backlog alarm: 10 operations available"));
  mon.note_available(4, 4, 4, false); // equal: keeps its state
  CHECK(!fx.logged("cleared"));
  mon.note_available(3, 4, 4, false);
  CHECK(fx.logged("backlog alarm cleared"));
}

TEST_CASE_FIXTURE(fixture, "monitors: autoscaling doubles while the backlog "
                           "lasts, up to the maximum" *
                               doctest::timeout(10)) {
  opts.autoscale(1, 3, 2s, 10s);
  pool::monitors mon{opts, fx};
  CHECK(!mon.note_available(50, 1, 1, false));
  advance(2s);
  CHECK(mon.on_backlog_timer(1, 1, false) == size_t{2});
  advance(2s);
  CHECK(mon.note_available(50, 2, 2, false) == size_t{3}); // (not 4)
  advance(2s);
  CHECK(!mon.note_available(50, 3, 3, false)); // at the maximum
  // Never while draining.
  pool::monitors draining{opts, fx};
  draining.note_available(50, 1, 1, true);
  advance(5s);
  CHECK(!draining.on_backlog_timer(1, 1, true));
}

TEST_CASE_FIXTURE(fixture, "monitors: only a sustained overload warns, at "
                           "most once per interval" *
                               doctest::timeout(10)) {
  opts.overload_warning(10, 60s).overload_sustain(5s);
  pool::monitors mon{opts, fx};
  mon.note_waiting(11, 1);
  CHECK(mon.counters().overload_warnings == 0);
  advance(4s);
  mon.note_waiting(3, 1); // drained below: the clock starts over
  advance(1s);
  mon.on_overload_timer(1);
  CHECK(mon.counters().overload_warnings == 0);
  mon.note_waiting(11, 1);
  advance(5s);
  mon.on_overload_timer(1);
  CHECK(mon.counters().overload_warnings == 1);
  CHECK(fx.logged("overloaded: 11 operations waiting for 5s, threshold 10"));
  advance(30s);
  mon.note_waiting(12, 1);
  CHECK(mon.counters().overload_warnings == 1);
  advance(30s);
  mon.note_waiting(12, 1); // quiet: the interval's timer decides
  CHECK(mon.counters().overload_warnings == 1);
  mon.on_overload_timer(1); // still overloaded when the interval ends
  CHECK(mon.counters().overload_warnings == 2);
  CHECK(mon.counters().waiting_high == 12);
}

TEST_CASE_FIXTURE(fixture, "monitors: the idle timer shrinks by the workers "
                           "asleep for shrink_after, down to the minimum" *
                               doctest::timeout(10)) {
  opts.autoscale(1, 4, 2s, 10s);
  pool::monitors mon{opts, fx};
  pool::worker_roster roster;
  roster.set_configured(4);
  for (size_t i = 1; i <= 4; ++i)
    roster.add(pool::worker_handle{{}, reinterpret_cast<const void*>(i * 16)},
               false, fx.clock + std::chrono::seconds(i));
  advance(12s); // workers 1 and 2 asleep for 10 s or more
  CHECK(mon.on_idle_timer(roster, false) == size_t{2});
  advance(10s);
  CHECK(mon.on_idle_timer(roster, false) == size_t{1}); // (not below min)
}

TEST_CASE_FIXTURE(fixture, "monitors: the snapshot takes its figures from "
                           "the units" *
                               doctest::timeout(10)) {
  pool::monitors mon{opts, fx};
  pool::worker_roster roster;
  roster.set_configured(2);
  auto w = roster.add(pool::worker_handle{{}, reinterpret_cast<void*>(16)},
                      false, fx.clock);
  roster.add(pool::worker_handle{{}, reinterpret_cast<void*>(32)}, false,
             fx.clock);
  roster.set_phase(w, pool::worker_phase::working, fx.clock);
  pool::operation_table table;
  pool::operation op;
  op.stamp = fx.clock;
  auto a = table.add(op, fx.clock);
  op.stamp = fx.clock + 1h;
  table.add(op, fx.clock);
  op.stamp = fx.clock;
  auto c = table.add(op, fx.clock);
  table.hold(c, w, fx.clock);
  static_cast<void>(a);
  pool::admission adm{std::nullopt, 0};
  auto st = mon.snapshot(roster, table, adm, 0);
  CHECK(st.workers == 2);
  CHECK(st.busy == 1);
  CHECK(st.sleeping == 1);
  CHECK(st.available == 1);
  CHECK(st.delayed == 1);
  CHECK(st.held == 1);
  CHECK(st.configured == 2);
}
