// The HTTP endpoint's jobs view (actors/src/http_jobs.cpp): GET
// /api/pools/<name>/jobs, and retry and discard of failed jobs, against a
// real pool on 127.0.0.1.
#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "pool/http.hpp"
#include "real_system.hpp"

using namespace std::chrono_literals;
using json = nlohmann::json;
using pool::test::real_config;

namespace {

constexpr const char* token = "0123456789abcdef-operator";

httplib::Headers bearer(const std::string& tok) {
  return {{"Authorization", "Bearer " + tok}};
}

struct fixture {
  real_config cfg;
  caf::actor_system sys{cfg};
  caf::actor pool;
  std::unique_ptr<pool::http_endpoint> endpoint;
  /// Inputs below zero fail until healed.
  std::shared_ptr<std::atomic<bool>> healed =
      std::make_shared<std::atomic<bool>>(false);

  fixture() {
    auto p = pool::spawn_pool(
        sys,
        [healed = healed](int x) {
          if (x < 0 && !*healed)
            throw std::runtime_error("negative input " + std::to_string(x));
          return x;
        },
        pool::pool_options{}.workers(2).log(pool::silent_log_hook()));
    REQUIRE(p);
    pool = *p;
    pool::http_options opts;
    opts.token = token;
    opts.sample_interval = 20ms;
    opts.log = pool::silent_log_hook();
    auto ep = pool::serve_http(sys, {{"main", pool}}, opts);
    REQUIRE_MESSAGE(ep, pool::describe(ep.error()));
    endpoint = std::move(*ep);
  }

  ~fixture() {
    endpoint.reset();
    caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
  }

  httplib::Client client() const {
    httplib::Client cli{"127.0.0.1", endpoint->port()};
    cli.set_read_timeout(10, 0);
    return cli;
  }
};

} // namespace

TEST_CASE("the jobs view lists a pool's operations by state, inputs only "
          "with the token" *
          doctest::timeout(60)) {
  fixture f;
  auto cli = f.client();
  {
    caf::scoped_actor self{f.sys};
    self->request(f.pool, 10s, pool::pause_atom_v).receive([] {}, [](caf::error&) {});
    for (int i = 0; i < 5; ++i)
      self->send(f.pool, pool::enqueue_atom_v, 100 + i);
  }
  // The pool takes the five (the view reads what it holds).
  json page;
  for (int i = 0; i < 500; ++i) {
    auto res = cli.Get("/api/pools/main/jobs?state=waiting&limit=2");
    REQUIRE(res);
    REQUIRE_EQ(res->status, 200);
    page = json::parse(res->body);
    if (page["total"] == 5)
      break;
    std::this_thread::sleep_for(20ms);
  }
  CHECK_EQ(page["total"], 5);
  REQUIRE_EQ(page["jobs"].size(), 2u);
  CHECK_EQ(page["jobs"][0]["state"], "waiting");
  CHECK_FALSE(page["jobs"][0].contains("payload")); // no token: no inputs
  CHECK_GT(page["next_after"].get<uint64_t>(), 0u);
  auto next = cli.Get(("/api/pools/main/jobs?state=waiting&after="
                       + std::to_string(page["next_after"].get<uint64_t>()))
                        .c_str(),
                      bearer(token));
  REQUIRE(next);
  auto rest = json::parse(next->body);
  CHECK_EQ(rest["jobs"].size(), 3u);
  CHECK_NE(rest["jobs"][0]["payload"].get<std::string>().find("10"),
           std::string::npos);
  // Bad queries and unknown pools are refused with the reason.
  auto bad = cli.Get("/api/pools/main/jobs?state=dead");
  REQUIRE(bad);
  CHECK_EQ(bad->status, 400);
  CHECK_NE(bad->body.find("running, waiting, delayed, retrying, failed, cancelled or stopped"),
           std::string::npos);
  CHECK_EQ(cli.Get("/api/pools/main/jobs?limit=5000")->status, 400);
  CHECK_EQ(cli.Get("/api/pools/nope/jobs")->status, 404);
  caf::scoped_actor self{f.sys};
  self->request(f.pool, 10s, pool::resume_atom_v).receive([] {}, [](caf::error&) {});
}

