// The queue's plain core: answers at once for an in-memory store; for a
// durable one, answers held until their group commits and released in
// order, refused as the commit says (lost pushes, fenced changes, repeated
// failures), the commit schedule (commit interval, backoff) and the prune
// and renew schedules. Time is a number the test moves.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include <caf/make_message.hpp>

#include "pool/detail/queue_core.hpp"
#include "pool/errors.hpp"
#include "pool/queue_protocol.hpp"
#include "pool/stats.hpp"
#include "pool/type_ids.hpp"

#include "faulty_store.hpp"

using namespace std::chrono_literals;
using pool::attempt_id;
using pool::queue_core;
using pool::work_record;

namespace {

/// A store that says it is durable (or shared), whose commits fail as the
/// test scripts them.
class scripted_store final : public pool::test::memory_backed_store {
public:
  bool is_durable = true;
  bool is_shared = false;
  /// Results of the next commits (none: success).
  std::deque<caf::error> commit_results;
  std::vector<attempt_id> lost;
  std::vector<uint64_t> fenced_ops;
  std::optional<caf::timespan> leases;
  std::vector<uint64_t> leases_lost;
  std::optional<caf::timespan> prune_every;
  size_t to_prune = 0;
  int commits = 0;

  bool durable() const noexcept override {
    return is_durable;
  }
  bool shared() const noexcept override {
    return is_shared;
  }
  caf::error commit() override {
    ++commits;
    if (commit_results.empty())
      return caf::none;
    auto result = std::move(commit_results.front());
    commit_results.pop_front();
    return result;
  }
  std::vector<attempt_id> lost_pushes() const override {
    return lost;
  }
  std::vector<uint64_t> fenced() const override {
    return fenced_ops;
  }
  std::optional<caf::timespan> lease_interval() const override {
    return leases;
  }
  caf::expected<std::vector<uint64_t>> renew_leases(time_point) override {
    return leases_lost;
  }
  std::optional<caf::timespan> prune_interval() const override {
    return prune_every;
  }
  caf::expected<size_t> prune(time_point, size_t most) override {
    auto n = std::min(to_prune, most);
    to_prune -= n;
    return n;
  }
};

/// Records what the core does: held tickets, answers in order, notes to
/// itself with their delays, messages to the owner.
struct recorder : pool::queue_effects {
  time_point clock{std::chrono::seconds(1000)};
  uint64_t tickets = 0;
  std::vector<std::pair<uint64_t, caf::message>> answers;
  std::vector<std::pair<caf::timespan, caf::message>> notes;
  std::vector<caf::message> told;

  time_point now() override {
    return clock;
  }
  uint64_t hold() override {
    return ++tickets;
  }
  void answer(uint64_t ticket, caf::message msg) override {
    answers.emplace_back(ticket, std::move(msg));
  }
  void to_self(caf::timespan delay, caf::message msg) override {
    notes.emplace_back(delay, std::move(msg));
  }
  void to_owner(caf::message msg) override {
    told.push_back(std::move(msg));
  }

  /// The delays of the `q_flush` notes so far.
  std::vector<caf::timespan> flushes() const {
    std::vector<caf::timespan> result;
    for (auto& [delay, msg] : notes)
      if (msg.match_elements<pool::queue_msg::flush_atom>())
        result.push_back(delay);
    return result;
  }
};

work_record entry(uint64_t id) {
  return work_record{attempt_id{id, 1}, caf::make_message(int(id))};
}

bool is_delegated(const queue_core::reply& x) {
  return x.flag == caf::rt_delegated;
}

struct fixture {
  std::shared_ptr<scripted_store> store = std::make_shared<scripted_store>();
  recorder fx;

  queue_core make(caf::timespan commit_interval = {}) {
    return queue_core{store, commit_interval, fx};
  }

  queue_core::reply add(queue_core& q, uint64_t id) {
    auto x = entry(id);
    return q.add(x, caf::timespan{0}, nullptr, nullptr);
  }
};

} // namespace

TEST_CASE("an in-memory store is answered at once"
          * doctest::timeout(10)) {
  fixture f;
  f.store->is_durable = false;
  auto q = f.make();
  q.start();
  auto r = f.add(q, 1);
  REQUIRE(r.flag == caf::rt_value);
  REQUIRE(r.value.match_elements<pool::queue_counts>());
  CHECK(r.value.get_as<pool::queue_counts>(0).available == 1);
  auto w = q.get(4, true);
  REQUIRE(w.value.match_elements<std::vector<work_record>>());
  CHECK(w.value.get_as<std::vector<work_record>>(0).size() == 1);
  auto none = q.get(1, false);
  CHECK(none.value.match_elements<pool::no_work_atom, caf::timespan>());
  CHECK(f.fx.tickets == 0);
  CHECK(f.fx.notes.empty());
}

