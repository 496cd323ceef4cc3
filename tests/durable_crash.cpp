// The crash loop: a child process (tests/durable_child.cpp) submits and
// runs operations over a durable store and is killed with SIGKILL at random
// moments, again and again, then allowed to finish. Checked against its
// journal of acknowledged submits: none lost, a re-run only across a kill,
// every result recorded once.
#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <pool/all.hpp>

#include "child_process.hpp"
#include "sqlite_files.hpp"

using namespace std::chrono_literals;

namespace {

pid_t start_child(const std::string& store, const std::string& dir, int count,
                  int generation) {
  return pool::test::start_process(
      DURABLE_CHILD,
      {store, dir, std::to_string(count), std::to_string(generation)});
}

using pool::test::wait_for;

struct config : caf::actor_system_config {
  config() {
    pool::configure(*this);
    set("logger.verbosity", caf::atom("quiet"));
  }
};

} // namespace

TEST_CASE("crash loop: SIGKILL at random moments, then every acknowledged "
          "operation has run and its result is recorded once" *
          doctest::timeout(300)) {
  pool::test::temp_dir tmp;
  auto store = tmp.path + "/pool.db";
  constexpr int count = 4000;
  constexpr int wanted_kills = 24;
  auto seed = std::random_device{}();
  MESSAGE("seed " << seed);
  std::mt19937 rng{seed};
  std::uniform_int_distribution<int> pause_ms{10, 200};
  int kills = 0;
  int generation = 0;
  for (; kills < wanted_kills; ++generation) {
    auto pid = start_child(store, tmp.path, count, generation);
    // A random moment: while opening, submitting, running or draining.
    std::this_thread::sleep_for(std::chrono::milliseconds{pause_ms(rng)});
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) {
      ++kills;
    } else {
      REQUIRE_MESSAGE(WEXITSTATUS(status) == 0, "child failed early");
    }
    REQUIRE(generation < 200);
  }
  // The last incarnation runs to the end.
  auto status = wait_for(start_child(store, tmp.path, count, generation), 120s);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  MESSAGE(kills << " kills in " << generation + 1 << " incarnations");
  CHECK(kills >= 20);
  // The journal: every operation acknowledged, always with the same id.
  std::map<int, uint64_t> ids;
  {
    std::ifstream in{tmp.path + "/journal"};
    std::string word;
    int n = 0;
    uint64_t id = 0;
    while (in >> word >> n >> id) {
      auto [i, added] = ids.emplace(n, id);
      CHECK_MESSAGE(i->second == id, "op " << n << " acknowledged twice");
    }
  }
  REQUIRE(ids.size() == static_cast<size_t>(count));
  // Runs: at least once each; twice only in different incarnations, i.e.
  // across a kill.
  std::map<int, std::set<int>> runs;
  size_t total_runs = 0;
  {
    std::ifstream in{tmp.path + "/runs"};
    std::string word;
    int n = 0;
    int gen = 0;
    while (in >> word >> n >> gen) {
      ++total_runs;
      CHECK_MESSAGE(runs[n].insert(gen).second,
                    "op " << n << " ran twice in incarnation " << gen);
    }
  }
  CHECK(runs.size() == static_cast<size_t>(count));
  MESSAGE((total_runs - count) << " re-runs after kills");
  // The store: one row per operation, each done with its result.
  {
    pool::test::connection raw{store};
    CHECK(raw.query("SELECT count(*) FROM operations") == count);
    CHECK(raw.query("SELECT count(DISTINCT key) FROM operations") == count);
    CHECK(raw.query("SELECT count(*) FROM operations WHERE state <> 2") == 0);
  }
  config cfg;
  caf::actor_system sys{cfg};
  auto opened = pool::sqlite_store::open(sys, store);
  REQUIRE(opened);
  auto& db = **opened;
  for (auto& [n, id] : ids) {
    auto rec = db.lookup(id);
    REQUIRE(rec);
    CHECK(rec->state == pool::operation_state::done);
    CHECK(rec->key == "op-" + std::to_string(n));
    REQUIRE(rec->result.match_elements<int>());
    CHECK(rec->result.get_as<int>(0) == n * 2);
  }
}
