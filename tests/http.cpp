// The operators' HTTP endpoint against a running pool, with real requests:
// metrics checked by promtool, the JSON, bad paths, methods, tokens and
// bodies, the actions, many concurrent clients. Every wait is bounded.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <thread>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "cmdlines.hpp"
#include "pool/http.hpp"
#include "real_system.hpp"

using namespace std::chrono_literals;
using json = nlohmann::json;
using pool::test::real_config;

namespace {

// Runs `cmd` through the shell; returns its exit status and output.
std::pair<int, std::string> shell(const std::string& cmd) {
  auto pipe = ::popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[512];
  while (auto n = std::fread(buf, 1, sizeof(buf), pipe))
    out.append(buf, n);
  auto rc = ::pclose(pipe);
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, out};
}

constexpr const char* token = "0123456789abcdef-operator";

// Fails for negative inputs; sleeps a little so that workers are busy.
auto job = [](int x) -> int {
  if (x < 0)
    throw std::runtime_error("negative input " + std::to_string(x));
  std::this_thread::sleep_for(std::chrono::microseconds(200));
  return x;
};

struct log_lines {
  std::shared_ptr<std::mutex> mtx = std::make_shared<std::mutex>();
  std::shared_ptr<std::vector<std::string>> lines =
      std::make_shared<std::vector<std::string>>();

  pool::log_hook hook() const {
    return [mtx = mtx, out = lines](pool::log_level, const std::string& pool,
                                    const std::string& text) {
      std::lock_guard<std::mutex> guard{*mtx};
      out->push_back(pool + ": " + text);
    };
  }

  bool has(const std::string& part) const {
    std::lock_guard<std::mutex> guard{*mtx};
    for (auto& x : *lines)
      if (x.find(part) != std::string::npos)
        return true;
    return false;
  }
};

struct fixture {
  real_config cfg;
  caf::actor_system sys{cfg};
  caf::actor pool;
  log_lines log;
  std::unique_ptr<pool::http_endpoint> endpoint;

  explicit fixture(std::string tok = token) {
    auto p = pool::spawn_pool(sys, job,
                              pool::pool_options{}
                                  .workers(2)
                                  .max_attempts(3)
                                  .backoff(1ms, 1ms)
                                  .log(pool::silent_log_hook()));
    REQUIRE(p);
    pool = *p;
    pool::http_options opts;
    opts.token = std::move(tok);
    opts.sample_interval = 20ms;
    opts.log = log.hook();
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

  // Submits `xs` and waits for every outcome.
  void run(const std::vector<int>& xs) {
    caf::scoped_actor self{sys};
    for (auto x : xs)
      self->request(pool, 10s, pool::submit_atom_v, x)
          .receive([](int) {}, [](caf::error&) {});
  }

  // Polls /api/stats until `pred(pool json)` holds; at most 10 s.
  json wait_for(const std::function<bool(const json&)>& pred) {
    auto cli = client();
    json last;
    for (int i = 0; i < 500; ++i) {
      auto res = cli.Get("/api/stats");
      REQUIRE(res);
      last = json::parse(res->body)["pools"][0];
      if (last["sampled"] == true && pred(last))
        return last;
      std::this_thread::sleep_for(20ms);
    }
    FAIL("condition not met within 10 s; last: " << last.dump());
    return last;
  }
};

httplib::Headers bearer(const std::string& tok) {
  return {{"Authorization", "Bearer " + tok}};
}

// Starts `cmd`, a poolrun with `--http 127.0.0.1:0` whose standard error
// goes to the pipe, and reads the port from the line naming its URL.
std::pair<FILE*, int> start_serving(const std::string& cmd) {
  auto pipe = ::popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char line[256] = {};
  REQUIRE(std::fgets(line, sizeof(line), pipe) != nullptr);
  std::string first = line;
  INFO(first);
  auto at = first.find("http://127.0.0.1:");
  REQUIRE_NE(at, std::string::npos);
  return {pipe, std::stoi(first.substr(at + 17))};
}

} // namespace