TEST_CASE("durable changes wait for their commit and come out in order"
          * doctest::timeout(10)) {
  fixture f;
  auto q = f.make();
  q.start();
  CHECK(is_delegated(f.add(q, 1)));
  CHECK(is_delegated(f.add(q, 2)));
  // One flush for the group, at once (nothing committed before).
  CHECK(f.fx.flushes() == std::vector<caf::timespan>{caf::timespan{0}});
  // A hand-out of an uncommitted entry waits too, and so does the next one.
  CHECK(is_delegated(q.get(1, false)));
  CHECK(is_delegated(q.get(1, false)));
  CHECK(f.fx.answers.empty());
  q.flush();
  CHECK(f.store->commits == 1);
  REQUIRE(f.fx.answers.size() == 4);
  for (uint64_t i = 0; i < 4; ++i)
    CHECK(f.fx.answers[i].first == i + 1);
  // Counts are taken again when released: both added and handed out.
  auto& counts = f.fx.answers[0].second;
  REQUIRE(counts.match_elements<pool::queue_counts>());
  CHECK(counts.get_as<pool::queue_counts>(0).available == 0);
  CHECK(f.fx.answers[2].second.match_elements<work_record>());
  // After the commit, a hand-out of committed work is answered at once.
  CHECK(q.get(1, false).flag == caf::rt_value);
}

TEST_CASE("commits are spaced by the commit interval" * doctest::timeout(10)) {
  fixture f;
  auto q = f.make(5ms);
  q.start();
  f.add(q, 1);
  q.flush();
  f.fx.clock += 2ms;
  f.add(q, 2);
  // The next commit is 5 ms after the last one: 3 ms from now.
  CHECK(f.fx.flushes()
        == std::vector<caf::timespan>{caf::timespan{0}, caf::timespan{3ms}});
  // One flush is scheduled at a time.
  f.add(q, 3);
  CHECK(f.fx.flushes().size() == 2);
}

TEST_CASE("a failed commit refuses lost pushes and retries the rest"
          * doctest::timeout(10)) {
  fixture f;
  auto q = f.make();
  q.start();
  f.add(q, 1);
  f.add(q, 2);
  f.store->commit_results.push_back(
    caf::make_error(pool::pool_errc::store_failed, std::string{"disk"}));
  f.store->lost = {attempt_id{1, 1}};
  q.flush();
  // The lost push is refused with the commit's error; the other stays held
  // and the next flush comes 10 ms later.
  REQUIRE(f.fx.answers.size() == 1);
  CHECK(f.fx.answers[0].first == 1);
  CHECK(f.fx.answers[0].second.match_elements<caf::error>());
  CHECK(q.held().size() == 1);
  CHECK(f.fx.flushes().back() == caf::timespan{10ms});
  f.store->lost.clear();
  q.flush();
  REQUIRE(f.fx.answers.size() == 2);
  CHECK(f.fx.answers[1].second.match_elements<pool::queue_counts>());
}

TEST_CASE("held changes are refused after five failed commits"
          * doctest::timeout(10)) {
  fixture f;
  auto q = f.make();
  q.start();
  f.add(q, 1);
  for (int i = 0; i < queue_core::max_failed_commits; ++i)
    f.store->commit_results.push_back(
      caf::make_error(pool::pool_errc::store_failed, std::string{"disk"}));
  for (int i = 1; i < queue_core::max_failed_commits; ++i) {
    q.flush();
    CHECK(f.fx.answers.empty());
    CHECK(q.failed_commits() == i);
  }
  q.flush();
  REQUIRE(f.fx.answers.size() == 1);
  CHECK(f.fx.answers[0].second.match_elements<caf::error>());
  CHECK(q.held().empty());
  CHECK(q.failed_commits() == 0);
}

