// The jobs view of pools on one shared PostgreSQL queue, against a private
// server: whichever pool serves the page lists every pool's operations
// (waiting, delayed, failed for good), and retries or discards another
// pool's failures; a discarded one reads as discarded everywhere; the
// HTTP endpoint of one process shows and retries another's failures.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "pg_fixture.hpp"
#include "pool/http.hpp"
#include "real_system.hpp"

using namespace std::chrono_literals;
using pool::job_state;

namespace {

// Fails negative inputs until healed.
struct healing {
  std::shared_ptr<std::atomic<bool>> healed =
    std::make_shared<std::atomic<bool>>(false);

  auto job() const {
    return [healed = healed](int x) -> int {
      if (x < 0 && !*healed)
        throw std::runtime_error("negative input " + std::to_string(x));
      return x;
    };
  }
};

template <class T>
T ask(caf::scoped_actor& self, const caf::actor& p, caf::message msg) {
  T result;
  self->request(p, 10s, std::move(msg))
    .receive([&](T& x) { result = std::move(x); },
             [](caf::error& err) { FAIL(pool::describe(err)); });
  return result;
}

pool::job_page page_of(caf::scoped_actor& self, const caf::actor& p,
                       std::optional<job_state> state) {
  pool::job_filter f;
  f.state = state;
  return ask<pool::job_page>(self, p, caf::make_message(pool::list_jobs_v, f));
}

std::vector<uint64_t> ids_of(const pool::job_page& page) {
  std::vector<uint64_t> result;
  for (auto& x : page.jobs)
    result.push_back(x.id);
  return result;
}

// The status of `id` as pool `p` tells it; none while it does not know it
// (its store has no row of it yet). Read through the pool's store after
// whatever the pool had written before: a sync point.
std::optional<pool::operation_state>
state_of(caf::scoped_actor& self, const caf::actor& p, uint64_t id) {
  std::optional<pool::operation_state> result;
  self->request(p, 10s, pool::op_status_atom_v, id)
    .receive([&](pool::operation_record& x) { result = x.state; },
             [](caf::error&) {});
  return result;
}

// A pool on the cluster's queue running `h`'s job, one attempt per job.
caf::actor spawn_on(caf::actor_system& sys, const pool::test::pg_cluster& pg,
                    const healing& h) {
  auto p = pool::spawn_pool(sys, h.job(),
                            pool::pool_options{}
                              .workers(1)
                              .max_attempts(1)
                              .postgres(pg.conninfo())
                              .log(pool::silent_log_hook()));
  REQUIRE_MESSAGE(p, (p ? std::string{} : pool::describe(p.error())));
  return *p;
}

// Enqueues `x` at pool `p`, whose job fails it for good; returns once the
// caller heard so (at most 20 s) and the failure is in the store.
uint64_t enqueue_failing(caf::scoped_actor& self, const caf::actor& p, int x,
                         pool::job_options opts = {}) {
  auto id = ask<uint64_t>(
    self, p, caf::make_message(pool::enqueue_with_atom_v, opts, x));
  bool failed = false;
  self->receive(
    [&](pool::op_failed_atom, uint64_t of, caf::error&) { failed = of == id; },
    caf::after(20s) >> [] {});
  REQUIRE(failed);
  REQUIRE(state_of(self, p, id) == pool::operation_state::failed);
  return id;
}

} // namespace

