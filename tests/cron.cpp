// Cron schedules in a time zone (plain unit, injected times): syntax,
// errors that name the field, the next tick, daylight-saving changes, and
// a brute-force check of next_after against every minute of a span.
#include <doctest/doctest.h>

#include <random>

#include <date/date.h>

#include "pool/cron.hpp"
#include "pool/errors.hpp"

using namespace std::chrono;
using pool::cron_schedule;

namespace {

/// UTC wall time from y/m/d h:m:s.
system_clock::time_point utc(int y, unsigned mo, unsigned d, int h = 0,
                             int mi = 0, int s = 0) {
  return date::sys_days{date::year{y} / date::month{mo} / date::day{d}} +
         hours{h} + minutes{mi} + seconds{s};
}

std::string text(std::optional<system_clock::time_point> t) {
  return t ? date::format("%F %T", floor<seconds>(*t)) : "none";
}

cron_schedule cron(const std::string& expr, const std::string& tz = "UTC") {
  auto x = cron_schedule::parse(expr, tz);
  REQUIRE_MESSAGE(x, pool::describe(x.error()));
  return *x;
}

/// The field named by a refused parse: "cron" or "time_zone".
std::string refused_field(const std::string& expr,
                          const std::string& tz = "UTC") {
  auto x = cron_schedule::parse(expr, tz);
  if (x)
    return "accepted";
  CHECK(pool::is(x.error(), pool::pool_errc::invalid_option));
  return x.error().context().get_as<std::string>(0);
}

} // namespace

TEST_CASE("cron: the next tick in UTC for the usual shapes" *
          doctest::timeout(10)) {
  auto t = utc(2026, 11, 25, 10, 7, 30); // a Wednesday
  CHECK(text(cron("*/15 * * * *").next_after(t)) == "2026-11-25 10:15:00");
  CHECK(text(cron("0 * * * *").next_after(t)) == "2026-11-25 11:00:00");
  CHECK(text(cron("@hourly").next_after(t)) == "2026-11-25 11:00:00");
  CHECK(text(cron("@daily").next_after(t)) == "2026-11-26 00:00:00");
  CHECK(text(cron("@weekly").next_after(t)) == "2026-11-29 00:00:00");
  CHECK(text(cron("@monthly").next_after(t)) == "2026-12-01 00:00:00");
  CHECK(text(cron("@yearly").next_after(t)) == "2027-01-01 00:00:00");
  CHECK(text(cron("0 9 * * MON-FRI").next_after(utc(2026, 11, 28, 12)))
        == "2026-11-30 09:00:00"); // Saturday -> Monday
  CHECK(text(cron("30 8 1,15 * *").next_after(t)) == "2026-12-01 08:30:00");
  CHECK(text(cron("0 0 * feb sun").next_after(t)) == "2027-02-07 00:00:00");
  CHECK(text(cron("0 12 * * 7").next_after(t)) == "2026-11-29 12:00:00");
  CHECK(text(cron("5/20 * * * *").next_after(t)) == "2026-11-25 10:25:00");
  CHECK(text(cron("0 0-6/3 * * *").next_after(t)) == "2026-11-26 00:00:00");
  // Both day fields restricted: either one (Vixie cron).
  CHECK(text(cron("0 0 13 * fri").next_after(t)) == "2026-11-27 00:00:00");
  CHECK(text(cron("0 0 1 * fri").next_after(utc(2026, 11, 28)))
        == "2026-12-01 00:00:00");
  // Six fields: seconds first.
  CHECK(text(cron("*/10 * * * * *").next_after(t)) == "2026-11-25 10:07:40");
  // Strictly after, also exactly on a tick and within its second.
  CHECK(text(cron("*/15 * * * *").next_after(utc(2026, 11, 25, 10, 15)))
        == "2026-11-25 10:30:00");
  CHECK(text(cron("*/15 * * * *").next_after(utc(2026, 11, 25, 10, 15) +
                                              milliseconds{300}))
        == "2026-11-25 10:30:00");
  // February 30th never comes.
  CHECK(!cron("0 0 30 2 *").next_after(t));
  CHECK(text(cron("0 0 29 2 *").next_after(t)) == "2028-02-29 00:00:00");
}

TEST_CASE("cron: a malformed expression or an unknown zone is refused, "
          "naming the field and what is wrong" *
          doctest::timeout(10)) {
  CHECK(refused_field("* * *") == "cron");
  CHECK(refused_field("") == "cron");
  CHECK(refused_field("* * * * * * *") == "cron");
  CHECK(refused_field("61 * * * *") == "cron");
  CHECK(refused_field("* 24 * * *") == "cron");
  CHECK(refused_field("* * 0 * *") == "cron");
  CHECK(refused_field("* * * 13 *") == "cron");
  CHECK(refused_field("* * * * 8") == "cron");
  CHECK(refused_field("*/0 * * * *") == "cron");
  CHECK(refused_field("5-1 * * * *") == "cron");
  CHECK(refused_field("a * * * *") == "cron");
  CHECK(refused_field("1,,2 * * * *") == "cron");
  CHECK(refused_field("1, * * * *") == "cron");
  CHECK(refused_field("/5 * * * *") == "cron");
  CHECK(refused_field("-1 * * * *") == "cron");
  CHECK(refused_field("99999999999 * * * *") == "cron");
  CHECK(refused_field("@often") == "cron");
  CHECK(refused_field("0 * * * *", "Mars/Olympus_Mons") == "time_zone");
  CHECK(refused_field("0 * * * *", "") == "time_zone");
  auto err = cron_schedule::parse("0 25 * * *").error();
  auto said = pool::describe(err);
  CHECK(said.find("hour") != std::string::npos);
  CHECK(said.find("25 is out of range 0-23") != std::string::npos);
}