TEST_CASE("a shared store waits for its server with backoff"
          * doctest::timeout(10)) {
  fixture f;
  f.store->is_shared = true;
  auto q = f.make();
  q.start();
  f.add(q, 1);
  std::string key = "k";
  auto r = q.find_key(key, caf::timespan{1s}); // a lookup, held in order
  CHECK(is_delegated(r));
  for (int i = 0; i < 9; ++i)
    f.store->commit_results.push_back(
      caf::make_error(pool::pool_errc::store_failed, std::string{"down"}));
  std::vector<caf::timespan> waits;
  for (int i = 0; i < 9; ++i) {
    auto before = f.fx.flushes().size();
    q.flush();
    REQUIRE(f.fx.flushes().size() == before + 1);
    waits.push_back(f.fx.flushes().back());
  }
  // The read went out at the first failure; the change waits, 10 ms
  // doubling to at most 1 s.
  REQUIRE(f.fx.answers.size() == 1);
  CHECK(f.fx.answers[0].first == 2);
  CHECK(waits.front() == caf::timespan{10ms});
  CHECK(waits[1] == caf::timespan{20ms});
  CHECK(waits.back() == caf::timespan{1s});
  // The store gives up the push: the change is refused.
  f.store->commit_results.push_back(
    caf::make_error(pool::pool_errc::store_failed, std::string{"gone"}));
  f.store->lost = {attempt_id{1, 1}};
  q.flush();
  REQUIRE(f.fx.answers.size() == 2);
  CHECK(f.fx.answers[1].second.match_elements<caf::error>());
  CHECK(q.held().empty());
}

TEST_CASE("a fenced change is refused as stale" * doctest::timeout(10)) {
  fixture f;
  auto q = f.make();
  q.start();
  f.add(q, 1);
  caf::message result = caf::make_message(int{2});
  CHECK(is_delegated(q.finish(3, result)));
  f.store->fenced_ops = {3};
  q.flush();
  REQUIRE(f.fx.answers.size() == 2);
  CHECK(f.fx.answers[0].second.match_elements<pool::queue_counts>());
  REQUIRE(f.fx.answers[1].second.match_elements<caf::error>());
  CHECK(f.fx.answers[1].second.get_as<caf::error>(0)
        == pool::pool_errc::lease_lost);
}

TEST_CASE("prunes come soon while whole batches go, else at the interval"
          * doctest::timeout(10)) {
  fixture f;
  f.store->prune_every = caf::timespan{1min};
  f.store->to_prune = queue_core::prune_batch + 1;
  auto q = f.make();
  q.start();
  REQUIRE(f.fx.notes.size() == 1);
  CHECK(f.fx.notes[0].first == caf::timespan{1min});
  q.prune(); // a whole batch: again in 10 ms, and its deletions committed
  CHECK(f.fx.notes.back().first == caf::timespan{10ms});
  CHECK(f.fx.flushes().size() == 1);
  q.prune(); // the last one
  CHECK(f.fx.notes.back().first == caf::timespan{1min});
  CHECK(f.store->to_prune == 0);
}

TEST_CASE("lost leases go to the owner" * doctest::timeout(10)) {
  fixture f;
  f.store->leases = caf::timespan{10s};
  f.store->leases_lost = {4, 5};
  auto q = f.make();
  q.start();
  q.renew();
  REQUIRE(f.fx.told.size() == 1);
  REQUIRE(f.fx.told[0].match_elements<pool::queue_msg::lost_atom,
                                      std::vector<uint64_t>>());
  CHECK(f.fx.told[0].get_as<std::vector<uint64_t>>(1)
        == std::vector<uint64_t>{4, 5});
  // The next renewal is armed, and the renewal's changes committed.
  CHECK(f.fx.notes.back().first == caf::timespan{0});
  CHECK(f.fx.notes[1].first == caf::timespan{10s});
}

TEST_CASE("the handlers speak the queue's protocol" * doctest::timeout(10)) {
  fixture f;
  f.store->is_durable = false;
  auto q = f.make();
  q.start();
  auto handlers = q.handlers();
  auto add = caf::make_message(pool::add_work_atom_v, entry(1),
                               caf::timespan{0});
  auto counted = handlers(add);
  REQUIRE(counted);
  CHECK(counted->match_elements<pool::queue_counts>());
  auto get = caf::make_message(pool::get_work_atom_v, uint32_t{0});
  auto refused = handlers(get);
  REQUIRE(refused);
  CHECK(refused->match_elements<caf::error>());
  get = caf::make_message(pool::get_work_atom_v, uint32_t{8});
  auto work = handlers(get);
  REQUIRE(work);
  CHECK(work->match_elements<std::vector<work_record>>());
}
