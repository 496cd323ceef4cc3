// The SQLite store: the memory store's ordering contract, plus what
// survives a reopen, group commit, and clear errors for files it must not
// or cannot use.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <caf/actor_system.hpp>

#include "pool/errors.hpp"
#include "pool/sqlite_store.hpp"

#include "sqlite_files.hpp"
#include "store_config.hpp"

using namespace std::chrono_literals;
using pool::attempt_id;
using pool::operation_state;
using pool::sqlite_options;
using pool::sqlite_store;
using pool::work_record;
using pool::test::connection;

namespace {

sqlite_store::time_point t0{std::chrono::seconds(1000)};

work_record entry(uint64_t id, uint32_t attempt = 1) {
  return work_record{attempt_id{id, attempt},
                     caf::make_message(int32_t{7}, std::string{"x"})};
}

bool has_test_payload(const caf::message& x) {
  return x.match_elements<int32_t, std::string>() &&
         x.get_as<int32_t>(0) == 7 && x.get_as<std::string>(1) == "x";
}

using config = pool::test::store_config;

// A temporary directory and an actor system that can (de)serialize the
// test payloads.
struct fixture {
  config cfg;
  caf::actor_system sys{cfg};
  pool::test::temp_dir tmp;
  std::string dir = tmp.path;

  std::string file() const {
    return dir + "/pool.db";
  }

  caf::expected<std::shared_ptr<sqlite_store>>
  try_open(sqlite_options opts = {}) {
    return sqlite_store::open(sys, file(), std::move(opts));
  }

  std::shared_ptr<sqlite_store> open(sqlite_options opts = {}) {
    auto result = try_open(std::move(opts));
    REQUIRE_MESSAGE(result, pool::describe(result.error()));
    return *result;
  }
};

// Asserts that `x` failed with `code` and mentions `text`.
template <class T>
void check_fails(const caf::expected<T>& x, pool::pool_errc code,
                 const std::string& text) {
  REQUIRE(!x);
  auto what = pool::describe(x.error());
  MESSAGE(what);
  CHECK_MESSAGE(pool::is(x.error(), code), what);
  CHECK_MESSAGE(what.find(text) != std::string::npos, what);
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out{path, std::ios::binary | std::ios::trunc};
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

std::string read_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  return std::string{std::istreambuf_iterator<char>{in}, {}};
}

// A VFS over the default one that fails every write while `fail_writes` is
// set, as a full disk would.
namespace failing_vfs {

bool fail_writes = false;
sqlite3_vfs* base = nullptr;
sqlite3_vfs vfs;
sqlite3_io_methods methods;

struct file {
  sqlite3_file header;
  sqlite3_file* real;
};

sqlite3_file* real(sqlite3_file* x) {
  return reinterpret_cast<file*>(x)->real;
}

int close(sqlite3_file* x) {
  return real(x)->pMethods->xClose(real(x));
}

int read(sqlite3_file* x, void* buf, int n, sqlite3_int64 offset) {
  return real(x)->pMethods->xRead(real(x), buf, n, offset);
}

int write(sqlite3_file* x, const void* buf, int n, sqlite3_int64 offset) {
  if (fail_writes)
    return SQLITE_FULL;
  return real(x)->pMethods->xWrite(real(x), buf, n, offset);
}

int truncate(sqlite3_file* x, sqlite3_int64 size) {
  return real(x)->pMethods->xTruncate(real(x), size);
}

int sync(sqlite3_file* x, int flags) {
  return real(x)->pMethods->xSync(real(x), flags);
}

int file_size(sqlite3_file* x, sqlite3_int64* size) {
  return real(x)->pMethods->xFileSize(real(x), size);
}

int lock(sqlite3_file* x, int level) {
  return real(x)->pMethods->xLock(real(x), level);
}

int unlock(sqlite3_file* x, int level) {
  return real(x)->pMethods->xUnlock(real(x), level);
}

int check_reserved_lock(sqlite3_file* x, int* out) {
  return real(x)->pMethods->xCheckReservedLock(real(x), out);
}

int file_control(sqlite3_file* x, int op, void* arg) {
  return real(x)->pMethods->xFileControl(real(x), op, arg);
}

int sector_size(sqlite3_file* x) {
  return real(x)->pMethods->xSectorSize(real(x));
}

int device_characteristics(sqlite3_file* x) {
  return real(x)->pMethods->xDeviceCharacteristics(real(x));
}

int shm_map(sqlite3_file* x, int page, int size, int extend,
            void volatile** out) {
  return real(x)->pMethods->xShmMap(real(x), page, size, extend, out);
}

int shm_lock(sqlite3_file* x, int offset, int n, int flags) {
  return real(x)->pMethods->xShmLock(real(x), offset, n, flags);
}

void shm_barrier(sqlite3_file* x) {
  real(x)->pMethods->xShmBarrier(real(x));
}

int shm_unmap(sqlite3_file* x, int delete_flag) {
  return real(x)->pMethods->xShmUnmap(real(x), delete_flag);
}

int open(sqlite3_vfs*, const char* name, sqlite3_file* x, int flags,
         int* out_flags) {
  auto self = reinterpret_cast<file*>(x);
  self->real = reinterpret_cast<sqlite3_file*>(self + 1);
  self->header.pMethods = nullptr;
  auto rc = base->xOpen(base, name, self->real, flags, out_flags);
  if (rc == SQLITE_OK && self->real->pMethods != nullptr)
    self->header.pMethods = &methods;
  return rc;
}

// Registers the VFS as "failing" once.
void install() {
  if (base != nullptr)
    return;
  base = sqlite3_vfs_find(nullptr);
  vfs = *base; // keeps pAppData: the unix VFS needs it
  vfs.zName = "failing";
  vfs.szOsFile = static_cast<int>(sizeof(file)) + base->szOsFile;
  vfs.xOpen = open;
  methods = sqlite3_io_methods{2,
                               close,
                               read,
                               write,
                               truncate,
                               sync,
                               file_size,
                               lock,
                               unlock,
                               check_reserved_lock,
                               file_control,
                               sector_size,
                               device_characteristics,
                               shm_map,
                               shm_lock,
                               shm_barrier,
                               shm_unmap,
                               nullptr,
                               nullptr};
  REQUIRE(sqlite3_vfs_register(&vfs, 0) == SQLITE_OK);
}

} // namespace failing_vfs

} // namespace

