// The live page in a real browser: Debian's headless Chromium, driven by
// chromedriver over WebDriver, loads the page of a pool with work in
// flight, reads the figures from the DOM, sees them change, and saves a
// screenshot (POOL_SCREENSHOT, else dashboard.png in the working
// directory; docs/images/dashboard.png is one); then opens a failed job's
// own page from its row (POOL_JOB_SCREENSHOT, else job_page.png), retries
// it there and saves another (POOL_DEAD_SCREENSHOT, else dead_set.png).
// Every wait is bounded.
#include <doctest/doctest.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <thread>

#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "pool/http.hpp"
#include "real_system.hpp"

extern char** environ;

using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

// Polls the page every 100 ms until `f` holds, for at most 10 s (the page
// refreshes every second).
template <class F>
void poll_page(F f) {
  for (int i = 0; i < 100 && !f(); ++i)
    std::this_thread::sleep_for(100ms);
}

constexpr const char* element_key = "element-6066-11e4-a52e-4f735466cecf";

uint16_t free_port() {
  auto fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string base64_decode(const std::string& in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z')
      return c - 'A';
    if (c >= 'a' && c <= 'z')
      return c - 'a' + 26;
    if (c >= '0' && c <= '9')
      return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::string out;
  int bits = 0;
  uint32_t acc = 0;
  for (auto c : in) {
    auto v = value(c);
    if (v < 0)
      continue;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

/// chromedriver on a free loopback port, killed when this goes out of scope.
struct driver {
  pid_t pid = -1;
  uint16_t port = free_port();
  std::string session;
  httplib::Client cli{"127.0.0.1", port};

  driver() {
    auto port_arg = "--port=" + std::to_string(port);
    std::vector<char*> argv{const_cast<char*>("chromedriver"),
                            port_arg.data(), nullptr};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null",
                                     O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null",
                                     O_WRONLY, 0);
    auto rc = posix_spawnp(&pid, "chromedriver", &actions, nullptr,
                           argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    REQUIRE_MESSAGE(rc == 0, "cannot start chromedriver (install it with "
                             "scripts/install-deps)");
    cli.set_read_timeout(60, 0);
    for (int i = 0; i < 200; ++i) {
      if (auto res = cli.Get("/status"); res && res->status == 200)
        return;
      std::this_thread::sleep_for(50ms);
    }
    FAIL("chromedriver did not answer within 10 s");
  }

  ~driver() {
    if (!session.empty())
      cli.Delete("/session/" + session);
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      int status = 0;
      ::waitpid(pid, &status, 0);
    }
  }

  json call(const std::string& method, const std::string& path,
            const json& body = json::object()) {
    auto full = path.empty() ? "/session" : "/session/" + session + path;
    auto res = method == "GET" ? cli.Get(full)
                               : cli.Post(full, body.dump(), "application/json");
    REQUIRE_MESSAGE(res, "no answer from chromedriver for " << full);
    auto reply = json::parse(res->body);
    REQUIRE_MESSAGE(res->status == 200, full << ": " << res->body);
    return reply["value"];
  }

  void start(const std::string& profile) {
    json chrome;
    chrome["binary"] = "/usr/bin/chromium";
    chrome["args"] = {"--headless=new", "--no-sandbox", "--disable-gpu",
                      "--disable-dev-shm-usage", "--window-size=1280,900",
                      "--user-data-dir=" + profile};
    json caps;
    caps["capabilities"]["alwaysMatch"]["goog:chromeOptions"] = chrome;
    auto created = call("POST", "", caps);
    REQUIRE_MESSAGE(created.contains("sessionId"), created.dump());
    session = created["sessionId"].get<std::string>();
  }

  // The text of the first element `css` selects; empty if there is none.
  std::string text(const std::string& css) {
    auto found = cli.Post("/session/" + session + "/element",
                          json{{"using", "css selector"}, {"value", css}}.dump(),
                          "application/json");
    if (!found || found->status != 200)
      return {};
    auto value = json::parse(found->body)["value"];
    REQUIRE_MESSAGE(value.contains(element_key), found->body);
    auto id = value[element_key].get<std::string>();
    auto text = call("GET", "/element/" + id + "/text");
    REQUIRE_MESSAGE(text.is_string(), text.dump());
    return text.get<std::string>();
  }

  json script(const std::string& code) {
    return call("POST", "/execute/sync",
                json{{"script", code}, {"args", json::array()}});
  }
};

uint64_t number(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), ','), text.end());
  return text.empty() ? 0 : std::stoull(text);
}

} // namespace