TEST_CASE("pools on one PostgreSQL queue each list every pool's jobs, and "
          "retry or discard another pool's failures" *
          doctest::timeout(120)) {
  pool::test::pg_cluster pg;
  pool::test::real_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  healing h;
  auto a = spawn_on(sys, pg, h);
  auto b = spawn_on(sys, pg, h);
  // Pool a accepts them all; either pool may run them.
  auto first = enqueue_failing(self, a, -1);
  auto second = enqueue_failing(self, a, -2);
  auto later = ask<uint64_t>(
    self, a,
    caf::make_message(pool::enqueue_with_atom_v,
                      pool::job_options{}.delay(1h), 3));
  // Pool b lists pool a's failures and its delayed job.
  auto failed = page_of(self, b, job_state::failed);
  CHECK(ids_of(failed) == std::vector<uint64_t>{first, second});
  CHECK(failed.jobs[0].last_error.find("negative input -1")
        != std::string::npos);
  CHECK(failed.jobs[0].payload == "(-1)");
  auto delayed = page_of(self, b, job_state::delayed);
  CHECK(ids_of(delayed) == std::vector<uint64_t>{later});
  CHECK(page_of(self, b, std::nullopt).total == 1);
  // Pool a lists the same, whichever pool ran them.
  CHECK(ids_of(page_of(self, a, job_state::failed)) == ids_of(failed));
  // Pool b retries the first as a new operation, which runs.
  h.healed->store(true);
  pool::job_filter f;
  f.id = first;
  auto retried = ask<pool::jobs_acted>(
    self, b, caf::make_message(pool::retry_jobs_v, f));
  REQUIRE(retried.ids == std::vector<uint64_t>{first});
  REQUIRE(retried.new_ids.size() == 1);
  auto again = retried.new_ids.front();
  REQUIRE(again != 0);
  self->request(b, 20s, pool::wait_idle_atom_v)
    .receive([] {}, [](caf::error& err) { FAIL(pool::describe(err)); });
  static_cast<void>(state_of(self, b, again)); // (after b's commits)
  CHECK(state_of(self, a, again) == pool::operation_state::done);
  // A retry that comes second finds nothing left to take.
  CHECK(ask<pool::jobs_acted>(self, a,
                              caf::make_message(pool::retry_jobs_v, f))
          .ids.empty());
  // Pool a discards the second: a note that both pools read.
  f.id = second;
  auto discarded = ask<pool::jobs_acted>(
    self, a, caf::make_message(pool::discard_jobs_v, f));
  CHECK(discarded.ids == std::vector<uint64_t>{second});
  CHECK(state_of(self, a, second) == pool::operation_state::discarded);
  CHECK(state_of(self, b, second) == pool::operation_state::discarded);
  CHECK(page_of(self, b, job_state::failed).jobs.empty());
  CHECK(page_of(self, a, job_state::failed).jobs.empty());
  for (auto& p : {a, b})
    self->send_exit(p, caf::exit_reason::user_shutdown);
}

TEST_CASE("the HTTP page of one process lists and retries the failures of "
          "another process's pool on the same queue" *
          doctest::timeout(120)) {
  using json = nlohmann::json;
  pool::test::pg_cluster pg;
  pool::test::real_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  healing h;
  auto a = spawn_on(sys, pg, h);
  auto b = spawn_on(sys, pg, h);
  // Only pool b is served; pool a accepts the job.
  const std::string token = "0123456789abcdef-operator";
  pool::http_options opts;
  opts.token = token;
  opts.log = pool::silent_log_hook();
  auto ep = pool::serve_http(sys, {{"b", b}}, opts);
  REQUIRE_MESSAGE(ep, pool::describe(ep.error()));
  httplib::Client cli{"127.0.0.1", (*ep)->port()};
  cli.set_read_timeout(10, 0);
  httplib::Headers bearer{{"Authorization", "Bearer " + token}};
  auto id = enqueue_failing(self, a, -5);
  auto listed = cli.Get("/api/pools/b/jobs?state=failed", bearer);
  REQUIRE(listed);
  REQUIRE_EQ(listed->status, 200);
  auto page = json::parse(listed->body);
  REQUIRE_EQ(page["jobs"].size(), 1u);
  auto& job = page["jobs"][0];
  CHECK_EQ(job["id"].get<uint64_t>(), id);
  CHECK_EQ(job["payload"], "(-5)");
  CHECK_NE(job["last_error"].get<std::string>().find("negative input -5"),
           std::string::npos);
  // Retried through pool b's endpoint: taken from the queue, run anew.
  h.healed->store(true);
  auto path = "/api/pools/b/jobs/" + std::to_string(id) + "/retry";
  auto res = cli.Post(path.c_str(), bearer, "{}", "application/json");
  REQUIRE(res);
  REQUIRE_EQ(res->status, 200);
  auto acted = json::parse(res->body);
  CHECK_EQ(acted["ids"], json::array({id}));
  CHECK(json::parse(cli.Get("/api/pools/b/jobs?state=failed", bearer)->body)
          ["jobs"]
            .empty());
  // A second retry, now through pool a's protocol, finds it gone.
  pool::job_filter f;
  f.id = id;
  CHECK(ask<pool::jobs_acted>(self, a,
                              caf::make_message(pool::retry_jobs_v, f))
          .ids.empty());
  ep->reset();
  for (auto& p : {a, b})
    self->send_exit(p, caf::exit_reason::user_shutdown);
}
