// The dead set over PostgreSQL, against a private server: operations that
// failed for good are listed by any store of the queue after a reopen
// (newest first, within age and count), cancelled ones are not, and a
// forgotten one leaves the database with its history.
#include <doctest/doctest.h>

#include <chrono>

#include "pg_store_fixture.hpp"

using namespace std::chrono_literals;

namespace {

caf::error failed_for_good(uint64_t id, std::vector<pool::attempt_failure> h) {
  return caf::make_error(pool::pool_errc::operation_failed, id, std::move(h));
}

} // namespace

TEST_CASE("failed operations survive the store and are forgotten when "
          "retried or discarded" *
          doctest::timeout(120)) {
  pool::test::pg_store_fixture fx;
  auto t0 = fx.now;
  std::vector<uint64_t> ids;
  {
    auto a = fx.open();
    for (int i = 1; i <= 4; ++i) {
      pool::work_record x{pool::attempt_id{a->last_operation_id() + 1, 1},
                          caf::make_message(-i)};
      ids.push_back(x.id.operation);
      REQUIRE(!a->push(x, t0, t0));
      REQUIRE(!a->commit());
      REQUIRE(a->pop_due(t0));
      REQUIRE(!a->commit());
    }
    auto boom = caf::make_error(pool::pool_errc::job_failed, uint32_t{1},
                                std::string{"boom"});
    pool::attempt_failure first{1, 5ms, boom};
    pool::attempt_failure second{2, 2s, boom};
    for (size_t i = 0; i < 3; ++i) {
      REQUIRE(!a->note_failure(ids[i], first));
      REQUIRE(!a->note_failure(ids[i], second));
      auto at = i == 0 ? t0 : t0 + 1h + std::chrono::seconds(i);
      REQUIRE(!a->finish(ids[i], failed_for_good(ids[i], {first, second}), at));
    }
    REQUIRE(
        !a->finish(ids[3], caf::make_error(pool::pool_errc::cancelled), t0));
    REQUIRE(!a->commit());
  }
  // Another store of the queue (a restarted process) lists them.
  auto b = fx.open();
  auto now = t0 + 1h + 10s;
  auto all = b->failed_operations(10, 24h, now);
  REQUIRE(all.size() == 3);
  CHECK(all[0].record.id == ids[2]); // newest first
  CHECK(all[2].record.id == ids[0]);
  CHECK(all[0].record.payload.get_as<int>(0) == -3);
  REQUIRE(all[0].record.history.size() == 2);
  CHECK(all[0].record.history[1].after_submit == 2s);
  CHECK(std::chrono::abs(all[0].ago - 8s) < 1s);
  CHECK(b->failed_operations(2, 24h, now).size() == 2);
  CHECK(b->failed_operations(10, 30min, now).size() == 2);
  REQUIRE(!b->forget_failed(ids[2]));
  REQUIRE(!b->commit());
  auto c = fx.open();
  auto left = c->failed_operations(10, 24h, now);
  REQUIRE(left.size() == 2);
  CHECK(left[0].record.id == ids[1]);
  CHECK(!c->lookup(ids[2]));
  CHECK(c->lookup(ids[3])); // cancelled: neither listed nor forgotten
}
