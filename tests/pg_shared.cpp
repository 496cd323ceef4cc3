// The PostgreSQL store shared by several processes (tests/pg_child.cpp,
// one store each) over a private PostgreSQL 15 server: each operation is
// claimed by one process only, and the attempts of a SIGKILLed process are
// taken back once their lease expires, while what it committed stays.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>

#include "pool/errors.hpp"
#include "pool/pg_store.hpp"

#include "child_process.hpp"
#include "pg_fixture.hpp"
#include "store_config.hpp"

using namespace std::chrono_literals;
using pool::attempt_id;
using pool::operation_state;
using pool::pg_options;
using pool::pg_store;
using pool::work_record;
using pool::test::eventually;

namespace {

using config = pool::test::store_config;

// What one child wrote: the attempts it claimed and those it committed.
struct child_log {
  std::vector<attempt_id> claimed;
  std::vector<attempt_id> done;
  std::vector<std::string> other; // anything else but "ready"
};

child_log read_log(const std::string& path) {
  child_log result;
  std::ifstream in{path};
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words{line};
    std::string what;
    unsigned long long op = 0;
    unsigned attempt = 0;
    words >> what;
    if ((what == "claim" || what == "done") && (words >> op >> attempt)) {
      auto& xs = what == "claim" ? result.claimed : result.done;
      xs.push_back(attempt_id{op, attempt});
    } else if (what != "ready") {
      result.other.push_back(line);
    }
  }
  return result;
}

bool has_line(const std::string& path, const std::string& word) {
  std::ifstream in{path};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(word, 0) == 0)
      return true;
  return false;
}

// The cluster comes first: it forks before the actor system starts threads.
struct fixture {
  fixture() {
    char name[] = "/tmp/pool-pg-shared-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    dir = name;
  }

  ~fixture() {
    for (auto pid : children) {
      ::kill(pid, SIGKILL);
      int status = 0;
      ::waitpid(pid, &status, 0);
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }

  // Starts a consumer process writing to `name` in `dir`; waits until its
  // store is open.
  pid_t start_child(const std::string& name, std::vector<std::string> more) {
    std::vector<std::string> args{pg.conninfo(), dir + "/" + name};
    args.insert(args.end(), more.begin(), more.end());
    auto pid =
        pool::test::start_process(PG_CHILD, args, dir + "/" + name + ".err");
    children.push_back(pid);
    auto ready =
        eventually([&] { return has_line(dir + "/" + name, "ready"); }, 30s);
    REQUIRE_MESSAGE(ready,
                    name << " did not open its store: "
                         << pool::test::read_all(dir + "/" + name + ".err"));
    return pid;
  }

  void kill_child(pid_t pid) {
    ::kill(pid, SIGKILL);
    pool::test::wait_for(pid, 10s);
    children.erase(std::find(children.begin(), children.end(), pid));
  }

  // Submits `count` operations whose input is 1000 + their index.
  std::vector<uint64_t> submit(size_t count) {
    std::vector<uint64_t> ids;
    for (size_t i = 1; i <= count; ++i) {
      auto id = store->last_operation_id() + 1;
      work_record x{attempt_id{id, 1},
                    caf::make_message(static_cast<int64_t>(1000 + i))};
      REQUIRE(!store->push(x, now, now));
      ids.push_back(id);
    }
    REQUIRE(!store->commit());
    return ids;
  }

  size_t count_done() {
    return std::stoul(
        pg.query("SELECT count(*) FROM pool.operations WHERE state = 2"));
  }

  // Every operation done once, with twice its input; returns the attempt
  // each finished with.
  std::map<uint64_t, uint32_t>
  check_outcomes(const std::vector<uint64_t>& ids) {
    CHECK(pg.query("SELECT count(*) FROM pool.operations") ==
          std::to_string(ids.size()));
    std::map<uint64_t, uint32_t> attempts;
    for (size_t i = 0; i < ids.size(); ++i) {
      auto rec = store->lookup(ids[i]);
      REQUIRE(rec);
      CHECK(rec->state == operation_state::done);
      REQUIRE(rec->result.match_elements<int64_t>());
      CHECK(rec->result.get_as<int64_t>(0) ==
            2 * static_cast<int64_t>(1000 + i + 1));
      attempts[ids[i]] = rec->attempt;
    }
    return attempts;
  }

  pool::test::pg_cluster pg;
  config cfg;
  caf::actor_system sys{cfg};
  pg_store::time_point now = sys.clock().now();
  std::shared_ptr<pg_store> store = [this] {
    auto result = pg_store::open(sys, pg.conninfo());
    REQUIRE_MESSAGE(result, pool::describe(result.error()));
    return *result;
  }();
  std::string dir;
  std::vector<pid_t> children;
};

} // namespace