// -- the ordering contract, as for memory_store -------------------------------

TEST_CASE("due entries come out first in, first out" * doctest::timeout(30)) {
  fixture fx;
  auto store = fx.open();
  CHECK(store->durable());
  for (uint64_t i = 1; i <= 3; ++i)
    REQUIRE(!store->push(entry(i), t0, t0));
  CHECK(store->available(t0) == 3);
  for (uint64_t i = 1; i <= 3; ++i) {
    auto x = store->pop_due(t0);
    REQUIRE(x);
    CHECK(x->id.operation == i);
    CHECK(has_test_payload(x->payload));
  }
  CHECK(!store->pop_due(t0));
  CHECK(!store->next_due(t0));
  CHECK(!store->commit());
}

TEST_CASE("a delayed entry is not handed out one tick before it is due" *
          doctest::timeout(30)) {
  fixture fx;
  auto store = fx.open();
  REQUIRE(!store->push(entry(1), t0 + 10s, t0));
  CHECK(store->available(t0) == 0);
  CHECK(store->delayed(t0) == 1);
  CHECK(store->next_due(t0) == t0 + 10s);
  CHECK(!store->pop_due(t0 + 10s - 1ns));
  auto x = store->pop_due(t0 + 10s);
  REQUIRE(x);
  CHECK(x->id.operation == 1);
  CHECK(store->delayed(t0 + 10s) == 0);
}

TEST_CASE("delayed entries are ordered by due time, then by insertion" *
          doctest::timeout(30)) {
  fixture fx;
  auto store = fx.open();
  REQUIRE(!store->push(entry(1), t0 + 30s, t0));
  REQUIRE(!store->push(entry(2), t0 + 10s, t0));
  REQUIRE(!store->push(entry(3), t0 + 20s, t0));
  REQUIRE(!store->push(entry(4), t0 + 10s, t0));
  std::vector<uint64_t> order;
  while (auto x = store->pop_due(t0 + 60s))
    order.push_back(x->id.operation);
  CHECK(order == std::vector<uint64_t>{2, 4, 3, 1});
}

