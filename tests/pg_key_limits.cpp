// Concurrency limits and start rates per key kept by the database across
// every store and pool on a shared PostgreSQL queue
// (`pg_store::set_key_limits`), against a private PostgreSQL 15 server per
// test: claims of several stores never hold more than a key's limit, a
// finished or given-back entry frees its slot, a key's rate counts what ran
// until a period after it ended, and the keys take turns within a claim
// and across claims. (Pools on one queue: tests/pg_key_pools.cpp; pool
// processes: tests/pg_key_processes.cpp.)
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>

#include "pool/all.hpp"
#include "pool/key_limits.hpp"
#include "pool/pg_store.hpp"

#include "pg_store_fixture.hpp"

using namespace std::chrono_literals;
using pool::attempt_id;
using pool::key_flow_options;
using pool::key_limit;
using pool::pg_store;
using pool::work_record;

namespace {

using fixture = pool::test::pg_store_fixture;

work_record entry(uint64_t id, std::string key) {
  work_record x{attempt_id{id, 1}, caf::make_message(int32_t{7})};
  x.concurrency_key = std::move(key);
  return x;
}

// Claims everything due; returns the keys of what came out, in order
// ("-" for none).
std::vector<std::string> claim_all(pg_store& store, pg_store::time_point now,
                                   std::vector<uint64_t>* ids = nullptr) {
  std::vector<std::string> keys;
  while (auto x = store.pop_due(now)) {
    keys.push_back(x->concurrency_key.empty() ? "-" : x->concurrency_key);
    if (ids != nullptr)
      ids->push_back(x->id.operation);
  }
  return keys;
}

// Pushes `each` entries of every key of `keys`, key after key ("" for no
// key), as operations after `base`, and commits.
void push_keys(pg_store& store, pg_store::time_point now, uint64_t base,
               const std::vector<std::string>& keys, int each) {
  uint64_t n = 0;
  for (auto& key : keys)
    for (int i = 0; i < each; ++i)
      REQUIRE(!store.push(entry(base + ++n, key), now, now));
  REQUIRE(!store.commit());
}

size_t count_of(const std::vector<std::string>& xs, const std::string& x) {
  return static_cast<size_t>(std::count(xs.begin(), xs.end(), x));
}

// A store of the fixture's queue that keeps `limits`.
std::shared_ptr<pg_store> limited(fixture& fx, const key_flow_options& limits) {
  auto result = fx.open();
  result->set_key_limits(limits);
  return result;
}

} // namespace

TEST_CASE("claims of several stores hold at most a key's limit, and a "
          "finished or given-back entry frees its slot" *
          doctest::timeout(60)) {
  fixture fx;
  auto a = fx.open();
  auto base = a->last_operation_id();
  // Five of "a", five of "b", two without a key.
  push_keys(*a, fx.now, base, {"a", "b"}, 5);
  push_keys(*a, fx.now, base + 10, {""}, 2);
  auto limits = key_flow_options{}
                  .every_key(key_limit{2, std::nullopt})
                  .key("b", key_limit{1, std::nullopt});
  auto b1 = limited(fx, limits);
  auto b2 = limited(fx, limits);
  std::vector<uint64_t> held;
  auto first = claim_all(*b1, fx.now, &held);
  REQUIRE(!b1->commit());
  CHECK(count_of(first, "a") == 2);
  CHECK(count_of(first, "b") == 1);
  CHECK(count_of(first, "-") == 2);
  // The other store gets nothing of either key while those are held.
  CHECK(claim_all(*b2, fx.now).empty());
  REQUIRE(!b2->commit());
  // One of "a" finishes: one more of "a" for the other store.
  REQUIRE(!b1->finish(held.front(), caf::make_message(int32_t{1}), fx.now));
  REQUIRE(!b1->commit());
  CHECK(claim_all(*b2, fx.now) == std::vector<std::string>{"a"});
  REQUIRE(!b2->commit());
  // The first store closes (a process that stops, or dies: its leases
  // come back): its slots go to the other store.
  b1.reset();
  auto next = claim_all(*b2, fx.now);
  CHECK(count_of(next, "a") == 1); // b2 holds both of "a"'s slots now
  CHECK(count_of(next, "b") == 1); // and "b"'s one
  REQUIRE(!b2->commit());
  // Without limits, a store takes what is due at once.
  auto c = fx.open();
  CHECK(claim_all(*c, fx.now).size() >= 2);
}

