// The jobs view (`list_jobs`): a pool's operations by state, filtered and
// paged, on CAF's testing scheduler.
#include <doctest/doctest.h>

#include <map>

#include "deterministic.hpp"
#include "pool/events.hpp"
#include "pool/jobs.hpp"

using namespace std::chrono_literals;
using pool::job_state;
using pool::test::deterministic;

namespace {

int fail_negative(int x) {
  if (x < 0)
    throw std::runtime_error("negative input " + std::to_string(x));
  return x;
}

struct jobs_fixture : deterministic {
  pool::job_page page(const caf::actor& p, pool::job_filter f = {}) {
    pool::job_page result;
    auto query = self->request(p, caf::infinite, pool::list_jobs_v, f);
    run();
    query.receive([&](pool::job_page& x) { result = std::move(x); },
                  [](caf::error& err) { FAIL(pool::describe(err)); });
    return result;
  }

  std::map<uint64_t, pool::job_info> by_id(const pool::job_page& pg) {
    std::map<uint64_t, pool::job_info> result;
    for (auto& x : pg.jobs)
      result[x.id] = x;
    return result;
  }
};

} // namespace

TEST_CASE_FIXTURE(jobs_fixture,
                  "the jobs view shows each operation's state, attempt, "
                  "priority, keys, input and last error" *
                      doctest::timeout(30)) {
  auto p = spawn_with(fail_negative, pool::pool_options{}
                                         .workers(1)
                                         .max_attempts(3)
                                         .backoff(10s, 10s)
                                         // One job per hand-out, none
                                         // ahead: the held one is 1 only.
                                         .max_batch(1)
                                         .lookahead(false));
  run();
  // A failing one first: it waits 10 s for its second attempt.
  self->send(p, pool::enqueue_atom_v, -1);
  run();
  frozen = "pool.worker"; // the worker stays in its next job
  self->send(p, pool::enqueue_atom_v, 1); // running
  self->send(p, pool::enqueue_atom_v, 2); // waiting
  self->send(p, pool::submit_after_atom_v, caf::timespan{1h}, 3); // delayed
  self->send(p, pool::enqueue_with_atom_v,
             pool::job_options{}.priority(5).concurrency_key("k"), 4);
  run();
  auto pg = page(p);
  CHECK(pg.total == 5);
  CHECK(pg.next_after == 0);
  REQUIRE(pg.jobs.size() == 5);
  auto jobs = by_id(pg);
  auto first = pg.jobs.front().id;
  CHECK(jobs[first].state == job_state::retrying);
  CHECK(jobs[first].attempt == 2);
  CHECK(jobs[first].last_error.find("negative input -1") != std::string::npos);
  CHECK(jobs[first].since < caf::timespan{0}); // due in the future
  CHECK(jobs[first + 1].state == job_state::running);
  CHECK(jobs[first + 1].holder.find("worker") == 0);
  CHECK(jobs[first + 1].payload.find('1') != std::string::npos);
  CHECK(jobs[first + 2].state == job_state::waiting);
  CHECK(jobs[first + 3].state == job_state::delayed);
  CHECK(jobs[first + 4].priority == 5);
  CHECK(jobs[first + 4].concurrency_key == "k");
  // Filters: by state, priority, key and id.
  pool::job_filter f;
  f.state = job_state::waiting;
  auto waiting = page(p, f);
  CHECK(waiting.jobs.size() == 2); // 2 and 4
  f = {};
  f.priority = 5;
  REQUIRE(page(p, f).jobs.size() == 1);
  f = {};
  f.key = "k";
  CHECK(page(p, f).jobs.at(0).id == first + 4);
  f = {};
  f.id = first + 2;
  auto one = page(p, f);
  REQUIRE(one.jobs.size() == 1);
  CHECK(one.jobs[0].id == first + 2);
  f.id = 999'999;
  CHECK(page(p, f).jobs.empty());
  // Without inputs (what the HTTP endpoint does without the token).
  f = {};
  f.payloads = false;
  CHECK(page(p, f).jobs.at(0).payload.empty());
  frozen.clear();
  run();
}