TEST_CASE("an entry that fell due earlier stays ahead of a later submit" *
          doctest::timeout(30)) {
  fixture fx;
  auto store = fx.open();
  REQUIRE(!store->push(entry(1), t0 + 5s, t0));
  REQUIRE(!store->push(entry(2), t0 + 7s, t0 + 7s));
  CHECK(store->pop_due(t0 + 8s)->id.operation == 1);
  CHECK(store->pop_due(t0 + 8s)->id.operation == 2);
}

TEST_CASE("remove takes an operation out of the queue and marks it cancelled" *
          doctest::timeout(30)) {
  fixture fx;
  auto store = fx.open();
  REQUIRE(!store->push(entry(1), t0, t0));
  REQUIRE(!store->push(entry(2), t0 + 5s, t0));
  CHECK(store->remove(2) == 1);
  CHECK(store->remove(2) == 0);
  CHECK(store->delayed(t0) == 0);
  CHECK(store->available(t0) == 1);
  REQUIRE(!store->commit());
  auto x = store->lookup(2);
  REQUIRE(x);
  CHECK(x->state == operation_state::cancelled);
  CHECK(to_string(x->state) == "cancelled");
}

// -- what survives a reopen ---------------------------------------------------

TEST_CASE("reopening keeps queued and delayed entries, due times, attempts "
          "and history" *
          doctest::timeout(30)) {
  fixture fx;
  auto failure =
      caf::make_error(pool::pool_errc::timed_out, std::string{"5 ms"});
  {
    auto store = fx.open();
    REQUIRE(!store->push(entry(1), t0, t0));
    REQUIRE(!store->push(entry(2), t0 + 10s, t0));
    // Operation 3 failed once and waits for its retry, 20 s out.
    REQUIRE(!store->push(entry(3), t0, t0));
    REQUIRE(store->pop_due(t0)->id.operation == 1);
    REQUIRE(store->pop_due(t0)->id.operation == 3);
    REQUIRE(!store->note_failure(3, pool::attempt_failure{1, 5ms, failure}));
    REQUIRE(!store->push(entry(3, 2), t0 + 20s, t0));
    REQUIRE(!store->finish(1, caf::make_message(std::string{"one"}), t0));
    REQUIRE(!store->commit());
  }
  auto store = fx.open();
  // Due times come back through the wall clock: equal up to the drift
  // between the two clock readings at the two opens.
  auto near = [](sqlite_store::time_point x, sqlite_store::time_point y) {
    return x - y < 100ms && y - x < 100ms;
  };
  CHECK(store->available(t0) == 0);
  CHECK(store->delayed(t0) == 2);
  auto due2 = store->next_due(t0);
  REQUIRE(due2);
  CHECK(near(*due2, t0 + 10s));
  CHECK(!store->pop_due(*due2 - 1ns));
  auto x = store->pop_due(*due2);
  REQUIRE(x);
  CHECK(x->id == attempt_id{2, 1});
  CHECK(has_test_payload(x->payload));
  auto due3 = store->next_due(*due2);
  REQUIRE(due3);
  CHECK(near(*due3, t0 + 20s));
  x = store->pop_due(*due3);
  REQUIRE(x);
  CHECK(x->id == attempt_id{3, 2});
  auto adopted = store->unfinished();
  REQUIRE(adopted.size() == 2);
  std::sort(adopted.begin(), adopted.end(),
            [](auto& a, auto& b) { return a.id < b.id; });
  CHECK(adopted[0].id == 2);
  CHECK(adopted[0].state == operation_state::queued);
  CHECK(adopted[0].attempt == 1);
  CHECK(has_test_payload(adopted[0].payload));
  CHECK(adopted[0].history.empty());
  CHECK(adopted[1].id == 3);
  CHECK(adopted[1].attempt == 2);
  REQUIRE(adopted[1].history.size() == 1);
  CHECK(adopted[1].history[0].attempt == 1);
  CHECK(adopted[1].history[0].after_submit == 5ms);
  CHECK(adopted[1].history[0].reason == failure);
  CHECK(store->last_operation_id() == 3);
}