TEST_CASE("the metrics pass promtool and match the pool's figures" *
          doctest::timeout(60)) {
  fixture f;
  f.run({1, 2, 3, -1, 4});
  auto p = f.wait_for([](const json& p) {
    return p["stats"]["completed"] == 4 && p["stats"]["failed"] == 1;
  });
  CHECK_EQ(p["stats"]["retried"], 2);
  CHECK_EQ(p["stats"]["dead"], 1); // the failed one, kept for a retry
  auto res = f.client().Get("/metrics");
  REQUIRE(res);
  CHECK_EQ(res->status, 200);
  CHECK_EQ(res->get_header_value("Content-Type"),
           "text/plain; version=0.0.4; charset=utf-8");
  auto& text = res->body;
  CHECK_NE(text.find("pool_operations_completed_total{pool=\"main\"} 4\n"),
           std::string::npos);
  CHECK_NE(text.find("pool_operations_failed_total{pool=\"main\"} 1\n"),
           std::string::npos);
  CHECK_NE(text.find("pool_attempts_retried_total{pool=\"main\"} 2\n"),
           std::string::npos);
  CHECK_NE(text.find("pool_dead_jobs{pool=\"main\"} 1\n"), std::string::npos);
  // 7 attempts ran: 4 good ones, 3 of the failing one.
  CHECK_NE(text.find("pool_processing_seconds_count{pool=\"main\"} 7\n"),
           std::string::npos);
  CHECK_NE(text.find("pool_processing_seconds_bucket{pool=\"main\",le=\"+Inf\"} 7\n"),
           std::string::npos);
  auto path = std::string{"metrics-"} + std::to_string(::getpid()) + ".txt";
  std::ofstream{path} << text;
  auto [rc, out] = shell("promtool check metrics < " + path + " 2>&1");
  std::remove(path.c_str());
  INFO("promtool said: " << out);
  CHECK_EQ(rc, 0);
  CHECK(out.empty());
}

TEST_CASE("the JSON carries windows, series and failures with history" *
          doctest::timeout(60)) {
  fixture f;
  f.run({-7});
  f.run({1, 2, 3});
  auto p = f.wait_for([](const json& p) {
    return p["failures"].size() == 1 && p["series"].size() >= 3;
  });
  auto& fail = p["failures"][0];
  CHECK_NE(fail["error"].get<std::string>().find("negative input -7"),
           std::string::npos);
  // Attempts 1 and 2 failed before the third, final one.
  REQUIRE_EQ(fail["attempts"].size(), 2u);
  CHECK_NE(fail["attempts"][0].get<std::string>().find("negative input -7"),
           std::string::npos);
  CHECK_EQ(p["stats"]["workers"], 2);
  CHECK(p["window"]["run"]["p99"].get<double>() > 0);
  CHECK_EQ(p["restarts"]["in_window"], 0);
  auto res = f.client().Get("/api/stats");
  REQUIRE(res);
  CHECK_EQ(json::parse(res->body)["actions"], true);
  CHECK_EQ(res->get_header_value("Cache-Control"), "no-store");
}

