// A job's outcome as the page, /api/stats, pooltop and the logs show it.
#include <doctest/doctest.h>

#include <chrono>
#include <csignal>

#include <caf/all.hpp>
#include <pool/errors.hpp>

#include "job.hpp"

using namespace std::chrono_literals;

namespace {

poolrun::job_result result(std::string command, int32_t exit_code) {
  poolrun::job_result res;
  res.command = std::move(command);
  res.exit_code = exit_code;
  res.runtime = std::chrono::nanoseconds{1200ms}.count();
  return res;
}

} // namespace

TEST_CASE("a failed command reads as its exit, its time and its last "
          "error line" *
          doctest::timeout(10)) {
  auto res = result("./job.sh 86", 3);
  res.err = "starting\njob 86: disk quota exceeded\n\n";
  CHECK_EQ(poolrun::describe_result(res),
           "./job.sh 86: exit 3 after 1.2s: job 86: disk quota exceeded");
  // Registered with pool::describe, as poolrun's main does.
  pool::describe_category(caf::atom("poolrun"), poolrun::render_poolrun_error);
  auto err = caf::make_error(poolrun::poolrun_errc::command_failed, res);
  CHECK_EQ(pool::describe(err),
           "poolrun.command_failed: ./job.sh 86: exit 3 after 1.2s: job 86: "
           "disk quota exceeded");
  pool::describe_category(caf::atom("poolrun"), {});
}

TEST_CASE("a timeout, a signal and a lost host say so" * doctest::timeout(10)) {
  auto res = result("sleep 9", -1);
  res.timed_out = true;
  res.signal = SIGKILL;
  CHECK_EQ(poolrun::describe_result(res),
           "sleep 9: timed out after 1.2s (killed)");
  res = result("kill -TERM $$", 0);
  res.signal = SIGTERM;
  CHECK_EQ(poolrun::describe_result(res),
           "kill -TERM $$: killed by signal 15 (SIGTERM) after 1.2s");
  res = result("true", 0);
  res.host = "node1";
  res.host_lost = true;
  CHECK(poolrun::describe_result(res).find("lost its host node1")
        != std::string::npos);
}

TEST_CASE("long commands and error lines are shortened" *
          doctest::timeout(10)) {
  auto res = result(std::string(300, 'x'), 1);
  res.err = std::string(500, 'e');
  auto text = poolrun::describe_result(res);
  CHECK_LT(text.size(), 320u);
  CHECK(text.find("...: exit 1") != std::string::npos);
}

TEST_CASE("a job written by an older poolrun (no attempts field) reads "
          "back with attempts 0, and a new one keeps its attempts" *
          doctest::timeout(10)) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  std::vector<std::string> none;
  // The fields an older build wrote, in its order.
  std::vector<char> old_bytes;
  {
    caf::binary_serializer sink{sys, old_bytes};
    uint64_t seq = 7;
    std::string command = "echo 7";
    std::string empty;
    REQUIRE(!sink(seq, command, empty, none, none, empty, none, none));
  }
  poolrun::job_spec x;
  x.attempts = 99;
  {
    caf::binary_deserializer source{sys, old_bytes};
    REQUIRE(!source(x));
  }
  CHECK(x.seq == 7);
  CHECK(x.command == "echo 7");
  CHECK(x.attempts == 0);
  // Written now: every field, attempts included.
  poolrun::job_spec y;
  y.seq = 8;
  y.command = "echo 8";
  y.attempts = 3;
  std::vector<char> bytes;
  {
    caf::binary_serializer sink{sys, bytes};
    REQUIRE(!sink(y));
  }
  CHECK(bytes.size() == old_bytes.size() + sizeof(uint32_t));
  poolrun::job_spec z;
  caf::binary_deserializer source{sys, bytes};
  REQUIRE(!source(z));
  CHECK(z.seq == 8);
  CHECK(z.attempts == 3);
}