TEST_CASE("an operation running when the store closed is due again at "
          "reopen" *
          doctest::timeout(30)) {
  fixture fx;
  {
    auto store = fx.open();
    REQUIRE(!store->push(entry(1), t0, t0));
    REQUIRE(!store->push(entry(2), t0, t0));
    REQUIRE(store->pop_due(t0)->id.operation == 1);
    REQUIRE(!store->commit());
    CHECK(store->lookup(1)->state == operation_state::running);
  }
  auto store = fx.open();
  auto adopted = store->unfinished();
  REQUIRE(adopted.size() == 2);
  std::sort(adopted.begin(), adopted.end(),
            [](auto& a, auto& b) { return a.id < b.id; });
  CHECK(adopted[0].state == operation_state::running);
  CHECK(adopted[1].state == operation_state::queued);
  CHECK(store->lookup(1)->state == operation_state::queued);
  // Due where they were (t0, kept across the reopen as wall time), not at the
  // reopen's clock: a machine up for less than t0 would see them as future.
  auto now = t0 + std::chrono::seconds(1);
  CHECK(store->available(now) == 2);
  CHECK(store->pop_due(now)->id == attempt_id{1, 1});
  CHECK(store->pop_due(now)->id == attempt_id{2, 1});
}

TEST_CASE("finished operations are not handed out again and keep their "
          "outcome" *
          doctest::timeout(30)) {
  fixture fx;
  auto failure = caf::make_error(pool::pool_errc::job_failed, uint32_t{1},
                                 std::string{"boom"});
  {
    auto store = fx.open();
    for (uint64_t i = 1; i <= 3; ++i)
      REQUIRE(!store->push(entry(i), t0, t0));
    REQUIRE(store->pop_due(t0));
    REQUIRE(store->pop_due(t0));
    REQUIRE(!store->finish(1, caf::make_message(std::string{"one"}), t0));
    REQUIRE(!store->finish(2, failure, t0));
    // A late finish does not overwrite the first outcome.
    REQUIRE(!store->finish(1, caf::make_message(std::string{"late"}), t0));
    // Finishing a queued operation takes it out of the queue.
    REQUIRE(!store->finish(3, caf::make_message(std::string{"three"}), t0));
    CHECK(store->available(t0) == 0);
    REQUIRE(!store->commit());
  }
  auto store = fx.open();
  CHECK(store->unfinished().empty());
  CHECK(store->available(t0 + 1h) == 0);
  CHECK(!store->pop_due(t0 + 1h));
  auto one = store->lookup(1);
  REQUIRE(one);
  CHECK(one->state == operation_state::done);
  CHECK(one->result.match_elements<std::string>());
  CHECK(one->result.get_as<std::string>(0) == "one");
  CHECK(has_test_payload(one->payload));
  auto two = store->lookup(2);
  REQUIRE(two);
  CHECK(two->state == operation_state::failed);
  CHECK(two->error == failure);
  CHECK(store->lookup(3)->state == operation_state::done);
  CHECK(!store->lookup(4));
  CHECK(store->last_operation_id() == 3);
}

TEST_CASE("closing without a commit discards the group" *
          doctest::timeout(30)) {
  fixture fx;
  {
    auto store = fx.open();
    REQUIRE(!store->push(entry(1), t0, t0));
    REQUIRE(!store->commit());
    REQUIRE(!store->push(entry(2), t0, t0));
  }
  auto store = fx.open();
  CHECK(store->unfinished().size() == 1);
  CHECK(store->last_operation_id() == 1);
}

TEST_CASE("many pushes and one commit are one transaction" *
          doctest::timeout(30)) {
  fixture fx;
  auto store = fx.open();
  connection other{fx.file()};
  for (uint64_t i = 1; i <= 100; ++i)
    REQUIRE(!store->push(entry(i), t0, t0));
  // Another connection sees none of them before the commit...
  CHECK(other.query("SELECT count(*) FROM operations") == 0);
  REQUIRE(!store->commit());
  // ... and all of them after it.
  CHECK(other.query("SELECT count(*) FROM operations") == 100);
  // A commit without changes is fine.
  CHECK(!store->commit());
}