TEST_CASE("the page shows live figures that change" * doctest::timeout(180)) {
  pool::test::real_config cfg;
  caf::actor_system sys{cfg};
  auto job = [](int x) -> int {
    std::this_thread::sleep_for(std::chrono::milliseconds(2 + x % 5));
    if (x % 50 == 7)
      throw std::runtime_error("flaky input " + std::to_string(x));
    return x;
  };
  auto p = pool::spawn_pool(sys, job,
                            pool::pool_options{}
                                .workers(3)
                                .max_attempts(2)
                                .backoff(1ms, 1ms)
                                .log(pool::silent_log_hook()));
  REQUIRE(p);
  pool::http_options opts;
  opts.token = "browser-test-token-0123456789";
  opts.sample_interval = 200ms;
  auto ep = pool::serve_http(sys, {{"images", *p}}, opts);
  REQUIRE(ep);
  // Work in flight for the whole test: 4 callers, one at a time each.
  std::atomic<bool> stop{false};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&, c] {
      caf::scoped_actor self{sys};
      for (int x = c; !stop; x += 4)
        self->request(*p, 10s, pool::submit_atom_v, x)
            .receive([](int) {}, [](caf::error&) {});
    });
  // Stops and joins the callers however the test ends.
  struct joiner {
    std::atomic<bool>& stop;
    std::vector<std::thread>& threads;
    ~joiner() {
      stop = true;
      for (auto& t : threads)
        if (t.joinable())
          t.join();
    }
  } join_callers{stop, callers};
  auto profile = "chromium-profile-" + std::to_string(::getpid());
  {
    driver d;
    d.start(profile);
    d.call("POST", "/url", json{{"url", (*ep)->url() + "/"}});
    auto completed = std::string{"[data-pool='images'] [data-figure='completed']"};
    // The first figures arrive with the first poll.
    std::string first;
    poll_page([&] { return number(first = d.text(completed)) > 0; });
    REQUIRE_MESSAGE(number(first) > 0, "no figures on the page: '" << first
                                                                   << "'");
    // They change while work is in flight (the page polls every second).
    std::string later = first;
    poll_page([&] { return (later = d.text(completed)) != first; });
    CHECK_GT(number(later), number(first));
    CHECK_NE(d.text("#conn").find("live"), std::string::npos);
    CHECK_NE(d.text("[data-pool='images'] [data-figure='workers']").find("/ 3"),
             std::string::npos);
    // Sparklines have points, and failures with their attempts are listed
    // once some happened.
    std::string points;
    std::string failures;
    poll_page([&] {
      points = d.script("return document.querySelector(\"[data-pool='images'] "
                        "[data-spark='throughput'] polyline\")"
                        ".getAttribute('points') || ''")
                   .get<std::string>();
      failures = d.text("[data-pool='images'] details");
      return points.size() > 10 &&
             failures.find("flaky input") != std::string::npos &&
             failures.find("attempt 1") != std::string::npos;
    });
    CHECK_GT(points.size(), 10u);
    CHECK_NE(failures.find("flaky input"), std::string::npos);
    CHECK_NE(failures.find("attempt 1"), std::string::npos);
    // The actions are enabled (a token is configured) and confirmed.
    auto disabled = d.script(
        "return document.querySelector(\"[data-pool='images'] "
        "[data-action='resize']\").disabled");
    CHECK_EQ(disabled, false);
    // Pause and resume work from the page (the operator gives the token;
    // the confirmation is accepted), and the card says when it is paused.
    auto paused_tag = [&] {
      return d.script("return !document.querySelector(\"[data-pool='images'] "
                      "[data-tag='paused']\").hidden")
          .get<bool>();
    };
    auto click = [&](const char* action) {
      d.script(std::string{"window.confirm = () => true;"
                           "document.querySelector('#token').value = "
                           "'browser-test-token-0123456789';"
                           "document.querySelector(\"[data-pool='images'] "
                           "[data-action='"}
               + action + "']\").click(); return true;");
    };
    CHECK_FALSE(paused_tag());
    click("pause");
    poll_page([&] { return paused_tag(); });
    CHECK(paused_tag());
    CHECK_NE(d.text("#action-log").find("pause images: ok"), std::string::npos);
    click("resume");
    poll_page([&] { return !paused_tag(); });
    CHECK_FALSE(paused_tag());
    // The jobs panel lists the pool's operations once opened.
    d.script("document.querySelector(\"[data-pool='images'] "
             "[data-jobs='panel']\").open = true; return true;");
    auto rows = [&] {
      return d.script("return document.querySelectorAll(\"[data-pool='images'] "
                      "tr[data-job]\").length")
          .get<int>();
    };
    poll_page([&] { return rows() > 0; });
    CHECK_GT(rows(), 0);
    CHECK_NE(d.text("[data-pool='images'] [data-jobs='panel']").find("held"),
             std::string::npos);
    auto png = base64_decode(d.call("GET", "/screenshot").get<std::string>());
    CHECK_EQ(png.substr(1, 3), "PNG");
    auto path = std::getenv("POOL_SCREENSHOT") ? std::getenv("POOL_SCREENSHOT")
                                               : "dashboard.png";
    std::ofstream{path, std::ios::binary} << png;
    // The failed jobs (the dead set): one is retried from its row, and
    // leaves the list (its retry is a new operation).
    d.script("document.querySelector(\"[data-pool='images'] "
             "[data-jobs='state']\").value = 'failed'; return true;");
    std::string id;
    poll_page([&] {
      id = d.script("const r = document.querySelector(\"[data-pool='images'] "
                    "tr[data-state='failed']\"); return r ? r.dataset.job "
                    ": ''")
               .get<std::string>();
      return !id.empty();
    });
    REQUIRE_FALSE(id.empty());
    // The card counts the dead set.
    auto dead_figure = [&] {
      return d.text("[data-pool='images'] [data-figure='dead']");
    };
    poll_page([&] {
      auto x = dead_figure();
      return !x.empty() && x != "0" && x != "–";
    });
    CHECK_NE(dead_figure(), "0");
    auto row = "[data-pool='images'] tr[data-job='" + id + "']";
    CHECK_NE(d.text(row).find("flaky input"), std::string::npos);
    // Its own page (a link to share): every failed attempt, and the retry.
    d.script("window.confirm = () => true;"
             "document.querySelector('#token').value = "
             "'browser-test-token-0123456789';"
             "document.querySelector(\""
             + row + " [data-job-link]\").click(); return true;");
    auto field = [&](const std::string& name) {
      return d.script("const f = document.querySelector(\"#job-page "
                      "[data-job-field='" + name + "']\"); return f ? "
                      "f.textContent : ''").get<std::string>();
    };
    poll_page([&] { return !field("history").empty(); });
    CHECK_EQ(d.script("return location.hash").get<std::string>(),
             "#job/images/" + id);
    CHECK_EQ(field("state").rfind("failed", 0), 0u);
    CHECK_EQ(field("attempt"), "2"); // max_attempts(2)
    CHECK_NE(field("history").find("flaky input"), std::string::npos);
    CHECK_EQ(field("input").rfind("(", 0), 0u); // the int, with the token
    png = base64_decode(d.call("GET", "/screenshot").get<std::string>());
    CHECK_EQ(png.substr(1, 3), "PNG");
    auto job_png = std::getenv("POOL_JOB_SCREENSHOT")
                       ? std::getenv("POOL_JOB_SCREENSHOT")
                       : "job_page.png";
    std::ofstream{job_png, std::ios::binary} << png;
    d.script("document.querySelector(\"#job-page "
             "[data-job-action='retry']\").click(); return true;");
    auto logged = "jobs/" + id + "/retry images: ok";
    poll_page([&] {
      return d.text("#action-log").find(logged) != std::string::npos;
    });
    CHECK_NE(d.text("#action-log").find(logged), std::string::npos);
    // Retried as a new operation: the page says this one is gone.
    poll_page([&] { return !field("none").empty(); });
    CHECK_NE(field("none").find("retried"), std::string::npos);
    d.script("document.querySelector('[data-job-back]').click(); "
             "return true;");
    poll_page([&] {
      return d.script("return document.querySelector('#job-page').hidden")
          .get<bool>();
    });
    auto gone = [&] {
      return d.script("return !document.querySelector(\"" + row + "\")")
          .get<bool>();
    };
    poll_page(gone);
    CHECK(gone());
    d.script("document.querySelector(\"[data-pool='images'] "
             "[data-jobs='panel']\").scrollIntoView(); return true;");
    png = base64_decode(d.call("GET", "/screenshot").get<std::string>());
    CHECK_EQ(png.substr(1, 3), "PNG");
    auto dead = std::getenv("POOL_DEAD_SCREENSHOT")
                    ? std::getenv("POOL_DEAD_SCREENSHOT")
                    : "dead_set.png";
    std::ofstream{dead, std::ios::binary} << png;
  }
  std::system(("rm -rf " + profile).c_str());
  ep->reset();
  caf::anon_send_exit(*p, caf::exit_reason::user_shutdown);
}

