// Operations that ended without a result, as a status query and the jobs
// view read them: failed (the dead set), cancelled, stopped by a drain's
// deadline, and discarded, each kept within the dead set's bounds.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include <caf/make_message.hpp>

#include "asking.hpp"
#include "fake_effects.hpp"
#include "pool/detail/shepherd_core.hpp"
#include "pool/errors.hpp"
#include "pool/jobs.hpp"
#include "pool/operation_record.hpp"

using namespace std::chrono_literals;
using pool::job_state;
using pool::operation_state;

namespace {

int fails_below_zero(int x) {
  if (x < 0)
    throw std::runtime_error("negative input " + std::to_string(x));
  return x;
}

struct ended_fixture : pool::test::asking {
  caf::actor p;

  explicit ended_fixture(pool::dead_set_options bounds = {2, 10min}) {
    p = spawn_with(fails_below_zero,
                   pool::pool_options{}.workers(1).max_attempts(1).dead_set(
                       bounds));
    run();
  }

  uint64_t submit(int x, caf::timespan delay = {}) {
    return ask_for<uint64_t>(
        p, caf::make_message(pool::enqueue_with_atom_v,
                             pool::job_options{}.delay(delay), x));
  }

  // The record `op_status` answers, or an error.
  caf::expected<pool::operation_record> status(uint64_t id) {
    caf::expected<pool::operation_record> result{caf::error{}};
    auto query = self->request(p, caf::infinite, pool::op_status_atom_v, id);
    run();
    query.receive(
      [&](pool::operation_record& rec) { result = std::move(rec); },
      [&](caf::error& err) { result = std::move(err); });
    return result;
  }

  std::vector<uint64_t> listed(job_state state) {
    pool::job_filter f;
    f.state = state;
    auto pg = ask_for<pool::job_page>(p,
                                      caf::make_message(pool::list_jobs_v, f));
    std::vector<uint64_t> result;
    for (auto& x : pg.jobs) {
      CHECK(x.state == state);
      result.push_back(x.id);
    }
    return result;
  }

  pool::jobs_acted act(pool::discard_jobs_atom, uint64_t id) {
    pool::job_filter f;
    f.id = id;
    return ask_for<pool::jobs_acted>(
        p, caf::make_message(pool::discard_jobs_v, f));
  }
};

// Submits one operation to `core` (its workers never ask for work) and
// drains it with a deadline that passes: returns the operation's id.
uint64_t stop_one(pool::shepherd_core& core) {
  core.start();
  pool::submission sub;
  sub.payload = caf::make_message(7);
  sub.tracked = true;
  core.submit(std::move(sub));
  uint64_t id = 0;
  core.table().for_each([&](uint64_t x, const pool::operation&) { id = x; });
  REQUIRE(id != 0);
  core.drain(1s, caf::response_promise{});
  core.timer(pool::timer_event{pool::timer_kind::drain, {}, {}});
  CHECK(core.table().empty());
  return id;
}

} // namespace

TEST_CASE_FIXTURE(ended_fixture,
                  "op_status says failed for a job in the dead set, discarded "
                  "once discarded, and unknown once the bounds drop its note" *
                      doctest::timeout(30)) {
  auto a = submit(-1);
  auto b = submit(-2);
  run();
  auto rec = status(a);
  REQUIRE(rec);
  CHECK(rec->state == operation_state::failed);
  CHECK(rec->payload.get_as<int>(0) == -1);
  REQUIRE(rec->history.size() == 1);
  CHECK(pool::describe(rec->error).find("negative input -1")
        != std::string::npos);
  CHECK(act(pool::discard_jobs_v, a).ids == std::vector<uint64_t>{a});
  rec = status(a);
  REQUIRE(rec);
  CHECK(rec->state == operation_state::discarded);
  CHECK(pool::to_string(rec->state) == "discarded");
  CHECK(listed(job_state::failed) == std::vector<uint64_t>{b});
  // The notes have the dead set's count (2): a third discard drops the
  // first one's.
  CHECK(act(pool::discard_jobs_v, b).ids.size() == 1);
  auto c = submit(-3);
  run();
  CHECK(act(pool::discard_jobs_v, c).ids.size() == 1);
  auto d = submit(-4);
  run();
  rec = status(b);
  REQUIRE(rec);
  CHECK(rec->state == operation_state::discarded);
  CHECK(pool::is(status(a).error(), pool::pool_errc::unknown_operation));
  rec = status(d);
  REQUIRE(rec);
  CHECK(rec->state == operation_state::failed);
  // ... and its age (10 min).
  advance(11min);
  CHECK(pool::is(status(b).error(), pool::pool_errc::unknown_operation));
  CHECK(pool::is(status(d).error(), pool::pool_errc::unknown_operation));
  CHECK(listed(job_state::failed).empty());
}