TEST_CASE("find_key finds unfinished operations and those finished within "
          "the window" *
          doctest::timeout(30)) {
  fixture fx;
  auto check_keys = [](pool::work_store& store) {
    CHECK(store.find_key("a", t0 + 1h, 1s) == 1u);
    CHECK(store.find_key("b", t0 + 20s, 15s) == 2u);
    CHECK(!store.find_key("b", t0 + 30s, 15s));
    CHECK(!store.find_key("c", t0, 1h));
    CHECK(!store.find_key("nope", t0, 1h));
  };
  {
    auto store = fx.open();
    REQUIRE(!store->set_key(1, "a"));
    REQUIRE(!store->push(entry(1), t0, t0));
    REQUIRE(!store->set_key(2, "b"));
    REQUIRE(!store->push(entry(2), t0, t0));
    REQUIRE(!store->set_key(3, "c"));
    REQUIRE(!store->push(entry(3), t0, t0));
    REQUIRE(store->pop_due(t0)->id.operation == 1);
    REQUIRE(store->pop_due(t0)->id.operation == 2);
    REQUIRE(!store->finish(2, caf::make_message(), t0 + 10s));
    // Cancelled operations do not count.
    CHECK(store->remove(3) == 1);
    check_keys(*store);
    CHECK(store->lookup(1)->key == "a");
    REQUIRE(!store->commit());
  }
  // Finish times are wall-clock times: the window holds after a reopen.
  auto store = fx.open();
  check_keys(*store);
}

// -- files the store must not or cannot use -----------------------------------

TEST_CASE("a store file of another schema version is refused" *
          doctest::timeout(30)) {
  fixture fx;
  fx.open();
  {
    connection raw{fx.file()};
    raw.exec("PRAGMA user_version = 3");
  }
  check_fails(fx.try_open(), pool::pool_errc::store_incompatible,
              "schema version 3");
}

TEST_CASE("a version 1 file is migrated at open, its operations kept, and "
          "operations keep their options across a reopen" *
          doctest::timeout(30)) {
  fixture fx;
  {
    auto store = fx.open();
    REQUIRE(!store->push(entry(1), t0, t0));
    REQUIRE(!store->commit());
  }
  {
    // What a build of schema version 1 wrote: no options column.
    connection raw{fx.file()};
    raw.exec("ALTER TABLE operations DROP COLUMN options; "
             "UPDATE meta SET value = '1' WHERE name = 'schema_version'; "
             "PRAGMA user_version = 1");
  }
  {
    auto store = fx.open();
    auto adopted = store->unfinished();
    REQUIRE(adopted.size() == 1);
    CHECK(adopted[0].id == 1);
    CHECK(adopted[0].options.priority() == 0);
    // Operations with options (priority 7, a key, 4 attempts, a timeout).
    auto opts = pool::job_options{}
                    .priority(7)
                    .concurrency_key("tenant-a")
                    .max_attempts(4)
                    .attempt_timeout(3s);
    REQUIRE(!store->set_options(2, opts));
    auto second = entry(2);
    second.priority = 7;
    second.concurrency_key = "tenant-a";
    REQUIRE(!store->push(std::move(second), t0, t0));
    REQUIRE(!store->commit());
  }
  {
    connection raw{fx.file()};
    CHECK(raw.query("PRAGMA user_version") == 2);
  }
  auto store = fx.open();
  auto adopted = store->unfinished();
  REQUIRE(adopted.size() == 2);
  auto& second = adopted[0].id == 2 ? adopted[0] : adopted[1];
  CHECK(second.options.priority() == 7);
  CHECK(second.options.concurrency_key() == "tenant-a");
  CHECK(second.options.max_attempts() == 4);
  CHECK(second.options.attempt_timeout() == caf::timespan{3s});
  // The restored queue orders by priority: op 2 (priority 7) comes first,
  // with its key.
  auto first = store->pop_due(t0 + 1s);
  REQUIRE(first);
  CHECK(first->id.operation == 2);
  CHECK(first->priority == 7);
  CHECK(first->concurrency_key == "tenant-a");
  CHECK(store->lookup(2)->options.max_attempts() == 4);
}

TEST_CASE("another program's SQLite database is refused and left alone" *
          doctest::timeout(30)) {
  fixture fx;
  {
    connection raw{fx.file()};
    raw.exec("CREATE TABLE customers (name TEXT)");
  }
  auto before = read_file(fx.file());
  check_fails(fx.try_open(), pool::pool_errc::store_incompatible,
              "another program");
  CHECK(read_file(fx.file()) == before);
  // With an application id of its own, too.
  {
    connection raw{fx.file()};
    raw.exec("PRAGMA application_id = 42");
  }
  check_fails(fx.try_open(), pool::pool_errc::store_incompatible,
              "application_id 0x2a");
}