TEST_CASE("bad paths, methods, tokens and bodies get clear answers" *
          doctest::timeout(60)) {
  fixture f;
  auto cli = f.client();
  auto status_of = [](const httplib::Result& res) {
    REQUIRE(res);
    return res->status;
  };
  auto error_of = [](const httplib::Result& res) {
    REQUIRE(res);
    return json::parse(res->body)["error"].get<std::string>();
  };
  CHECK_EQ(status_of(cli.Get("/nope")), 404);
  CHECK_NE(error_of(cli.Get("/nope")).find("/metrics"), std::string::npos);
  CHECK_EQ(status_of(cli.Get("/../../etc/passwd")), 404);
  CHECK_EQ(status_of(cli.Post("/metrics", "", "text/plain")), 405);
  CHECK_EQ(status_of(cli.Get("/api/pools/main/resize")), 405);
  auto body = std::string{R"({"workers": 3})"};
  // No token, a wrong one, a right one.
  auto none = cli.Post("/api/pools/main/resize", body, "application/json");
  CHECK_EQ(status_of(none), 401);
  CHECK_EQ(none->get_header_value("WWW-Authenticate"), "Bearer");
  auto wrong = cli.Post("/api/pools/main/resize", bearer("0123456789abcdef-wrong"),
                        body, "application/json");
  CHECK_EQ(status_of(wrong), 403);
  CHECK(f.log.has("wrong token"));
  auto h = bearer(token);
  // Oversized, malformed and wrong bodies; unknown pools and actions.
  CHECK_EQ(status_of(cli.Post("/api/pools/main/resize", h,
                              std::string(5000, 'x'), "application/json")),
           413);
  CHECK_EQ(status_of(cli.Post("/api/pools/main/resize", h, "{", "application/json")),
           400);
  CHECK_NE(error_of(cli.Post("/api/pools/main/resize", h, R"({"workers":-1})",
                             "application/json"))
               .find("non-negative integer"),
           std::string::npos);
  CHECK_EQ(status_of(cli.Post("/api/pools/other/resize", h, body,
                              "application/json")),
           404);
  CHECK_EQ(status_of(cli.Post("/api/pools/main/explode", h, body,
                              "application/json")),
           404);
  // Pause and resume reach the pool (tests/flow.cpp covers what they do).
  CHECK_EQ(status_of(cli.Post("/api/pools/main/pause", h, "{}",
                              "application/json")),
           200);
  CHECK(f.log.has("http: pause by 127.0.0.1"));
  CHECK_EQ(status_of(cli.Post("/api/pools/main/resume", h, "{}",
                              "application/json")),
           200);
  CHECK(f.log.has("http: resume by 127.0.0.1"));
  // The actions themselves, logged with their outcome.
  CHECK_EQ(status_of(cli.Post("/api/pools/main/resize", h, body,
                              "application/json")),
           200);
  CHECK(f.log.has("http: resize to 3 by 127.0.0.1"));
  f.wait_for([](const json& p) { return p["stats"]["configured"] == 3; });
  CHECK_EQ(status_of(cli.Post("/api/pools/main/resize", h, R"({"workers":0})",
                              "application/json")),
           409); // a pool needs at least one worker
  auto unknown = cli.Post("/api/pools/main/cancel", h, R"({"operation":12345})",
                          "application/json");
  CHECK_EQ(status_of(unknown), 409);
  CHECK_NE(error_of(unknown).find("unknown_operation"), std::string::npos);
  CHECK_EQ(status_of(cli.Post("/api/pools/main/drain", h, "{}",
                              "application/json")),
           202);
  CHECK(f.log.has("http: drain by 127.0.0.1"));
  f.wait_for([](const json& p) { return p["down"] == true; });
}

TEST_CASE("without a token every action is refused" * doctest::timeout(60)) {
  fixture f{""};
  auto res = f.client().Post("/api/pools/main/drain", bearer(token), "{}",
                             "application/json");
  REQUIRE(res);
  CHECK_EQ(res->status, 403);
  CHECK_NE(res->body.find("without an operator token"), std::string::npos);
  auto stats = f.client().Get("/api/stats");
  REQUIRE(stats);
  CHECK_EQ(json::parse(stats->body)["actions"], false);
}