TEST_CASE("failed jobs are retried and discarded over HTTP, one by id or all "
          "matching a filter, with the operator token only" *
          doctest::timeout(60)) {
  fixture f;
  auto cli = f.client();
  std::vector<uint64_t> ids;
  {
    // Each caller hears of the failure once the job is in the dead set.
    caf::scoped_actor self{f.sys};
    for (int x : {-1, -2, -3}) {
      self->request(f.pool, 10s, pool::submit_atom_v, x)
          .receive([](int) { FAIL("the job should fail"); },
                   [](caf::error& err) {
                     CHECK(pool::is(err, pool::pool_errc::operation_failed));
                   });
    }
  }
  auto listed = cli.Get("/api/pools/main/jobs?state=failed", bearer(token));
  REQUIRE(listed);
  REQUIRE_EQ(listed->status, 200);
  auto page = json::parse(listed->body);
  REQUIRE_EQ(page["jobs"].size(), 3u);
  for (auto& job : page["jobs"])
    ids.push_back(job["id"].get<uint64_t>());
  auto& first = page["jobs"][0];
  CHECK_EQ(first["state"], "failed");
  CHECK_NE(first["last_error"].get<std::string>().find("negative input -1"),
           std::string::npos);
  REQUIRE_EQ(first["history"].size(), 1u);
  CHECK_EQ(first["history"][0]["attempt"], 1);
  auto one = "/api/pools/main/jobs/" + std::to_string(ids[0]) + "/retry";
  // The token is required: none, a wrong one.
  auto res = cli.Post(one.c_str(), "{}", "application/json");
  REQUIRE(res);
  CHECK_EQ(res->status, 401);
  res = cli.Post(one.c_str(), bearer("wrong-token-0123456789"), "{}",
                 "application/json");
  REQUIRE(res);
  CHECK_EQ(res->status, 403);
  CHECK_EQ(
      json::parse(cli.Get("/api/pools/main/jobs?state=failed")->body)["jobs"]
          .size(),
      3u);
  // With it: retried, and it runs to success.
  *f.healed = true;
  res = cli.Post(one.c_str(), bearer(token), "{}", "application/json");
  REQUIRE(res);
  REQUIRE_EQ(res->status, 200);
  auto acted = json::parse(res->body);
  CHECK_EQ(acted["ids"], json::array({ids[0]}));
  REQUIRE_EQ(acted["new_ids"].size(), 1u);
  CHECK_GT(acted["new_ids"][0].get<uint64_t>(), ids[2]);
  CHECK_NE(acted["note"].get<std::string>().find("wait no more"),
           std::string::npos);
  {
    caf::scoped_actor self{f.sys};
    self->request(f.pool, 10s, pool::wait_idle_atom_v)
        .receive([] {}, [](caf::error& err) { FAIL(pool::describe(err)); });
    pool::pool_stats st;
    self->request(f.pool, 10s, pool::pool_stats_atom_v)
        .receive([&](pool::pool_stats& x) { st = x; },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
    CHECK_EQ(st.completed, 1u);
  }
  // Gone from the dead set: a second retry finds nothing.
  res = cli.Post(one.c_str(), bearer(token), "{}", "application/json");
  REQUIRE(res);
  CHECK_EQ(res->status, 404);
  // Bad filters and ids are refused with the reason.
  res = cli.Post("/api/pools/main/jobs/retry?state=waiting", bearer(token),
                 "{}", "application/json");
  REQUIRE(res);
  CHECK_EQ(res->status, 400);
  CHECK_NE(res->body.find("failed jobs only"), std::string::npos);
  res = cli.Post("/api/pools/main/jobs/discard?limit=x", bearer(token), "{}",
                 "application/json");
  REQUIRE(res);
  CHECK_EQ(res->status, 400);
  CHECK_EQ(cli.Post("/api/pools/nope/jobs/retry", bearer(token), "{}",
                    "application/json")
               ->status,
           404);
  // The filter form acts on every page: a limit (a page's size) is
  // refused, not taken as a cap; after is honoured as a listing does.
  res = cli.Post("/api/pools/main/jobs/discard?state=failed&limit=1",
                 bearer(token), "{}", "application/json");
  REQUIRE(res);
  CHECK_EQ(res->status, 400);
  CHECK_NE(res->body.find("every page"), std::string::npos);
  auto after = "/api/pools/main/jobs/discard?state=failed&after="
               + std::to_string(ids[1]);
  res = cli.Post(after.c_str(), bearer(token), "{}", "application/json");
  REQUIRE(res);
  REQUIRE_EQ(res->status, 200);
  CHECK_EQ(json::parse(res->body)["ids"], json::array({ids[2]}));
  // Every failed job left.
  res = cli.Post("/api/pools/main/jobs/discard?state=failed", bearer(token),
                 "{}", "application/json");
  REQUIRE(res);
  REQUIRE_EQ(res->status, 200);
  CHECK_EQ(json::parse(res->body)["ids"], json::array({ids[1]}));
  CHECK_EQ(
      json::parse(cli.Get("/api/pools/main/jobs?state=failed")->body)["jobs"]
          .size(),
      0u);
}
