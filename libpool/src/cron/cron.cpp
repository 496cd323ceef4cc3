#include "pool/cron.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <vector>

#include <date/tz.h>
#include <fmt/format.h>

#include "pool/errors.hpp"

namespace pool {

namespace {

constexpr const char* month_names[] = {"jan", "feb", "mar", "apr",
                                       "may", "jun", "jul", "aug",
                                       "sep", "oct", "nov", "dec"};
constexpr const char* day_names[] = {"sun", "mon", "tue", "wed",
                                     "thu", "fri", "sat"};

struct field_spec {
  const char* name;
  int lo;
  int hi;
  const char* const* names; // first name is `lo` (months) or 0 (days)
  int name_count;
};

caf::error bad_cron(const std::string& expr, const std::string& why) {
  return caf::make_error(pool_errc::invalid_option, std::string{"cron"},
                         "'" + expr + "': " + why +
                             " (expected 'minute hour day-of-month month "
                             "day-of-week', optionally with a leading "
                             "second, or @daily and the like)");
}

std::string lower(std::string x) {
  for (auto& c : x)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return x;
}

// Reads a number or (for months and weekdays) a name; false if neither.
bool read_value(const std::string& text, const field_spec& f, int& out) {
  if (text.empty())
    return false;
  if (std::all_of(text.begin(), text.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    if (text.size() > 4)
      return false;
    out = std::stoi(text);
    return true;
  }
  auto name = lower(text);
  for (int i = 0; i < f.name_count; ++i)
    if (name == f.names[i]) {
      out = f.names == month_names ? i + 1 : i;
      return true;
    }
  return false;
}

// Parses one field into `bits` (indexes lo..hi); `any` says it was `*`.
template <size_t N>
caf::error parse_field(const std::string& expr, const std::string& text,
                       const field_spec& f, std::bitset<N>& bits, bool& any) {
  auto fail = [&](const std::string& why) {
    return bad_cron(expr, fmt::format("{} field '{}': {}", f.name, text, why));
  };
  // As Vixie cron: a field starting with `*` (also `*/2`) is unrestricted
  // for the either-day rule.
  any = text.front() == '*' || text.front() == '?';
  std::stringstream parts{text};
  std::string part;
  bool seen = false;
  while (std::getline(parts, part, ',')) {
    seen = true;
    int step = 1;
    auto stepped = part.find('/') != std::string::npos;
    if (auto slash = part.find('/'); stepped) {
      auto s = part.substr(slash + 1);
      if (!read_value(s, field_spec{f.name, 1, 0, nullptr, 0}, step) ||
          step < 1)
        return fail("the step '" + s + "' must be a whole number of at "
                    "least 1");
      part = part.substr(0, slash);
      if (part.empty())
        return fail("a step needs a range before it, e.g. */5");
    }
    int a = f.lo;
    int b = f.hi;
    if (part != "*" && part != "?") {
      auto dash = part.find('-');
      auto first = part.substr(0, dash);
      if (!read_value(first, f, a))
        return fail("'" + first + "' is not a number" +
                    (f.names ? std::string{" or a name"} : std::string{}));
      if (dash != std::string::npos) {
        auto last = part.substr(dash + 1);
        if (!read_value(last, f, b))
          return fail("'" + last + "' is not a number" +
                      (f.names ? std::string{" or a name"} : std::string{}));
      } else if (!stepped) {
        b = a; // a single value (`a/n` runs from a to the end)
      }
    }
    auto hi = f.hi == 6 ? 7 : f.hi; // weekday 7 is Sunday
    if (a < f.lo || a > hi || b < f.lo || b > hi)
      return fail(fmt::format("{} is out of range {}-{}", a < f.lo || a > hi ? a : b,
                              f.lo, hi));
    if (a > b)
      return fail(fmt::format("the range {}-{} runs backwards", a, b));
    for (int i = a; i <= b; i += step)
      bits.set(static_cast<size_t>(f.hi == 6 ? i % 7 : i));
  }
  if (!seen || text.back() == ',')
    return fail("an empty list item");
  return caf::none;
}

} // namespace

caf::expected<cron_schedule> cron_schedule::parse(const std::string& expr,
                                                  const std::string& tz) {
  cron_schedule result;
  result.text_ = expr;
  result.zone_name_ = tz;
  try {
    result.zone_ = date::locate_zone(tz);
  } catch (std::exception&) {
    return caf::make_error(pool_errc::invalid_option, std::string{"time_zone"},
                           "unknown time zone '" + tz +
                               "': use an IANA name such as Europe/Berlin, "
                               "America/New_York or UTC");
  }
  std::string text = lower(expr);
  static const std::pair<const char*, const char*> shorthands[] = {
      {"@yearly", "0 0 1 1 *"},  {"@annually", "0 0 1 1 *"},
      {"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
      {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
      {"@hourly", "0 * * * *"}};
  if (!text.empty() && text.front() == '@') {
    auto i = std::find_if(std::begin(shorthands), std::end(shorthands),
                          [&](auto& x) { return text == x.first; });
    if (i == std::end(shorthands))
      return bad_cron(expr, "unknown shorthand");
    text = i->second;
  }
  std::vector<std::string> fields;
  std::stringstream in{text};
  for (std::string f; in >> f;)
    fields.push_back(f);
  if (fields.size() != 5 && fields.size() != 6)
    return bad_cron(expr, fmt::format("{} fields", fields.size()));
  if (fields.size() == 5)
    fields.insert(fields.begin(), "0");
  bool unused = false;
  const field_spec specs[] = {
      {"second", 0, 59, nullptr, 0},     {"minute", 0, 59, nullptr, 0},
      {"hour", 0, 23, nullptr, 0},       {"day-of-month", 1, 31, nullptr, 0},
      {"month", 1, 12, month_names, 12}, {"day-of-week", 0, 6, day_names, 7}};
  caf::error err;
  if ((err = parse_field(expr, fields[0], specs[0], result.seconds_, unused))
      || (err = parse_field(expr, fields[1], specs[1], result.minutes_, unused))
      || (err = parse_field(expr, fields[2], specs[2], result.hours_, unused))
      || (err = parse_field(expr, fields[3], specs[3], result.days_,
                            result.any_day_))
      || (err = parse_field(expr, fields[4], specs[4], result.months_, unused))
      || (err = parse_field(expr, fields[5], specs[5], result.weekdays_,
                            result.any_weekday_)))
    return err;
  return result;
}

bool cron_schedule::day_matches(int dom, int month, int weekday) const {
  if (!months_.test(static_cast<size_t>(month)))
    return false;
  auto by_day = days_.test(static_cast<size_t>(dom));
  auto by_weekday = weekdays_.test(static_cast<size_t>(weekday));
  if (!any_day_ && !any_weekday_)
    return by_day || by_weekday; // Vixie cron: either one
  return by_day && by_weekday;
}

std::optional<cron_schedule::sys_time>
cron_schedule::next_after(sys_time t) const {
  using namespace std::chrono;
  auto after = floor<seconds>(t);
  auto start = zone_->to_local(after) + seconds{1};
  auto day = floor<date::days>(start);
  for (int n = 0; n < 366 * 8 + 2; ++n, day += date::days{1}) {
    date::year_month_day ymd{day};
    date::weekday wd{day};
    if (!day_matches(static_cast<int>(static_cast<unsigned>(ymd.day())),
                     static_cast<int>(static_cast<unsigned>(ymd.month())),
                     static_cast<int>(wd.c_encoding())))
      continue;
    for (int h = 0; h < 24; ++h) {
      if (!hours_.test(static_cast<size_t>(h))
          || day + hours{h} + hours{1} <= start)
        continue;
      for (int m = 0; m < 60; ++m) {
        auto minute = day + hours{h} + minutes{m};
        if (!minutes_.test(static_cast<size_t>(m)) || minute + minutes{1} <= start)
          continue;
        for (int s = 0; s < 60; ++s) {
          auto local = minute + seconds{s};
          if (!seconds_.test(static_cast<size_t>(s)) || local < start)
            continue;
          auto when = zone_->to_sys(local, date::choose::earliest);
          if (when > after)
            return time_point_cast<system_clock::duration>(when);
        }
      }
    }
  }
  return std::nullopt;
}

} // namespace pool
