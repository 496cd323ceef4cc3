// The queue link on its own: what goes to the queue, how answers are
// matched (one FIFO per kind), grouped adds, and the resend after a restart.
#include <doctest/doctest.h>

#include <caf/make_message.hpp>

#include <pool/detail/queue_link.hpp>
#include <pool/type_ids.hpp>

#include "fake_effects.hpp"

using namespace std::chrono_literals;
using pool::attempt_id;
using pool::queue_link;
namespace exchange = pool::exchange;

namespace {

struct fixture {
  pool::test::fake_effects fx;
  pool::operation_table table;
  queue_link link{table, fx};

  uint64_t op() {
    pool::operation x;
    x.payload = caf::make_message(7);
    x.stamp = fx.clock;
    return table.add(std::move(x), fx.clock);
  }

  void add(uint64_t id, caf::timespan delay = {}, std::string key = {}) {
    link.add(exchange::add{attempt_id{id, 1}, fx.clock + delay, std::move(key),
                           std::nullopt, false},
             fx.clock);
  }

  size_t adds() const {
    return fx.count_atom("queue", pool::add_work_atom::value);
  }

  /// The last message to the queue.
  const caf::message& last() const {
    return fx.log_.back().msg;
  }
};

} // namespace

TEST_CASE_FIXTURE(fixture, "link: entries due now are grouped while an add "
                           "is on its way, then go in one message" *
                               doctest::timeout(10)) {
  auto a = op(), b = op(), c = op();
  add(a);
  CHECK(adds() == 1);
  add(b);
  add(c);
  CHECK(adds() == 1); // kept
  CHECK(link.grouped() == 2);
  CHECK(link.adding());
  // The queue answers the first add: the kept ones go together, in order.
  auto taken = link.take(pool::answer_kind::counts);
  REQUIRE(taken);
  CHECK(std::holds_alternative<exchange::add>(*taken));
  CHECK(adds() == 2);
  REQUIRE(last()
              .match_elements<pool::add_work_atom,
                              std::vector<pool::work_record>>());
  auto& records = last().get_as<std::vector<pool::work_record>>(1);
  REQUIRE(records.size() == 2);
  CHECK(records[0].id.operation == b);
  CHECK(records[1].id.operation == c);
}

TEST_CASE_FIXTURE(fixture, "link: a keyed or delayed entry is never kept, "
                           "and without grouping nothing is" *
                               doctest::timeout(10)) {
  auto a = op(), b = op(), c = op();
  add(a);
  add(b, 0s, "key");
  add(c, 5s);
  CHECK(adds() == 3);
  link.group_adds(false);
  auto d = op();
  add(d);
  CHECK(adds() == 4);
}

TEST_CASE_FIXTURE(fixture, "link: an entry of an operation that ended is not "
                           "sent" *
                               doctest::timeout(10)) {
  auto a = op();
  table.end(a);
  add(a);
  CHECK(adds() == 0);
  CHECK(link.idle());
}

TEST_CASE_FIXTURE(fixture, "link: answers are matched per kind, in order" *
                               doctest::timeout(10)) {
  auto a = op();
  link.send(exchange::get{pool::worker_ref{1, 1}, 3});
  add(a);
  link.send(exchange::get{pool::worker_ref{}, 2});
  CHECK(link.getting() == 5);
  auto first = link.take(pool::answer_kind::work);
  REQUIRE(first);
  CHECK(std::get<exchange::get>(*first).wanted == 3);
  CHECK(link.getting() == 2);
  auto counts = link.take(pool::answer_kind::counts);
  REQUIRE(counts);
  CHECK(std::holds_alternative<exchange::add>(*counts));
  CHECK(!link.take(pool::answer_kind::counts));
  CHECK(!link.take(pool::answer_kind::key));
}

TEST_CASE_FIXTURE(fixture, "link: after a queue restart, everything pending "
                           "is sent again in its first order" *
                               doctest::timeout(10)) {
  auto a = op(), b = op();
  add(a, 1s);
  link.send(exchange::count{});
  link.send(exchange::get{pool::worker_ref{}, 1});
  add(b, 2s);
  auto before = fx.log_.size();
  link.resend_all();
  REQUIRE(fx.log_.size() == before + 4);
  std::vector<caf::atom_value> order;
  for (size_t i = before; i < fx.log_.size(); ++i)
    order.push_back(fx.log_[i].msg.get_as<caf::atom_value>(0));
  CHECK(order == std::vector<caf::atom_value>{
                     pool::add_work_atom::value,
                     pool::queue_msg::count_atom::value,
                     pool::get_work_atom::value, pool::add_work_atom::value});
  CHECK(link.getting() == 1);
}

TEST_CASE_FIXTURE(fixture, "link: knows when outcomes are being recorded" *
                               doctest::timeout(10)) {
  CHECK(!link.recording());
  link.send(exchange::record{
      caf::make_message(pool::queue_msg::finish_v, uint64_t{1}, 2), true});
  CHECK(link.recording());
  link.take(pool::answer_kind::counts);
  CHECK(!link.recording());
}