TEST_CASE("many concurrent clients are served and the pool is unaffected" *
          doctest::timeout(120)) {
  fixture f;
  constexpr int clients = 32;
  constexpr int requests = 25;
  std::atomic<int> ok{0};
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c)
    threads.emplace_back([&, c] {
      auto cli = f.client();
      for (int i = 0; i < requests; ++i) {
        auto path = (i + c) % 3 == 0   ? "/metrics"
                    : (i + c) % 3 == 1 ? "/api/stats"
                                       : "/missing";
        auto res = cli.Get(path);
        auto want = std::string{path} == "/missing" ? 404 : 200;
        (res && res->status == want ? ok : bad)++;
      }
    });
  // Four callers submit 500 operations each meanwhile.
  std::atomic<int> done{0};
  for (int c = 0; c < 4; ++c)
    threads.emplace_back([&f, &done] {
      caf::scoped_actor self{f.sys};
      for (int x = 0; x < 500; ++x)
        self->request(f.pool, 30s, pool::submit_atom_v, x)
            .receive([&](int) { ++done; }, [](caf::error&) {});
    });
  for (auto& t : threads)
    t.join();
  CHECK_EQ(done.load(), 2000);
  caf::scoped_actor self{f.sys};
  CHECK_EQ(ok.load(), clients * requests);
  CHECK_EQ(bad.load(), 0);
  auto st = pool::test::stats_now(self, f.pool);
  CHECK_EQ(st.completed, 2000u);
  CHECK_EQ(st.failed, 0u);
}

TEST_CASE("bad options and taken ports are refused with the reason" *
          doctest::timeout(30)) {
  real_config cfg;
  caf::actor_system sys{cfg};
  auto p = pool::spawn_pool(sys, job, pool::pool_options{}.workers(1));
  REQUIRE(p);
  auto refused = [&](std::vector<pool::http_pool> pools, pool::http_options o,
                     const std::string& part) {
    auto ep = pool::serve_http(sys, std::move(pools), std::move(o));
    REQUIRE_FALSE(ep);
    auto text = pool::describe(ep.error());
    INFO(text);
    CHECK_NE(text.find(part), std::string::npos);
  };
  refused({}, {}, "no pool to serve");
  refused({{"a b", *p}}, {}, "not usable in URLs");
  refused({{"a", *p}, {"a", *p}}, {}, "two pools are named 'a'");
  pool::http_options short_token;
  short_token.token = "secret";
  refused({{"a", *p}}, short_token, "at least 16");
  auto first = pool::serve_http(sys, {{"a", *p}}, {});
  REQUIRE(first);
  pool::http_options same_port;
  same_port.port = (*first)->port();
  refused({{"a", *p}}, same_port, "cannot listen on 127.0.0.1:");
  caf::anon_send_exit(*p, caf::exit_reason::user_shutdown);
}

TEST_CASE("pooltop --once prints the pool's screen" * doctest::timeout(60)) {
  fixture f;
  f.run({1, 2, 3, -5});
  f.wait_for([](const json& p) { return p["stats"]["failed"] == 1; });
  auto [rc, out] = shell(std::string{POOLTOP} + " --once --url " +
                         f.endpoint->url() + " 2>&1");
  INFO(out);
  CHECK_EQ(rc, 0);
  CHECK_NE(out.find("main  "), std::string::npos);
  CHECK_NE(out.find("done 3  failed 1"), std::string::npos);
  CHECK_NE(out.find("negative input -5"), std::string::npos);
  auto [bad_rc, bad] = shell(std::string{POOLTOP} +
                             " --once --url http://127.0.0.1:1 2>&1");
  CHECK_EQ(bad_rc, 1);
  CHECK_NE(bad.find("cannot read http://127.0.0.1:1/api/stats"),
           std::string::npos);
}

