// The SQLite store with files it must not or cannot use: another schema
// version, a version 1 file (migrated), another program's database, a
// file that is not SQLite, a damaged file, a read-only directory; and
// writes that fail (a group over the size limit, a full disk through a
// failing VFS): clear errors, nothing lost that was accepted.
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
#include "sqlite_store_fixture.hpp"
#include "store_config.hpp"

using namespace std::chrono_literals;
using pool::attempt_id;
using pool::operation_state;
using pool::sqlite_options;
using pool::sqlite_store;
using pool::work_record;
using pool::test::connection;

using namespace pool::test::sqlite;

namespace {

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

