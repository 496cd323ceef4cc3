// One owner per SQLite store file: a second store or pool on the same file,
// in this process or in another, is refused with an error naming the file
// and the owner, and the owner runs on untouched; the owner of a process
// that died (SIGKILL) is taken over.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <signal.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <pool/all.hpp>

#include "child_process.hpp"
#include "sqlite_files.hpp"

using namespace std::chrono_literals;
using pool::sqlite_store;

namespace {

struct config : caf::actor_system_config {
  config() {
    pool::configure(*this);
    set("logger.verbosity", caf::atom("quiet"));
  }
};

struct fixture {
  config cfg;
  caf::actor_system sys{cfg};
  pool::test::temp_dir tmp;
  std::string file = tmp.path + "/pool.db";
};

sqlite_store::time_point t0{std::chrono::seconds(1000)};

pool::work_record entry(uint64_t id) {
  return pool::work_record{pool::attempt_id{id, 1},
                           caf::make_message(int32_t{7})};
}

std::string read_text(const std::string& path) {
  std::ifstream in{path};
  return std::string{std::istreambuf_iterator<char>{in}, {}};
}

std::string host_name() {
  char buf[256] = {};
  REQUIRE(gethostname(buf, sizeof(buf) - 1) == 0);
  return buf;
}

// Asserts that `x` failed with store_in_use, naming `file` and the owner
// with `pid`, this host and a time.
template <class T>
void check_refused(const caf::expected<T>& x, const std::string& file,
                   pid_t pid) {
  REQUIRE(!x);
  auto what = pool::describe(x.error());
  MESSAGE(what);
  CHECK_MESSAGE(pool::is(x.error(), pool::pool_errc::store_in_use), what);
  CHECK_MESSAGE(what.find(file) != std::string::npos, what);
  CHECK_MESSAGE(
      what.find("pid " + std::to_string(pid) + ",") != std::string::npos, what);
  CHECK_MESSAGE(what.find("host " + host_name()) != std::string::npos, what);
  CHECK_MESSAGE(what.find("since 20") != std::string::npos, what);
}

pid_t start_child(const std::string& store, const std::string& dir, int count,
                  const std::string& stderr_file = {}) {
  return pool::test::start_process(
      DURABLE_CHILD, {store, dir, std::to_string(count), "0"}, stderr_file);
}

// Whether the owner file of `store` names process `pid`.
bool owned_by(const std::string& store, pid_t pid) {
  auto text = read_text(sqlite_store::owner_file(store));
  return text.find("pid " + std::to_string(pid) + ",") != std::string::npos;
}

// Lines "<word> <n> <x>" of a journal file of durable_child, by n.
std::multimap<int, uint64_t> read_journal(const std::string& path) {
  std::multimap<int, uint64_t> result;
  std::ifstream in{path};
  std::string word;
  int n = 0;
  uint64_t x = 0;
  while (in >> word >> n >> x)
    result.emplace(n, x);
  return result;
}

} // namespace

// -- in one process -----------------------------------------------------------

TEST_CASE("a second store on the same file in this process is refused, "
          "naming the file and the owner, and the first goes on" *
          doctest::timeout(30)) {
  fixture fx;
  auto first = sqlite_store::open(fx.sys, fx.file);
  REQUIRE(first);
  auto& store = **first;
  REQUIRE(!store.push(entry(1), t0, t0));
  REQUIRE(!store.commit());
  check_refused(sqlite_store::open(fx.sys, fx.file), fx.file, getpid());
  // The refused open changed nothing: the first store's group, queue and
  // file go on as before.
  REQUIRE(!store.push(entry(2), t0, t0));
  auto x = store.pop_due(t0);
  REQUIRE(x);
  CHECK(x->id.operation == 1);
  REQUIRE(!store.finish(1, caf::make_message(1), t0));
  REQUIRE(!store.commit());
  CHECK(store.lookup(1)->state == pool::operation_state::done);
  CHECK(store.available(t0) == 1);
  pool::test::connection raw{fx.file};
  CHECK(raw.query("SELECT count(*) FROM operations") == 2);
}

TEST_CASE("the same file through a symbolic link is refused as well" *
          doctest::timeout(30)) {
  fixture fx;
  auto link = fx.tmp.path + "/link.db";
  auto first = sqlite_store::open(fx.sys, fx.file);
  REQUIRE(first);
  std::filesystem::create_symlink(fx.file, link);
  check_refused(sqlite_store::open(fx.sys, link), link, getpid());
}

TEST_CASE("a closed store leaves its file to the next one, with no stale "
          "owner, and another program's file gets no owner file" *
          doctest::timeout(30)) {
  fixture fx;
  // Refused before anything is written next to it.
  auto foreign = fx.tmp.path + "/other.db";
  {
    pool::test::connection other{foreign};
    other.exec("CREATE TABLE t (x)");
  }
  auto refused = sqlite_store::open(fx.sys, foreign);
  REQUIRE(!refused);
  CHECK(pool::is(refused.error(), pool::pool_errc::store_incompatible));
  CHECK(!std::filesystem::exists(sqlite_store::owner_file(foreign)));
  {
    auto first = sqlite_store::open(fx.sys, fx.file);
    REQUIRE(first);
    CHECK((*first)->taken_over_from().empty());
    CHECK(owned_by(fx.file, getpid()));
  }
  CHECK(read_text(sqlite_store::owner_file(fx.file)).empty());
  auto second = sqlite_store::open(fx.sys, fx.file);
  REQUIRE(second);
  CHECK((*second)->taken_over_from().empty());
}

