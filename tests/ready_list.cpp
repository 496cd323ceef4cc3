// ready_list: the dispatcher's entries taken out of the queue ahead.
#include "pool/detail/ready_list.hpp"

#include <doctest/doctest.h>

#include <caf/make_message.hpp>

namespace {

std::vector<pool::work_record> records(uint64_t first, uint64_t n) {
  std::vector<pool::work_record> result;
  for (auto i = first; i < first + n; ++i)
    result.emplace_back(pool::attempt_id{i, 1}, caf::make_message(int(i)));
  return result;
}

std::vector<uint64_t> ids(const std::vector<pool::work_record>& xs) {
  std::vector<uint64_t> result;
  for (auto& x : xs)
    result.push_back(x.id.operation);
  return result;
}

} // namespace

TEST_CASE("ready_list: a batch taken whole goes on whole, without moving "
          "its entries" *
          doctest::timeout(10)) {
  pool::ready_list ready;
  CHECK(ready.empty());
  auto batch = records(1, 3);
  auto storage = batch.data();
  ready.append(std::move(batch));
  CHECK(ready.size() == 3);
  auto out = ready.take(10); // more than ready: all of them
  CHECK(out.data() == storage); // the same buffer, handed on
  CHECK(ids(out) == std::vector<uint64_t>{1, 2, 3});
  CHECK(out[1].payload.get_as<int>(0) == 2);
  CHECK(ready.empty());
  CHECK(ready.take(5).empty());
}

TEST_CASE("ready_list: partial takes, appends behind, a batch put back in "
          "front, removal: oldest first throughout" *
          doctest::timeout(10)) {
  pool::ready_list ready;
  ready.append(records(1, 4));
  CHECK(ids(ready.take(2)) == std::vector<uint64_t>{1, 2});
  ready.append(records(5, 2)); // behind 3 and 4
  ready.push_back(std::move(records(7, 1).front()));
  CHECK(ready.size() == 5);
  ready.push_front(records(100, 2)); // taken back: first in line again
  CHECK(ids(ready.take(3)) == std::vector<uint64_t>{100, 101, 3});
  ready.remove_if([](const pool::work_record& x) {
    return x.id.operation == 5 || x.id.operation == 7;
  });
  CHECK(ready.size() == 2);
  CHECK(ids(ready.take(9)) == std::vector<uint64_t>{4, 6});
  CHECK(ready.empty());
  // Many partial takes between pushes keep the order and drop what was
  // taken (the buffer does not grow for ever).
  uint64_t next = 1000, expect = 1000;
  for (int round = 0; round < 200; ++round) {
    ready.push_back(std::move(records(next++, 1).front()));
    ready.push_back(std::move(records(next++, 1).front()));
    for (auto id : ids(ready.take(1)))
      CHECK(id == expect++);
  }
  CHECK(ready.size() == 200);
  for (auto id : ids(ready.take(1000)))
    CHECK(id == expect++);
  CHECK(expect == next);
  // Putting back into an empty list, and an empty batch, change nothing
  // else.
  ready.push_front({});
  CHECK(ready.empty());
  ready.push_front(records(1, 2));
  CHECK(ids(ready.take(1)) == std::vector<uint64_t>{1});
  CHECK(ids(ready.take(1)) == std::vector<uint64_t>{2});
}
