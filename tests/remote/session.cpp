// The gatekeeper's session decisions without an actor system: admission
// against the limits, faults and quarantine on an injected clock, session
// secrets and rate-limited log lines.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include <pool/remote_session.hpp>
#include <pool/remote_types.hpp>

using namespace std::chrono_literals;
using pool::detail::attempt_note;
using pool::detail::session_book;
using pool::detail::session_limits;
using clock_type = pool::detail::remote_clock;

namespace {

session_limits limits(uint32_t nodes, uint32_t workers, uint32_t after,
                      caf::timespan span) {
  return session_limits{nodes, workers, after, span};
}

bool is_limit(const caf::error& err) {
  return err.category() == pool::remote_error_category &&
         err.code() == static_cast<uint8_t>(pool::remote_errc::limit);
}

} // namespace

TEST_CASE("sessions: at most max_nodes at a time, a closed one frees its "
          "place, and workers are capped per node" *
          doctest::timeout(5)) {
  session_book book{limits(2, 8, 3, 30s)};
  auto a = book.open(4);
  auto b = book.open(100);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->second == 4);
  CHECK(b->second == 8); // capped
  CHECK(a->first != b->first);
  auto c = book.open(1);
  REQUIRE(!c);
  CHECK(is_limit(c.error()));
  CHECK(book.size() == 2);
  book.close(a->first);
  auto d = book.open(1);
  REQUIRE(d);
  CHECK(d->first != a->first); // ids are never reused
  CHECK(!book.contains(a->first));
  auto zero = book.open(0);
  REQUIRE(!zero);
  CHECK(is_limit(zero.error()));
}

TEST_CASE("sessions: faults in a row quarantine a node until its time is "
          "up, an answer resets the count, stale results count nothing" *
          doctest::timeout(5)) {
  session_book book{limits(4, 8, 3, 30s)};
  auto id = book.open(2)->first;
  auto t0 = clock_type::time_point{} + 1000s;
  CHECK(!book.note(id, attempt_note::timed_out, t0));
  CHECK(!book.note(id, attempt_note::wrong_type, t0));
  CHECK(!book.note(id, attempt_note::answered, t0)); // resets
  CHECK(!book.note(id, attempt_note::timed_out, t0));
  CHECK(!book.note(id, attempt_note::stale, t0));
  CHECK(!book.note(id, attempt_note::timed_out, t0));
  CHECK(!book.quarantined(id, t0));
  CHECK(book.note(id, attempt_note::wrong_type, t0)); // third in a row
  CHECK(book.quarantined(id, t0));
  CHECK(book.quarantined(id, t0 + 29s));
  // Late faults of a quarantined node neither extend nor restart it.
  CHECK(!book.note(id, attempt_note::timed_out, t0 + 10s));
  CHECK(!book.release(id, t0 + 29s));
  CHECK(!book.quarantined(id, t0 + 30s));
  CHECK(book.release(id, t0 + 30s));
  CHECK(!book.release(id, t0 + 31s)); // once
  // The count starts afresh.
  CHECK(!book.note(id, attempt_note::timed_out, t0 + 31s));
  CHECK(!book.note(id, attempt_note::timed_out, t0 + 31s));
  CHECK(book.note(id, attempt_note::timed_out, t0 + 32s));
  // Unknown sessions are ignored.
  CHECK(!book.note(id + 100, attempt_note::timed_out, t0));
  CHECK(!book.quarantined(id + 100, t0));
}

TEST_CASE("sessions: node health quarantines a session for quarantine_for, "
          "once, and its faults start afresh" *
          doctest::timeout(5)) {
  session_book book{limits(4, 8, 3, 30s)};
  auto id = book.open(2)->first;
  auto t0 = clock_type::time_point{} + 1000s;
  CHECK(!book.note(id, attempt_note::timed_out, t0));
  CHECK(book.quarantine(id, t0));
  CHECK(!book.quarantine(id, t0 + 1s)); // already
  CHECK(book.quarantined(id, t0 + 29s));
  CHECK(book.release(id, t0 + 30s));
  CHECK(!book.note(id, attempt_note::timed_out, t0 + 31s));
  CHECK(!book.note(id, attempt_note::timed_out, t0 + 31s));
  CHECK(book.note(id, attempt_note::timed_out, t0 + 31s));
  CHECK(!book.quarantine(id + 100, t0));
}

TEST_CASE("sessions: secrets are 32 hex digits from the kernel, all "
          "different, and compare by content only" *
          doctest::timeout(5)) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    auto x = pool::detail::make_session_secret();
    REQUIRE(x.size() == 32);
    CHECK(x.find_first_not_of("0123456789abcdef") == std::string::npos);
    seen.insert(x);
  }
  CHECK(seen.size() == 1000);
  auto x = *seen.begin();
  CHECK(pool::detail::same_secret(x, std::string{x}));
  CHECK(!pool::detail::same_secret(x, x.substr(0, 31)));
  CHECK(!pool::detail::same_secret(x + "0", x));
  CHECK(!pool::detail::same_secret("", x));
  auto y = x;
  y[31] = y[31] == '0' ? '1' : '0';
  CHECK(!pool::detail::same_secret(y, x));
}

TEST_CASE("sessions: log lines at most burst per window, then one that "
          "says how many were left out" *
          doctest::timeout(5)) {
  pool::detail::log_limiter limiter{3, 10s};
  auto t0 = clock_type::time_point{} + 1000s;
  int admitted = 0;
  for (int i = 0; i < 100; ++i)
    if (limiter.admit(t0 + std::chrono::milliseconds(i), "refused"))
      ++admitted;
  CHECK(admitted == 3);
  CHECK(limiter.suppressed() == 97);
  auto next = limiter.admit(t0 + 10s, "refused");
  REQUIRE(next);
  CHECK(next->find("97 similar lines were left out") != std::string::npos);
  CHECK(limiter.suppressed() == 0);
  auto plain = limiter.admit(t0 + 10s, "refused");
  REQUIRE(plain);
  CHECK(*plain == "refused");
}