TEST_CASE("two processes over one queue each run distinct operations, none "
          "twice" *
          doctest::timeout(120)) {
  fixture fx;
  fx.start_child("a", {"30000"});
  fx.start_child("b", {"30000"});
  // Both wait on the queue; the commit notifies them.
  auto ids = fx.submit(1000);
  REQUIRE(eventually([&] { return fx.count_done() == ids.size(); }, 60s));
  auto a = read_log(fx.dir + "/a");
  auto b = read_log(fx.dir + "/b");
  MESSAGE("process a ran " << a.done.size() << ", process b " << b.done.size());
  CHECK(a.other.empty());
  CHECK(b.other.empty());
  // Both took part, and no operation was claimed twice.
  CHECK(!a.done.empty());
  CHECK(!b.done.empty());
  std::set<uint64_t> claimed;
  for (auto& log : {a, b})
    for (auto& x : log.claimed)
      CHECK_MESSAGE(claimed.insert(x.operation).second,
                    to_string(x) << " claimed twice");
  CHECK(claimed.size() == ids.size());
  CHECK(a.done.size() + b.done.size() == ids.size());
  for (auto [id, attempt] : fx.check_outcomes(ids))
    CHECK_MESSAGE(attempt == 1, "op#" << id << " ran " << attempt << " times");
}

TEST_CASE("the attempts of a SIGKILLed process are taken back and run by "
          "another, what it committed is not run again, and only the one it "
          "ran costs an attempt" *
          doctest::timeout(120)) {
  fixture fx;
  auto ids = fx.submit(300);
  // Process a finishes 100 operations, then hangs in the 101st.
  auto a_pid = fx.start_child("a", {"1000", "100"});
  auto hung = eventually(
      [&] { return read_log(fx.dir + "/a").claimed.size() == 101; }, 60s);
  REQUIRE(hung);
  fx.kill_child(a_pid);
  auto a = read_log(fx.dir + "/a");
  REQUIRE(a.done.size() == 100);
  CHECK(a.other.empty());
  auto stuck = a.claimed.back().operation;
  // Process b takes over: the rest, and what a held once its leases end.
  fx.start_child("b", {"1000"});
  REQUIRE(eventually([&] { return fx.count_done() == ids.size(); }, 60s));
  auto b = read_log(fx.dir + "/b");
  CHECK(b.other.empty());
  std::set<uint64_t> done_by_a;
  for (auto& x : a.done)
    done_by_a.insert(x.operation);
  for (auto& x : b.claimed)
    CHECK_MESSAGE(done_by_a.count(x.operation) == 0,
                  to_string(x) << " was committed by a, yet ran again");
  // The re-run: the stuck one, with the lost lease in its history; what a
  // had claimed but not started went back as it was.
  size_t reruns = 0;
  for (auto [id, attempt] : fx.check_outcomes(ids)) {
    if (attempt == 1)
      continue;
    ++reruns;
    CHECK(attempt == 2);
    CHECK(done_by_a.count(id) == 0);
    auto rec = fx.store->lookup(id);
    REQUIRE(rec);
    REQUIRE(rec->history.size() == 1);
    CHECK(pool::is(rec->history[0].reason, pool::pool_errc::lease_lost));
  }
  MESSAGE(reruns << " operations ran again after the kill");
  CHECK(reruns == 1);
  auto rec = fx.store->lookup(stuck);
  REQUIRE(rec);
  CHECK(rec->attempt == 2);
}