TEST_CASE("a file that is not an SQLite database is refused and left alone" *
          doctest::timeout(30)) {
  fixture fx;
  std::mt19937 gen{42};
  std::string bytes(8192, '\0');
  for (auto& c : bytes)
    c = static_cast<char>(gen());
  write_file(fx.file(), bytes);
  check_fails(fx.try_open(), pool::pool_errc::store_incompatible,
              "not an SQLite database");
  CHECK(read_file(fx.file()) == bytes);
}

TEST_CASE("a truncated or damaged store file is refused" *
          doctest::timeout(30)) {
  fixture fx;
  {
    auto store = fx.open();
    auto big = caf::make_message(std::string(1000, 'p'));
    for (uint64_t i = 1; i <= 200; ++i)
      REQUIRE(!store->push(work_record{attempt_id{i, 1}, big}, t0, t0));
    REQUIRE(!store->commit());
  }
  // Closing the last connection checkpoints the WAL into the file.
  REQUIRE(!std::filesystem::exists(fx.file() + "-wal"));
  auto intact = read_file(fx.file());
  REQUIRE(intact.size() > 64 * 1024);
  SUBCASE("truncated") {
    write_file(fx.file(), intact.substr(0, intact.size() / 2));
    check_fails(fx.try_open(), pool::pool_errc::store_corrupt, "damaged");
  }
  SUBCASE("overwritten in the middle") {
    auto damaged = intact;
    for (size_t i = 4096 * 3; i < 4096 * 3 + 2048; ++i)
      damaged[i] = static_cast<char>(0xA5);
    write_file(fx.file(), damaged);
    check_fails(fx.try_open(), pool::pool_errc::store_corrupt, "damaged");
  }
}

TEST_CASE("a read-only directory is refused at open" * doctest::timeout(30)) {
  fixture fx;
  auto sub = fx.dir + "/ro";
  REQUIRE(mkdir(sub.c_str(), 0755) == 0);
  {
    // An existing store, then the directory becomes read-only.
    auto store = sqlite_store::open(fx.sys, sub + "/old.db", {});
    REQUIRE(store);
  }
  REQUIRE(chmod(fx.dir.c_str(), 0755) == 0);
  REQUIRE(chmod(sub.c_str(), 0555) == 0);
  // Root may write anywhere: test as nobody.
  auto as_root = geteuid() == 0;
  if (as_root && seteuid(65534) != 0) {
    MESSAGE("cannot drop root privileges; skipping");
    return;
  }
  auto fresh = sqlite_store::open(fx.sys, sub + "/new.db", {});
  auto old = sqlite_store::open(fx.sys, sub + "/old.db", {});
  if (as_root)
    REQUIRE(seteuid(0) == 0);
  check_fails(fresh, pool::pool_errc::store_failed, "writable");
  check_fails(old, pool::pool_errc::store_failed, "writable");
}

// -- failed writes
// --------------------------------------------------------------

