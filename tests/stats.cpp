// The two renderings of pool_stats: every figure, and one terminal line.
#include <doctest/doctest.h>

#include <string>

#include "pool/stats.hpp"

using namespace std::chrono_literals;

namespace {

pool::pool_stats busy_pool() {
  pool::pool_stats x;
  x.configured = 16;
  x.workers = 16;
  x.busy = 16;
  x.available = 123456;
  x.delayed = 789;
  x.submitted = 999999;
  x.completed = 876543;
  x.failed = 12;
  x.processing.count = 876555;
  x.processing.p99 = caf::timespan{35'125'000};
  return x;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("the summary of a busy pool fits one terminal line" *
          doctest::timeout(10)) {
  auto line = pool::summary(busy_pool());
  CHECK(line == "16/16 busy, 123456 queued (+789 delayed), 876543 done, 12 "
                "failed, run p99 35.1ms");
  CHECK(line.size() <= 80);
  CHECK(line.find('\n') == std::string::npos);
  // The long form keeps every figure.
  CHECK(pool::to_string(busy_pool()).size() > 400);
}

TEST_CASE("the summary adds trouble only when there is some" *
          doctest::timeout(10)) {
  auto quiet = pool::summary(pool::pool_stats{});
  CHECK(quiet == "0/0 busy, 0 queued, 0 done, 0 failed");
  auto x = busy_pool();
  x.joined = 2;
  x.retried = 3;
  x.timed_out = 1;
  x.worker_restarts = 1;
  x.queue_restarts = 1;
  x.rejected = 40;
  x.backlog_alarm = true;
  auto line = pool::summary(x);
  CHECK(contains(line, "16/16 busy (2 joined)"));
  CHECK(contains(line, "3 retried, 1 timed out, 2 restarts, 40 rejected"));
  CHECK(contains(line, "BACKLOG ALARM"));
}

TEST_CASE("to_string and summary: default stats render as zeros" *
          doctest::timeout(10)) {
  pool::pool_stats none;
  CHECK(pool::summary(none) == "0/0 busy, 0 queued, 0 done, 0 failed");
  CHECK(contains(pool::to_string(none), "workers=0"));
}
