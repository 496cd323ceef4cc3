// --halt and the exit status as GNU parallel computes them.
#include <doctest/doctest.h>

#include <string>

#include "halt.hpp"
#include "specs.hpp"

using poolrun::halt_policy;

namespace {

halt_policy policy(const std::string& text) {
  std::string why;
  auto spec = poolrun::parse_halt(text, why);
  REQUIRE_MESSAGE(spec, why);
  return halt_policy{*spec};
}

} // namespace

TEST_CASE("no --halt: the number of failures - at most 101" *
          doctest::timeout(10)) {
  halt_policy p;
  for (int i = 0; i < 150; ++i)
    CHECK(p.finished(i % 2 == 0, 1, 0, 0) == halt_policy::action::none);
  CHECK(p.exit_status(150) == 75);
  halt_policy many;
  for (int i = 0; i < 150; ++i)
    many.finished(true, 1, 0, 0);
  CHECK(many.exit_status(150) == 101);
}

TEST_CASE("fail=1 halts on the first failure with its exit status - or 128 "
          "plus its signal" *
          doctest::timeout(10)) {
  auto p = policy("now,fail=1");
  CHECK(p.finished(false, 0, 0, 0) == halt_policy::action::none);
  CHECK(p.finished(true, 3, 0, 0) == halt_policy::action::now);
  CHECK(p.halted());
  CHECK(p.exit_status(2) == 3);
  auto q = policy("soon,fail=1");
  CHECK(q.finished(true, 0, 9, 0) == halt_policy::action::soon);
  CHECK(q.exit_status(1) == 137);
}

TEST_CASE("fail=N counts - success halts with 0 - done counts all" *
          doctest::timeout(10)) {
  auto p = policy("soon,fail=2");
  CHECK(p.finished(true, 1, 0, 0) == halt_policy::action::none);
  CHECK(p.finished(true, 5, 0, 0) == halt_policy::action::soon);
  CHECK(p.exit_status(2) == 2);
  auto s = policy("now,success=1");
  CHECK(s.finished(true, 1, 0, 0) == halt_policy::action::none);
  CHECK(s.finished(false, 0, 0, 0) == halt_policy::action::now);
  CHECK(s.exit_status(2) == 0);
  auto d = policy("now,done=2");
  d.finished(false, 0, 0, 0);
  CHECK(d.finished(true, 1, 0, 0) == halt_policy::action::now);
  CHECK(d.exit_status(2) == 1);
}

TEST_CASE("percentages are of all jobs - and so is the exit status" *
          doctest::timeout(10)) {
  auto p = policy("soon,fail=50%");
  CHECK(p.finished(false, 0, 0, 6) == halt_policy::action::none);
  CHECK(p.finished(true, 1, 0, 6) == halt_policy::action::none);
  CHECK(p.finished(true, 1, 0, 6) == halt_policy::action::none);
  CHECK(p.finished(true, 1, 0, 6) == halt_policy::action::soon);
  CHECK(p.exit_status(4) == 50);
  // Not met: the percentage of the started jobs that failed, rounded up.
  auto q = policy("soon,fail=50%");
  q.finished(false, 0, 0, 6);
  q.finished(true, 1, 0, 6);
  q.finished(true, 1, 0, 6);
  for (int i = 0; i < 3; ++i)
    q.finished(false, 0, 0, 6);
  CHECK(!q.halted());
  CHECK(q.exit_status(6) == 34);
}