TEST_CASE("poolrun --http serves its pool while it runs" *
          doctest::timeout(60)) {
  // 8 commands of 0.3 s on 2 slots: about 1.2 s to scrape in.
  auto [pipe, port] = start_serving(
      std::string{"seq 8 | "} + POOLRUN +
      " -j2 --http 127.0.0.1:0 'sleep 0.3; echo {}' 2>&1 >/dev/null");
  httplib::Client cli{"127.0.0.1", port};
  char line[256] = {};
  std::string metrics;
  for (int i = 0; i < 50 && metrics.find("{pool=\"poolrun\"}") == std::string::npos;
       ++i) {
    if (auto res = cli.Get("/metrics"))
      metrics = res->body;
    std::this_thread::sleep_for(20ms);
  }
  CHECK_NE(metrics.find("pool_operations_submitted_total{pool=\"poolrun\"}"),
           std::string::npos);
  while (std::fgets(line, sizeof(line), pipe) != nullptr) {
  }
  CHECK_EQ(::pclose(pipe), 0);
}

TEST_CASE("--http addresses" * doctest::timeout(10)) {
  pool::http_options o;
  CHECK_FALSE(pool::parse_http_address("0.0.0.0:9464", o));
  CHECK_EQ(o.host, "0.0.0.0");
  CHECK_EQ(o.port, 9464);
  CHECK_FALSE(pool::parse_http_address(":8080", o));
  CHECK_EQ(o.host, "127.0.0.1");
  CHECK_EQ(o.port, 8080);
  CHECK_FALSE(pool::parse_http_address("9000", o));
  CHECK_EQ(o.port, 9000);
  CHECK_FALSE(pool::parse_http_address("[::1]:9000", o));
  CHECK_EQ(o.host, "::1");
  for (auto bad : {"", "host:", "host:99999", "host:12ab", ":-1"})
    CHECK_NE(pool::describe(pool::parse_http_address(bad, o)).find("--http"),
             std::string::npos);
}

TEST_CASE("poolrun takes its operator token from --http-token-file, and its "
          "commands do not inherit POOL_HTTP_TOKEN" *
          doctest::timeout(60)) {
  char dir_name[] = "/tmp/pool-http-XXXXXX";
  REQUIRE(::mkdtemp(dir_name) != nullptr);
  std::string dir = dir_name;
  auto file = dir + "/token";
  std::ofstream{file} << token << '\n';
  REQUIRE(::chmod(file.c_str(), 0600) == 0);
  // One command of 1 s: time to act while it runs; it prints what it saw.
  auto [pipe, port] = start_serving(
      "POOL_HTTP_TOKEN=leaked-0123456789abcdef " + std::string{POOLRUN} +
      " -j1 --http 127.0.0.1:0 --http-token-file " + file +
      " 'sleep 1; echo seen=${POOL_HTTP_TOKEN:-none}' ::: 1 2>&1");
  // Running, it shows the file's path, never the token.
  auto where = pool::test::cmdlines_text(token);
  CHECK_MESSAGE(where.empty(), "the token is in:\n" << where);
  CHECK_FALSE(pool::test::cmdlines_with("--http-token-file " + file).empty());
  httplib::Client cli{"127.0.0.1", port};
  auto paused = cli.Post("/api/pools/poolrun/pause", bearer(token), "{}",
                         "application/json");
  REQUIRE(paused);
  CHECK_EQ(paused->status, 200);
  auto resumed = cli.Post("/api/pools/poolrun/resume", bearer(token), "{}",
                          "application/json");
  REQUIRE(resumed);
  CHECK_EQ(resumed->status, 200);
  std::string rest;
  char line[256] = {};
  while (std::fgets(line, sizeof(line), pipe) != nullptr)
    rest += line;
  CHECK_EQ(::pclose(pipe), 0);
  CHECK_NE(rest.find("seen=none"), std::string::npos);
  // A token file others may read is refused.
  ::chmod(file.c_str(), 0644);
  auto [rc, out] = shell(std::string{POOLRUN} + " --http 127.0.0.1:0 " +
                         "--http-token-file " + file + " echo ::: 1 2>&1");
  CHECK_EQ(rc, 255);
  CHECK_NE(out.find("chmod 600 " + file), std::string::npos);
  std::remove(file.c_str());
  ::rmdir(dir.c_str());
}