TEST_CASE("start rates per key hold across stores: what a key holds and "
          "what ran of it counts until a period after it ended, and what "
          "goes back unstarted spends nothing" *
          doctest::timeout(60)) {
  fixture fx;
  auto a = fx.open();
  auto base = a->last_operation_id();
  push_keys(*a, fx.now, base, {"r", "q", "s"}, 4);
  // Every key: 2 starts an hour; "q": 1 an hour; "s": one at a time and no
  // rate (its own limits replace every key's).
  auto limits = key_flow_options{}
                  .every_key(key_limit{std::nullopt, pool::start_rate{2, 1h}})
                  .key("q", key_limit{std::nullopt, pool::start_rate{1, 1h}})
                  .key("s", key_limit{1, std::nullopt});
  auto b1 = limited(fx, limits);
  auto b2 = limited(fx, limits);
  std::vector<uint64_t> held;
  auto first = claim_all(*b1, fx.now, &held);
  REQUIRE(!b1->commit());
  CHECK(count_of(first, "r") == 2);
  CHECK(count_of(first, "q") == 1);
  CHECK(count_of(first, "s") == 1);
  CHECK(claim_all(*b2, fx.now).empty());
  REQUIRE(!b2->commit());
  // All of it ends: "s" may go on at once; "r" and "q" spent their hour.
  for (auto id : held)
    REQUIRE(!b1->finish(id, caf::make_message(int32_t{1}), fx.now));
  REQUIRE(!b1->commit());
  CHECK(claim_all(*b2, fx.now) == std::vector<std::string>{"s"});
  REQUIRE(!b2->commit());
  // An hour later (the claims' clock ahead of the server's), the rates
  // allow as much again.
  auto later = fx.now + 2h;
  auto second = claim_all(*b2, later);
  REQUIRE(!b2->commit());
  CHECK(count_of(second, "r") == 2);
  CHECK(count_of(second, "q") == 1);
  // A store that closes gives its claims back unstarted: nothing spent.
  b2.reset();
  auto b3 = limited(fx, limits);
  std::vector<uint64_t> ids;
  auto third = claim_all(*b3, later, &ids);
  REQUIRE(!b3->commit());
  CHECK(count_of(third, "r") == 2);
  CHECK(count_of(third, "q") == 1);
  CHECK(count_of(third, "s") == 1);
  // A failed attempt goes back for another: it ran, so its token stays
  // spent for the period; with the key's other entry held, its rate is
  // used up and the retry waits.
  push_keys(*a, fx.now, base + 12, {"u"}, 2);
  std::vector<uint64_t> u_ids;
  CHECK(claim_all(*b3, fx.now, &u_ids) == std::vector<std::string>{"u", "u"});
  REQUIRE(!b3->commit());
  work_record retry{attempt_id{u_ids.front(), 2}, caf::make_message(int32_t{7})};
  retry.concurrency_key = "u";
  REQUIRE(!b3->push(retry, fx.now, fx.now));
  REQUIRE(!b3->commit());
  CHECK(claim_all(*b3, fx.now).empty());
  REQUIRE(!b3->commit());
  // A store without the rates claims it at once.
  auto c = fx.open();
  CHECK(count_of(claim_all(*c, fx.now), "u") == 1);
}

TEST_CASE("keys take turns within a claim: each key's first, then each "
          "key's second" *
          doctest::timeout(60)) {
  fixture fx;
  auto a = fx.open();
  auto base = a->last_operation_id();
  // Submitted key after key; one without a key last.
  push_keys(*a, fx.now, base, {"x", "y", "z"}, 3);
  push_keys(*a, fx.now, base + 9, {""}, 1);
  auto b = fx.open();
  b->set_key_limits(key_flow_options{}.every_key(key_limit{3, std::nullopt}));
  CHECK(claim_all(*b, fx.now)
        == std::vector<std::string>{"x", "y", "z", "-", "x", "y", "z", "x",
                                    "y", "z"});
}

TEST_CASE("a 1,000-key backlog drains in turns across claims and stores: "
          "no key falls more than one turn behind another" *
          doctest::timeout(120)) {
  fixture fx;
  auto a = fx.open();
  auto base = a->last_operation_id();
  constexpr int keys = 1000;
  constexpr int each = 3;
  // Submitted key after key: submit order alone would drain key 0 first.
  std::vector<std::string> names;
  for (int k = 0; k < keys; ++k)
    names.push_back("k" + std::to_string(k));
  push_keys(*a, fx.now, base, names, each);
  // Two stores claim ten at a time, turn about, and finish at once.
  auto limits = key_flow_options{}.every_key(key_limit{1, std::nullopt});
  std::vector<std::shared_ptr<pg_store>> stores{
    fx.open(pool::pg_options{}.claim_batch(10)),
    fx.open(pool::pg_options{}.claim_batch(10))};
  for (auto& x : stores)
    x->set_key_limits(limits);
  std::map<std::string, int> served;
  size_t worst = 0; // the most a key was behind the one served
  size_t popped = 0;
  for (size_t turn = 0; popped < keys * each && turn < 20 * keys; ++turn) {
    auto& store = *stores[turn % 2];
    auto x = store.pop_due(fx.now);
    if (!x) {
      REQUIRE(!store.commit());
      continue;
    }
    ++popped;
    auto count = ++served[x->concurrency_key];
    // Every key with work left has been served at least count - 1 - lag.
    for (int k = 0; k < keys; ++k) {
      auto i = served.find("k" + std::to_string(k));
      auto other = i == served.end() ? 0 : i->second;
      if (other < each && other < count - 1)
        worst = std::max(worst, static_cast<size_t>(count - 1 - other));
    }
    REQUIRE(!store.finish(x->id.operation, caf::make_message(int32_t{1}),
                          fx.now));
    REQUIRE(!store.commit());
  }
  CHECK(popped == keys * each);
  MESSAGE("most turns a key fell behind: " << worst);
  CHECK(worst <= 1);
}
