// Admission on its own: the capacity, parked submits in order, unique keys
// being looked up, and the closed door of a draining pool.
#include <doctest/doctest.h>

#include <caf/make_message.hpp>

#include <pool/admission.hpp>

using pool::admission;
using pool::admission_verdict;
using pool::submission;

namespace {

submission sub(int x, std::string key = {}) {
  submission result;
  result.payload = caf::make_message(x);
  result.key = std::move(key);
  return result;
}

} // namespace

TEST_CASE("admission: unbounded, everything is accepted" *
          doctest::timeout(10)) {
  admission adm{std::nullopt, 0};
  CHECK(adm.check(1'000'000) == admission_verdict::accept);
}

TEST_CASE("admission: full, submits park up to the limit, then are "
          "rejected" *
          doctest::timeout(10)) {
  admission adm{2, 1};
  CHECK(adm.check(1) == admission_verdict::accept);
  CHECK(adm.check(2) == admission_verdict::park);
  adm.park(sub(1));
  CHECK(adm.check(2) == admission_verdict::reject);
}

TEST_CASE("admission: a new submit never overtakes a parked one" *
          doctest::timeout(10)) {
  admission adm{2, 3};
  adm.park(sub(1));
  adm.park(sub(2));
  // Room for one: still parked behind the two.
  CHECK(adm.check(1) == admission_verdict::park);
  adm.park(sub(3));
  auto first = adm.unpark(1);
  REQUIRE(first);
  CHECK(first->payload.get_as<int>(0) == 1);
  CHECK(!adm.unpark(2)); // full again
  auto second = adm.unpark(0);
  REQUIRE(second);
  CHECK(second->payload.get_as<int>(0) == 2);
  CHECK(adm.parked() == 1);
}

TEST_CASE("admission: submits waiting for a key count against the "
          "capacity" *
          doctest::timeout(10)) {
  admission adm{2, 0};
  adm.start_lookup(sub(1, "k"));
  CHECK(adm.looking_up() == 1);
  CHECK(adm.check(1) == admission_verdict::reject);
  auto same = sub(2, "k");
  CHECK(adm.join_lookup(same));
  auto other = sub(3, "j");
  CHECK(!adm.join_lookup(other));
  auto waiting = adm.end_lookup("k");
  CHECK(waiting.size() == 2);
  CHECK(adm.looking_up() == 0);
  CHECK(adm.check(1) == admission_verdict::accept);
}

TEST_CASE("admission: closed, every new submit is refused" *
          doctest::timeout(10)) {
  admission adm{std::nullopt, 10};
  adm.close();
  CHECK(adm.check(0) == admission_verdict::closed);
}