TEST_CASE("a group that hits the size limit is rolled back, the store goes "
          "on and the file opens again" *
          doctest::timeout(30)) {
  fixture fx;
  auto opts = sqlite_options{}.max_size(64 * 1024);
  std::vector<attempt_id> accepted;
  {
    auto store = fx.open(opts);
    for (uint64_t i = 1; i <= 3; ++i)
      REQUIRE(!store->push(entry(i), t0, t0));
    REQUIRE(!store->commit());
    // Big payloads until the file would outgrow its limit.
    auto big = caf::make_message(std::string(3000, 'b'));
    caf::error push_err;
    uint64_t id = 4;
    for (; id < 100 && !push_err; ++id) {
      push_err = store->push(work_record{attempt_id{id, 1}, big}, t0, t0);
      if (!push_err)
        accepted.push_back(attempt_id{id, 1});
    }
    REQUIRE(push_err);
    MESSAGE(pool::describe(push_err));
    CHECK(pool::is(push_err, pool::pool_errc::store_failed));
    CHECK(pool::describe(push_err).find("full") != std::string::npos);
    REQUIRE(!accepted.empty());
    // The failed write rolled the group back: the queue is what the file
    // holds, and the commit reports the pushes that were lost.
    CHECK(store->available(t0) == 3);
    auto err = store->commit();
    REQUIRE(err);
    MESSAGE(pool::describe(err));
    CHECK(pool::is(err, pool::pool_errc::store_failed));
    CHECK(store->lost_pushes() == accepted);
    // The store still serves what was committed and takes small changes.
    CHECK(store->pop_due(t0)->id == attempt_id{1, 1});
    REQUIRE(!store->finish(1, caf::make_message(), t0));
    REQUIRE(!store->commit());
    CHECK(store->lost_pushes().empty());
  }
  auto store = fx.open(opts);
  auto adopted = store->unfinished();
  REQUIRE(adopted.size() == 2);
  CHECK(store->lookup(1)->state == operation_state::done);
  CHECK(!store->lookup(accepted.front().operation));
  CHECK(store->last_operation_id() == 3);
}

TEST_CASE("a commit that fails to write rolls back, keeps pops and outcomes "
          "for the next commit and damages nothing" *
          doctest::timeout(30)) {
  fixture fx;
  failing_vfs::install();
  auto opts = sqlite_options{}.vfs("failing");
  {
    auto store = fx.open(opts);
    for (uint64_t i = 1; i <= 3; ++i)
      REQUIRE(!store->push(entry(i), t0, t0));
    REQUIRE(!store->commit());
    // A group: one pop, one outcome, one push.
    REQUIRE(store->pop_due(t0)->id.operation == 1);
    REQUIRE(store->pop_due(t0)->id.operation == 2);
    REQUIRE(!store->finish(2, caf::make_message(std::string{"two"}), t0));
    REQUIRE(!store->push(entry(4), t0, t0));
    failing_vfs::fail_writes = true;
    auto err = store->commit();
    failing_vfs::fail_writes = false;
    REQUIRE(err);
    MESSAGE(pool::describe(err));
    CHECK(pool::is(err, pool::pool_errc::store_failed));
    CHECK(store->lost_pushes() == std::vector<attempt_id>{{4, 1}});
    // The queue matches the file again, minus what this process already
    // took out: 1 and 2 are not handed out a second time, 4 is gone.
    CHECK(store->available(t0) == 1);
    CHECK(!store->lookup(4));
    // The next commit writes the kept pop and outcome.
    REQUIRE(!store->commit());
    CHECK(store->lost_pushes().empty());
    CHECK(store->lookup(1)->state == operation_state::running);
    CHECK(store->lookup(2)->state == operation_state::done);
  }
  auto store = fx.open(); // runs an integrity check
  auto adopted = store->unfinished();
  REQUIRE(adopted.size() == 2);
  std::sort(adopted.begin(), adopted.end(),
            [](auto& a, auto& b) { return a.id < b.id; });
  CHECK(adopted[0].id == 1);
  CHECK(adopted[0].state == operation_state::running);
  CHECK(adopted[1].id == 3);
  CHECK(store->lookup(2)->result.get_as<std::string>(0) == "two");
  CHECK(store->last_operation_id() == 3);
}

TEST_CASE("bad options are refused" * doctest::timeout(30)) {
  fixture fx;
  check_fails(fx.try_open(sqlite_options{}.busy_timeout(-1s)),
              pool::pool_errc::invalid_option, "busy_timeout");
  CHECK(to_string(pool::sqlite_sync::normal) == "normal");
}

// -- retention ----------------------------------------------------------------

