// The HTTP endpoint's jobs view (actors/src/http_jobs.cpp): GET
// /api/pools/<name>/jobs against a real pool on 127.0.0.1.
#include <doctest/doctest.h>

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

  fixture() {
    auto p = pool::spawn_pool(
        sys, [](int x) { return x; },
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
  CHECK_NE(bad->body.find("running, waiting, delayed or retrying"),
           std::string::npos);
  CHECK_EQ(cli.Get("/api/pools/main/jobs?limit=5000")->status, 400);
  CHECK_EQ(cli.Get("/api/pools/nope/jobs")->status, 404);
  caf::scoped_actor self{f.sys};
  self->request(f.pool, 10s, pool::resume_atom_v).receive([] {}, [](caf::error&) {});
}
