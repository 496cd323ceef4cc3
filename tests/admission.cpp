// Admission on its own: the capacity, parked submits in order, unique keys
// being looked up, and the closed door of a draining pool.
#include <doctest/doctest.h>

#include <caf/make_message.hpp>

#include <pool/detail/admission.hpp>
#include <pool/errors.hpp>
#include <pool/type_ids.hpp>

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

TEST_CASE("admission: the head of every submit message, and its refusals" *
          doctest::timeout(10)) {
  using namespace std::chrono_literals;
  auto head = [](caf::message msg, submission& into) {
    return pool::read_submit_header(msg.content(), into);
  };
  submission plain;
  CHECK(*head(caf::make_message(pool::submit_atom_v, 1), plain) == 1);
  CHECK(!plain.tracked);
  submission typed;
  CHECK(*head(caf::make_message(pool::enqueue_typed_atom_v, 1), typed) == 1);
  CHECK((typed.tracked && typed.typed));
  submission typed_opts;
  CHECK(*head(caf::make_message(pool::enqueue_typed_atom_v,
                                pool::job_options{}.priority(7).delay(2s),
                                1),
              typed_opts)
        == 2);
  CHECK((typed_opts.typed && typed_opts.policy.priority == 7
         && typed_opts.delay == 2s));
  submission once;
  CHECK(*head(caf::make_message(pool::enqueue_once_atom_v, "k", 1), once)
        == 2);
  CHECK((once.key == "k" && once.window && !once.typed));
  submission after;
  CHECK(*head(caf::make_message(pool::submit_after_atom_v, caf::timespan{3s},
                                1),
              after)
        == 2);
  CHECK(after.delay == 3s);
  // Refusals name what is wrong.
  submission bad;
  auto text = [&](caf::message msg) {
    auto result = head(std::move(msg), bad);
    REQUIRE(!result);
    return caf::to_string(result.error());
  };
  CHECK(text(caf::make_message(pool::enqueue_unique_atom_v, "", 1))
            .find("key") != std::string::npos);
  CHECK(text(caf::make_message(pool::submit_with_atom_v,
                               pool::job_options{}.unique_key("k"), 1))
            .find("unique_key") != std::string::npos);
  CHECK(text(caf::make_message(pool::enqueue_typed_atom_v,
                               pool::job_options{}.priority(2000), 1))
            .find("priority") != std::string::npos);
  auto untagged = head(caf::make_message(1, 2), bad);
  REQUIRE(!untagged);
  CHECK(pool::is(untagged.error(), pool::pool_errc::unexpected_message));
}