TEST_CASE_FIXTURE(ended_fixture,
                  "a cancelled operation is kept as cancelled, listed by its "
                  "state, not counted as dead, and bounded as the others" *
                      doctest::timeout(30)) {
  std::vector<uint64_t> ids;
  for (int i = 0; i < 3; ++i)
    ids.push_back(submit(i, 1h));
  CHECK(!ask(p, caf::make_message(pool::cancel_op_atom_v, ids[0])));
  auto rec = status(ids[0]);
  REQUIRE(rec);
  CHECK(rec->state == operation_state::cancelled);
  CHECK(pool::is(rec->error, pool::pool_errc::cancelled));
  CHECK(listed(job_state::cancelled) == std::vector<uint64_t>{ids[0]});
  CHECK(listed(job_state::failed).empty());
  auto st = stats_of(p);
  CHECK(st.dead == 0);
  CHECK(st.cancelled == 1);
  // Three cancelled into a set of two: the oldest goes.
  CHECK(!ask(p, caf::make_message(pool::cancel_op_atom_v, ids[1])));
  CHECK(!ask(p, caf::make_message(pool::cancel_op_atom_v, ids[2])));
  CHECK(listed(job_state::cancelled)
        == std::vector<uint64_t>{ids[1], ids[2]});
  CHECK(pool::is(status(ids[0]).error(), pool::pool_errc::unknown_operation));
  // A retry by id runs it again as a new operation; "all failed" leaves
  // the cancelled ones alone.
  pool::job_filter f;
  f.state = job_state::failed;
  CHECK(ask_for<pool::jobs_acted>(p, caf::make_message(pool::retry_jobs_v, f))
          .ids.empty());
  f = {};
  f.id = ids[1];
  auto acted = ask_for<pool::jobs_acted>(
    p, caf::make_message(pool::retry_jobs_v, f));
  REQUIRE(acted.new_ids.size() == 1);
  run();
  CHECK(listed(job_state::cancelled) == std::vector<uint64_t>{ids[2]});
  CHECK(stats_of(p).completed == 1); // (input 1)
}

TEST_CASE("an operation a drain's deadline stopped is kept as stopped, and "
          "op_status and the jobs view say so" *
          doctest::timeout(10)) {
  pool::test::fake_effects fx;
  pool::shepherd_core core{pool::pool_options{}.workers(1), false, fx};
  auto id = stop_one(core);
  CHECK(fx.quit_called); // (nothing else was pending)
  core.op_status(id, caf::response_promise{});
  REQUIRE(fx.log_.back().what == "deliver");
  auto& msg = fx.log_.back().msg;
  REQUIRE(msg.match_elements<pool::operation_record>());
  auto& rec = msg.get_as<pool::operation_record>(0);
  CHECK(rec.state == operation_state::stopped);
  CHECK(pool::is(rec.error, pool::pool_errc::drain_deadline));
  CHECK(rec.payload.get_as<int>(0) == 7);
  pool::job_filter f;
  f.state = job_state::stopped;
  auto pg = core.jobs(f);
  REQUIRE(pg);
  REQUIRE(pg->jobs.size() == 1);
  CHECK(pg->jobs[0].id == id);
  CHECK(pg->jobs[0].last_error.find("drain") != std::string::npos);
  CHECK(core.stats().dead == 0); // stopped, not failed
  // Without a dead set, nothing is kept: unknown.
  pool::test::fake_effects fx2;
  pool::shepherd_core off{
    pool::pool_options{}.workers(1).dead_set({0, caf::timespan{0}}), false,
    fx2};
  CHECK(stop_one(off) == id);
  off.op_status(id, caf::response_promise{});
  auto& last = fx2.log_.back().msg;
  REQUIRE(last.match_elements<caf::error>());
  CHECK(pool::is(last.get_as<caf::error>(0),
                 pool::pool_errc::unknown_operation));
}