TEST_CASE("retention prunes finished operations older than the age, with "
          "their histories, oldest first and in batches" *
          doctest::timeout(30)) {
  fixture fx;
  auto store = fx.open(sqlite_options{}.retention(1h));
  connection raw{fx.file()};
  // The index for pruning comes with the first store that has retention.
  CHECK(raw.query("SELECT count(*) FROM sqlite_master WHERE name = "
                  "'operations_finished'") == 1);
  // Cancels are timed by the store itself: the actor system's clock.
  auto now = fx.sys.clock().now();
  for (uint64_t i = 1; i <= 4; ++i)
    REQUIRE(!store->push(entry(i), now, now));
  REQUIRE(store->pop_due(now)->id.operation == 1);
  REQUIRE(store->pop_due(now)->id.operation == 2);
  REQUIRE(!store->finish(1, caf::make_message(1), now));
  auto failure = caf::make_error(pool::pool_errc::timed_out, std::string{"x"});
  REQUIRE(!store->note_failure(1, pool::attempt_failure{1, 1ms, failure}));
  REQUIRE(!store->note_failure(2, pool::attempt_failure{1, 1ms, failure}));
  REQUIRE(!store->finish(2, failure, now + 30min));
  REQUIRE(store->remove(3) == 1);
  REQUIRE(!store->commit());
  // Nothing is older than an hour yet.
  CHECK(store->prune(now + 59min, 100) == size_t{0});
  // Operations 1 (done) and 3 (cancelled) are; 2 failed later; 4 is queued.
  CHECK(store->prune(now + 61min, 100) == size_t{2});
  REQUIRE(!store->commit());
  CHECK(!store->lookup(1));
  CHECK(!store->lookup(3));
  REQUIRE(store->lookup(2));
  CHECK(store->lookup(2)->history.size() == 1);
  CHECK(raw.query("SELECT count(*) FROM failures WHERE operation = 1") == 0);
  CHECK(store->prune(now + 2h, 100) == size_t{1});
  REQUIRE(!store->commit());
  CHECK(raw.query("SELECT count(*) FROM failures") == 0);
  CHECK(store->lookup(4)->state == operation_state::queued);
  CHECK(store->available(now) == 1);
  // In batches: at most `limit` rows a call, the oldest first.
  for (uint64_t i = 5; i <= 11; ++i) {
    REQUIRE(!store->push(entry(i), now, now));
    REQUIRE(!store->finish(i, caf::make_message(int(i)), now + 1s * i));
  }
  REQUIRE(!store->commit());
  CHECK(store->prune(now + 3h, 3) == size_t{3});
  CHECK(!store->lookup(7));
  CHECK(store->lookup(8));
  CHECK(store->prune(now + 3h, 3) == size_t{3});
  CHECK(store->prune(now + 3h, 3) == size_t{1});
  CHECK(store->prune(now + 3h, 3) == size_t{0});
  REQUIRE(!store->commit());
  CHECK(raw.query("SELECT count(*) FROM operations") == 1);
}

TEST_CASE("pruning the newest operations does not let ids be used again" *
          doctest::timeout(30)) {
  fixture fx;
  {
    auto store = fx.open(sqlite_options{}.retention(1s));
    for (uint64_t i = 1; i <= 3; ++i) {
      REQUIRE(!store->push(entry(i), t0, t0));
      REQUIRE(!store->finish(i, caf::make_message(int(i)), t0));
    }
    REQUIRE(!store->commit());
    CHECK(store->prune(t0 + 1h, 100) == size_t{3});
    REQUIRE(!store->commit());
  }
  auto store = fx.open();
  CHECK(store->last_operation_id() == 3);
  CHECK(!store->lookup(3));
}

TEST_CASE("without retention nothing is pruned, and the prune interval "
          "follows the retention" *
          doctest::timeout(30)) {
  fixture fx;
  {
    auto store = fx.open();
    CHECK(!store->prune_interval());
    REQUIRE(!store->push(entry(1), t0, t0));
    REQUIRE(!store->finish(1, caf::make_message(1), t0));
    REQUIRE(!store->commit());
    CHECK(store->prune(t0 + 1000h, 100) == size_t{0});
    CHECK(store->lookup(1));
    connection raw{fx.file()};
    CHECK(raw.query("SELECT count(*) FROM sqlite_master WHERE name = "
                    "'operations_finished'") == 0);
  }
  auto interval = [&](caf::timespan retention) {
    auto store = fx.open(sqlite_options{}.retention(retention));
    return store->prune_interval();
  };
  CHECK(interval(1h) == caf::timespan{6min});
  CHECK(interval(2s) == caf::timespan{1s});
  CHECK(interval(1000h) == caf::timespan{10min});
  check_fails(fx.try_open(sqlite_options{}.retention(0s)),
              pool::pool_errc::invalid_option, "retention");
}