TEST_CASE("cron: fields are local times of the zone, across daylight-saving "
          "changes" *
          doctest::timeout(10)) {
  // New York: 09:00 local is 14:00 UTC in winter, 13:00 in summer.
  auto ny = cron("0 9 * * *", "America/New_York");
  CHECK(text(ny.next_after(utc(2026, 11, 25))) == "2026-11-25 14:00:00");
  CHECK(text(ny.next_after(utc(2026, 7, 1))) == "2026-07-01 13:00:00");
  CHECK(ny.zone() == "America/New_York");
  // Berlin springs forward on 2026-03-29 at 02:00 to 03:00 (01:00 UTC):
  // 02:30 does not exist that day and is due at the change.
  auto berlin = cron("30 2 * * *", "Europe/Berlin");
  CHECK(text(berlin.next_after(utc(2026, 3, 28, 12)))
        == "2026-03-29 01:00:00");
  CHECK(text(berlin.next_after(utc(2026, 3, 29, 1)))
        == "2026-03-30 00:30:00");
  // ... and falls back on 2026-10-25 at 03:00 to 02:00 (01:00 UTC): 02:30
  // comes twice and is due once, the first time.
  CHECK(text(berlin.next_after(utc(2026, 10, 24, 12)))
        == "2026-10-25 00:30:00");
  CHECK(text(berlin.next_after(utc(2026, 10, 25, 0, 30)))
        == "2026-10-26 01:30:00");
  // Every ten minutes: the skipped hour has no ticks, the repeated hour
  // has them once.
  auto often = cron("*/10 * * * *", "Europe/Berlin");
  CHECK(text(often.next_after(utc(2026, 3, 29, 0, 50)))
        == "2026-03-29 01:00:00");
  CHECK(text(often.next_after(utc(2026, 10, 25, 0, 50)))
        == "2026-10-25 02:00:00");
}

TEST_CASE("cron: next_after agrees with a minute-by-minute search under "
          "random expressions" *
          doctest::timeout(60)) {
  std::mt19937 rng{20261125};
  auto pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>{lo, hi}(rng);
  };
  // A random field: its text, which values it allows, and whether it is
  // unrestricted (starts with '*').
  struct field {
    std::string text;
    std::vector<bool> allows;
    bool star = false;
  };
  auto make = [&](int lo, int hi) {
    field f;
    f.allows.assign(static_cast<size_t>(hi + 1), false);
    int a = lo, b = hi, step = 1;
    switch (pick(0, 3)) {
      case 0:
        f.text = "*";
        f.star = true;
        break;
      case 1:
        a = b = pick(lo, hi);
        f.text = std::to_string(a);
        break;
      case 2:
        a = pick(lo, hi);
        b = pick(a, hi);
        f.text = std::to_string(a) + "-" + std::to_string(b);
        break;
      default:
        step = pick(1, (hi - lo) / 2 + 1);
        f.text = "*/" + std::to_string(step);
        f.star = true;
    }
    for (int i = a; i <= b; i += step)
      f.allows[static_cast<size_t>(i)] = true;
    return f;
  };
  for (int round = 0; round < 60; ++round) {
    auto mi = make(0, 59);
    auto h = make(0, 23);
    auto dom = make(1, 31);
    auto dow = make(0, 6);
    auto expr = mi.text + " " + h.text + " " + dom.text + " * " + dow.text;
    auto t = utc(2026, 1, 1) + minutes{pick(0, 60 * 24 * 365)} +
             seconds{pick(0, 59)};
    CAPTURE(expr);
    CAPTURE(text(t));
    auto matches = [&](system_clock::time_point m) {
      auto day = floor<date::days>(m);
      date::year_month_day ymd{day};
      auto wd = date::weekday{day}.c_encoding();
      auto hms = date::hh_mm_ss<minutes>{floor<minutes>(m) - day};
      auto by_dom = dom.allows[static_cast<unsigned>(ymd.day())];
      auto by_dow = dow.allows[wd];
      auto day_ok = !dom.star && !dow.star ? by_dom || by_dow
                                           : by_dom && by_dow;
      return day_ok && h.allows[static_cast<size_t>(hms.hours().count())] &&
             mi.allows[static_cast<size_t>(hms.minutes().count())];
    };
    std::optional<system_clock::time_point> want;
    for (auto m = floor<minutes>(t) + minutes{1}; m < t + hours{24 * 400};
         m += minutes{1})
      if (matches(m)) {
        want = m;
        break;
      }
    CHECK(text(cron(expr).next_after(t)) == text(want));
  }
}
