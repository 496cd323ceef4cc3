// batch_buffers: the room of batch vectors, kept for the next batch.
#include "pool/batch_buffers.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include <caf/make_message.hpp>

namespace bb = pool::batch_buffers;

TEST_CASE("a batch vector given back is the next one taken, empty, with its "
          "room" * doctest::timeout(10)) {
  auto x = bb::records(64);
  REQUIRE(x.capacity() >= 64);
  for (uint64_t i = 1; i <= 64; ++i)
    x.emplace_back(pool::attempt_id{i, 1}, caf::make_message(int(i)));
  auto storage = x.data();
  auto payload = x.front().payload;
  CHECK(payload.cvals()->get_reference_count() == 2);
  bb::give(std::move(x));
  // Its entries were destroyed when it was given back.
  CHECK(payload.cvals()->get_reference_count() == 1);
  auto y = bb::records(10);
  CHECK(y.empty());
  CHECK(y.data() == storage);
  CHECK(y.capacity() >= 64);
  bb::give(std::move(y));
}

TEST_CASE("an outcome list given back is the next one taken" *
          doctest::timeout(10)) {
  auto x = bb::outcomes(40);
  x.resize(40);
  auto storage = x.data();
  bb::give(std::move(x));
  auto y = bb::outcomes(40);
  CHECK(y.empty());
  CHECK(y.data() == storage);
  bb::give(std::move(y));
}

TEST_CASE("a small vector, or one over 64 KiB, is not kept" *
          doctest::timeout(10)) {
  auto kept = bb::records(64);
  auto kept_storage = kept.data();
  bb::give(std::move(kept));
  std::vector<pool::work_record> small;
  small.reserve(2);
  bb::give(std::move(small));
  std::vector<pool::work_record> huge;
  huge.reserve(65536 / sizeof(pool::work_record) + 1);
  bb::give(std::move(huge));
  // The last one kept comes back first: neither of the later two was.
  auto z = bb::records(1);
  CHECK(z.data() == kept_storage);
  bb::give(std::move(z));
}

TEST_CASE("vectors go back and forth between threads without loss" *
          doctest::timeout(30)) {
  // A worker's thread takes, the shepherd's gives back: each taken vector
  // is empty and has the room asked for.
  std::atomic<int> bad{0};
  auto run = [&] {
    for (int i = 0; i < 2000; ++i) {
      auto x = bb::outcomes(32);
      if (!x.empty() || x.capacity() < 32)
        ++bad;
      x.resize(static_cast<size_t>(i % 32) + 1);
      bb::give(std::move(x));
    }
  };
  std::thread a{run};
  std::thread b{run};
  a.join();
  b.join();
  CHECK(bad == 0);
}