TEST_CASE("at 1280 px the figures fit, an overload shows as a banner, and "
          "the last state stays when the process goes away"
          * doctest::timeout(180)) {
  pool::test::real_config cfg;
  caf::actor_system sys{cfg};
  auto job = [](int x) -> int {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return x;
  };
  // One worker and a low overload threshold: 200 submits at once overload
  // it, and the overload lasts well past its sustain time.
  auto p = pool::spawn_pool(sys, job,
                            pool::pool_options{}
                                .workers(1)
                                .overload_warning(20, 1s)
                                .overload_sustain(50ms)
                                .log(pool::silent_log_hook()));
  REQUIRE(p);
  pool::http_options opts;
  opts.sample_interval = 200ms;
  auto ep = pool::serve_http(sys, {{"busy", *p}}, opts);
  REQUIRE(ep);
  for (int x = 0; x < 200; ++x)
    caf::anon_send(*p, pool::submit_atom_v, x);
  auto profile = "chromium-profile-" + std::to_string(::getpid()) + "-fit";
  {
    driver d;
    d.start(profile);
    d.call("POST", "/url", json{{"url", (*ep)->url() + "/"}});
    auto banner = [&] {
      return d.script("const b = document.querySelector(\"[data-pool='busy'] "
                      "[data-banner='overload']\"); return !!b && !b.hidden")
          .get<bool>();
    };
    poll_page(banner);
    REQUIRE(banner());
    CHECK_NE(d.text("[data-pool='busy'] [data-banner='overload']")
                 .find("operations waiting"),
             std::string::npos);
    // Every figure, label and heading fits its box: nothing cut off or
    // running past its card.
    auto overflowing =
        d.script("const bad = [];"
                 "for (const e of document.querySelectorAll('.card, .card h2, "
                 ".grid b, .grid small'))"
                 "  if (e.scrollWidth > e.clientWidth + 1)"
                 "    bad.push((e.dataset.figure || e.className || e.tagName) "
                 "+ ': ' + e.textContent.slice(0, 40));"
                 "return bad.join(' | ');")
            .get<std::string>();
    CHECK_MESSAGE(overflowing.empty(), "past their boxes: " << overflowing);
    CHECK_EQ(d.script("return window.innerWidth").get<int>(), 1280);
    // The process's page goes away: the last figures stay, marked stale.
    auto completed = d.text("[data-pool='busy'] [data-figure='completed']");
    ep->reset();
    auto stale = [&] {
      return d.script("return document.body.classList.contains('stale')")
          .get<bool>();
    };
    poll_page(stale);
    CHECK(stale());
    CHECK_NE(d.text("#conn").find("showing the last state"), std::string::npos);
    CHECK_FALSE(d.text("[data-pool='busy'] [data-figure='completed']").empty());
    CHECK_FALSE(completed.empty());
  }
  std::system(("rm -rf " + profile).c_str());
  caf::anon_send_exit(*p, caf::exit_reason::user_shutdown);
}