TEST_CASE_FIXTURE(jobs_fixture,
                  "pages follow each other by id to the end, and a bad filter "
                  "is refused" *
                      doctest::timeout(30)) {
  auto p = spawn(fail_negative, 1);
  run();
  CHECK(!ask(p, caf::make_message(pool::pause_atom_v)));
  for (int i = 0; i < 7; ++i)
    self->send(p, pool::enqueue_atom_v, i);
  run();
  std::vector<uint64_t> seen;
  pool::job_filter f;
  f.limit = 3;
  for (int pages = 0; pages < 10; ++pages) {
    auto pg = page(p, f);
    for (auto& x : pg.jobs)
      seen.push_back(x.id);
    if (pg.next_after == 0)
      break;
    f.after = pg.next_after;
  }
  REQUIRE(seen.size() == 7);
  CHECK(std::is_sorted(seen.begin(), seen.end()));
  f = {};
  f.limit = 0;
  auto err = ask(p, caf::make_message(pool::list_jobs_v, f));
  CHECK(pool::is(err, pool::pool_errc::invalid_option));
  CHECK(pool::describe(err).find("limit") != std::string::npos);
  CHECK(pool::job_state_from("retrying") == job_state::retrying);
  CHECK(!pool::job_state_from("dead"));
  CHECK(!ask(p, caf::make_message(pool::resume_atom_v)));
}

namespace {

/// An input without `inspect`: CAF has no text for it.
struct render_job {
  std::string command;
  int exit_code = 0;
};

} // namespace

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(render_job)

TEST_CASE_FIXTURE(jobs_fixture,
                  "describe_values: an input type says how it reads in the "
                  "jobs view and the events, instead of CAF's text" *
                      doctest::timeout(30)) {
  // Before: CAF's own rendering of a type it cannot print.
  auto before = pool::describe_message(
      caf::make_message(render_job{"./job.sh 86", 3}, 7));
  CHECK(before.find("job.sh") == std::string::npos);
  pool::describe_values<render_job>([](const render_job& x) {
    return x.command + " (exit " + std::to_string(x.exit_code) + ")";
  });
  CHECK(pool::describe_message(caf::make_message(render_job{"./job.sh 86", 3},
                                                 7))
        == "(./job.sh 86 (exit 3), 7)");
  // Other types keep CAF's text; an empty message reads as before.
  CHECK(pool::describe_message(caf::make_message(7, std::string{"x"}))
        == caf::to_string(caf::make_message(7, std::string{"x"})));
  CHECK(pool::describe_message(caf::message{})
        == caf::to_string(caf::message{}));
  // A describer that throws shows why, and takes nothing down.
  pool::describe_values<int>(
      [](const int&) -> std::string { throw std::runtime_error("no ints"); });
  CHECK(pool::describe_message(caf::make_message(1))
        == "(<describe failed: no ints>)");
  pool::describe_values<int>([](const int& x) { return "#" + std::to_string(x); });
  // Through a pool: the jobs view shows the input as described.
  auto p = spawn_with([](render_job x) { return x.exit_code; },
                      pool::pool_options{}.workers(1).lookahead(false));
  run();
  frozen = "pool.worker";
  self->send(p, pool::enqueue_atom_v, render_job{"./job.sh 1", 0});
  self->send(p, pool::enqueue_atom_v, render_job{"./job.sh 2", 0});
  run();
  auto pg = page(p);
  REQUIRE(pg.jobs.size() == 2);
  CHECK(pg.jobs[1].payload == "(./job.sh 2 (exit 0))");
  pool::pool_event done;
  done.kind = pool::event_kind::completed;
  done.operation = 9;
  done.result = caf::make_message(4);
  CHECK(pool::to_string(done) == "completed op#9 result=(#4)");
  frozen.clear();
  run();
}
