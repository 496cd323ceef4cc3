// pooltop's screen, from the JSON the HTTP endpoint serves (made here by
// the same unit, pool_json). No actor system, no terminal.
#include <doctest/doctest.h>

#include <chrono>

#include <unistd.h>

#include "pool/errors.hpp"
#include "pool/metrics_history.hpp"
#include "keys.hpp"
#include "render.hpp"

using namespace std::chrono_literals;

namespace {

std::string stats_json() {
  pool::metrics_history h{10};
  pool::log_histogram run;
  for (int i = 0; i < 3; ++i) {
    pool::pool_metrics m;
    m.stats.workers = 4;
    m.stats.busy = 3;
    m.stats.waiting = 1;
    m.stats.completed = static_cast<uint64_t>(100 * i);
    m.stats.backlog_alarm = i == 2;
    m.stats.paused = i == 2;
    m.stats.expected_total = 800;
    m.stats.dead = 2; // (kept from an earlier run: none failed in this one)
    run.record(std::chrono::milliseconds(5 * (i + 1)));
    m.processing = pool::export_histogram(run);
    m.max_restarts = 10;
    m.restart_window = 10s;
    h.add(caf::timestamp{std::chrono::seconds(1'700'000'000 + i)}, m);
  }
  pool::event_log events;
  pool::pool_event ev;
  ev.kind = pool::event_kind::retried;
  ev.operation = 42;
  ev.error = caf::make_error(pool::pool_errc::job_failed, std::string{"disk"});
  events.note(ev, caf::timestamp{});
  ev.kind = pool::event_kind::failed;
  events.note(ev, caf::timestamp{});
  return "{\"actions\":false,\"pools\":[" +
         pool::pool_json("images", h, events, 60s) + "]}";
}

} // namespace

TEST_CASE("the screen shows workers, queue, rates, sparklines and failures" *
          doctest::timeout(10)) {
  pooltop::render_options opts;
  opts.width = 120;
  auto screen = pooltop::render(stats_json(), opts);
  INFO(screen);
  CHECK_NE(screen.find("images  3/4 busy, 1 waiting"), std::string::npos);
  CHECK_NE(screen.find("utilization 75%"), std::string::npos);
  CHECK_NE(screen.find("BACKLOG ALARM"), std::string::npos);
  CHECK_NE(screen.find("PAUSED"), std::string::npos);
  // Done of a known total, and when the rest should be done (600 left at
  // the window's rate).
  CHECK_NE(screen.find("progress 200 of 800 (25%), ETA "), std::string::npos);
  CHECK_NE(screen.find("[#############################################+++++"
                       "++++++++++]"),
           std::string::npos);
  CHECK_NE(screen.find("done 200"), std::string::npos);
  CHECK_NE(screen.find("failed 0 (dead set 2)"), std::string::npos);
  CHECK_NE(screen.find("100.0 ops/s"), std::string::npos);
  CHECK_NE(screen.find("restarts 0 of 10 in 10s"), std::string::npos);
  CHECK_NE(screen.find("failed op#42"), std::string::npos);
  CHECK_NE(screen.find("attempt 1: pool.job_failed"), std::string::npos);
  CHECK_NE(screen.find("run p99  "), std::string::npos);
  CHECK_EQ(screen.find("\x1b["), std::string::npos); // no colours asked
  opts.color = true;
  CHECK_NE(pooltop::render(stats_json(), opts).find("\x1b[1mimages"),
           std::string::npos);
}

TEST_CASE("lines fit the width, and bad input says what it is" *
          doctest::timeout(10)) {
  pooltop::render_options opts;
  opts.width = 30;
  auto screen = pooltop::render(stats_json(), opts);
  size_t start = 0;
  while (start < screen.size()) {
    auto end = screen.find('\n', start);
    auto line = screen.substr(start, end - start);
    size_t cols = 0;
    for (auto c : line)
      cols += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
    CHECK_LE(cols, 30u);
    start = end + 1;
  }
  CHECK_NE(pooltop::render("<html>", opts).find("not the JSON of /api/stats"),
           std::string::npos);
  CHECK_NE(pooltop::render("{\"pools\":[{\"name\":\"x\",\"sampled\":false}]}",
                           opts)
               .find("no figures yet"),
           std::string::npos);
}

TEST_CASE("sparklines scale to their maximum and keep the newest values" *
          doctest::timeout(10)) {
  CHECK_EQ(pooltop::sparkline({0, 1, 2, 4}, 10), "▁▃▅█");
  CHECK_EQ(pooltop::sparkline({9, 9, 0, 1}, 2), "▁█");
  CHECK_EQ(pooltop::sparkline({0, 0}, 5), "▁▁");
  CHECK_EQ(pooltop::sparkline({}, 5), "");
}

TEST_CASE("q quits: the key reader finds it among other keys, and waits "
          "no longer than asked" *
          doctest::timeout(10)) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  // Nothing typed: no quit, after the timeout.
  CHECK_FALSE(pooltop::quit_key(fds[0], 10));
  CHECK(::write(fds[1], "xy", 2) == 2);
  CHECK_FALSE(pooltop::quit_key(fds[0], 10));
  CHECK(::write(fds[1], "aqz", 3) == 3);
  CHECK(pooltop::quit_key(fds[0], 10));
  CHECK(::write(fds[1], "Q", 1) == 1);
  CHECK(pooltop::quit_key(fds[0], 10));
  // The end of input quits only when asked to.
  ::close(fds[1]);
  CHECK_FALSE(pooltop::quit_key(fds[0], 10));
  CHECK(pooltop::quit_key(fds[0], 10, true));
  ::close(fds[0]);
  // A descriptor that is no terminal is left alone.
  pooltop::raw_keys none{fds[0]};
}

TEST_CASE("the screen lists each pool's running jobs, with inputs when the "
          "endpoint gave them" *
          doctest::timeout(10)) {
  pooltop::render_options opts;
  opts.width = 120;
  auto stats = stats_json();
  CHECK_EQ(pooltop::pool_names(stats), std::vector<std::string>{"images"});
  CHECK(pooltop::pool_names("not json").empty());
  pooltop::running_jobs running{
      {"images",
       R"j({"jobs":[{"id":7,"state":"running","attempt":2,"since":1.5,)j"
       R"j("holder":"worker 1","payload":"(\"a.png\")"},)j"
       R"j({"id":9,"state":"running","attempt":1,"since":0.002,)j"
       R"j("holder":"worker 0"}],"next_after":0,"scanned":2,"total":4})j"},
      {"other", "{}"}};
  auto screen = pooltop::render(stats, opts, running);
  INFO(screen);
  CHECK_NE(screen.find("running op#7 on worker 1 for 1.5s (attempt 2): "
                       "(\"a.png\")"),
           std::string::npos);
  CHECK_NE(screen.find("running op#9 on worker 0 for 2ms"), std::string::npos);
}