TEST_CASE("a second pool on the same file in this process fails to spawn, and "
          "the first runs on" *
          doctest::timeout(60)) {
  fixture fx;
  auto job = [](int x) { return x * 2; };
  auto opts = pool::pool_options{}.workers(2).durable(fx.file).log(
      pool::silent_log_hook());
  auto first = pool::spawn_pool(fx.sys, job, opts);
  REQUIRE(first);
  caf::scoped_actor self{fx.sys};
  auto submit = [&](const caf::actor& pool, int x) {
    int result = 0;
    self->request(pool, 10s, pool::submit_atom_v, x)
        .receive([&](int y) { result = y; },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
    return result;
  };
  CHECK(submit(*first, 1) == 2);
  check_refused(pool::spawn_pool(fx.sys, job, opts), fx.file, getpid());
  CHECK(submit(*first, 2) == 4);
  self->send_exit(*first, caf::exit_reason::user_shutdown);
}

// -- across processes ---------------------------------------------------------

TEST_CASE("a store owned by another process is refused, and that process "
          "finishes untouched" *
          doctest::timeout(120)) {
  fixture fx;
  constexpr int count = 3000;
  auto pid = start_child(fx.file, fx.tmp.path, count);
  REQUIRE(pool::test::eventually([&] { return owned_by(fx.file, pid); }, 30s));
  check_refused(sqlite_store::open(fx.sys, fx.file), fx.file, pid);
  auto job = [](int x) { return x * 2; };
  check_refused(pool::spawn_pool(fx.sys, job,
                                 pool::pool_options{}.durable(fx.file).log(
                                     pool::silent_log_hook())),
                fx.file, pid);
  // The child was still running when refused (the test says nothing
  // otherwise): 3000 jobs of 1 ms on 2 workers take 1.5 s at least.
  int status = 0;
  REQUIRE(waitpid(pid, &status, WNOHANG) == 0);
  status = pool::test::wait_for(pid, 90s);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  // Every operation acknowledged once and run once, in the only
  // incarnation; one row each, done.
  auto acks = read_journal(fx.tmp.path + "/journal");
  auto runs = read_journal(fx.tmp.path + "/runs");
  CHECK(acks.size() == count);
  CHECK(runs.size() == count);
  std::set<int> ran;
  for (auto& [n, gen] : runs)
    CHECK_MESSAGE(ran.insert(n).second, "op " << n << " ran twice");
  pool::test::connection raw{fx.file};
  CHECK(raw.query("SELECT count(*) FROM operations") == count);
  CHECK(raw.query("SELECT count(*) FROM operations WHERE state <> 2") == 0);
}

TEST_CASE("another process is refused while this one owns the store, and "
          "says who owns it" *
          doctest::timeout(60)) {
  fixture fx;
  auto mine = sqlite_store::open(fx.sys, fx.file);
  REQUIRE(mine);
  auto errors = fx.tmp.path + "/child.err";
  auto status =
      pool::test::wait_for(start_child(fx.file, fx.tmp.path, 10, errors), 30s);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  auto text = read_text(errors);
  MESSAGE(text);
  CHECK(text.find("pool.store_in_use") != std::string::npos);
  CHECK(text.find("pid " + std::to_string(getpid()) + ",") !=
        std::string::npos);
  // The child ran nothing.
  CHECK(read_journal(fx.tmp.path + "/runs").empty());
}

TEST_CASE("the owner of a process killed with SIGKILL is taken over" *
          doctest::timeout(60)) {
  fixture fx;
  auto pid = start_child(fx.file, fx.tmp.path, 3000);
  REQUIRE(pool::test::eventually(
      [&] { return !read_journal(fx.tmp.path + "/runs").empty(); }, 30s));
  REQUIRE(kill(pid, SIGKILL) == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));
  auto store = sqlite_store::open(fx.sys, fx.file);
  REQUIRE_MESSAGE(store, pool::describe(store.error()));
  auto previous = (*store)->taken_over_from();
  MESSAGE("taken over from " << previous);
  CHECK(previous.find("pid " + std::to_string(pid) + ",") != std::string::npos);
  CHECK(owned_by(fx.file, getpid()));
  // The dead owner's accepted work is this store's now.
  CHECK(!(*store)->unfinished().empty());
}

// -- empty values
// ---------------------------------------------------------------

TEST_CASE("sqlite_store::open: an empty path is refused naming the field, "
          "not opened as SQLite's temporary database" *
          doctest::timeout(30)) {
  fixture f;
  auto store = sqlite_store::open(f.sys, "");
  REQUIRE_FALSE(store);
  CHECK(pool::describe(store.error()) ==
        "pool.invalid_option: path: must name the store's file");
}

TEST_CASE("store_for: default options give the in-memory store" *
          doctest::timeout(30)) {
  fixture f;
  auto store = pool::store_for(f.sys, pool::pool_options{});
  REQUIRE(store);
  CHECK(*store != nullptr);
  CHECK_FALSE((*store)->durable());
}
