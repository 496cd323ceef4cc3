#pragma once

// The fixture of the SQLite store's tests (tests/sqlite_store.cpp,
// tests/sqlite_refusals.cpp): a temporary directory, an actor system that
// can (de)serialize the test payloads, entries, and file helpers.

#include <chrono>
#include <fstream>
#include <memory>
#include <string>

#include <caf/actor_system.hpp>
#include <doctest/doctest.h>

#include "pool/errors.hpp"
#include "pool/sqlite_store.hpp"

#include "check_fails.hpp"
#include "sqlite_files.hpp"
#include "store_config.hpp"

namespace pool::test::sqlite {

using pool::attempt_id;
using pool::sqlite_options;
using pool::sqlite_store;
using pool::work_record;


inline const sqlite_store::time_point t0{std::chrono::seconds(1000)};

inline work_record entry(uint64_t id, uint32_t attempt = 1) {
  return work_record{attempt_id{id, attempt},
                     caf::make_message(int32_t{7}, std::string{"x"})};
}

inline bool has_test_payload(const caf::message& x) {
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

using pool::test::check_fails;

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out{path, std::ios::binary | std::ios::trunc};
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

inline std::string read_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  return std::string{std::istreambuf_iterator<char>{in}, {}};
}


} // namespace pool::test::sqlite
