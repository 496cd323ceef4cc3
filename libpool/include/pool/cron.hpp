#pragma once

#include <bitset>
#include <chrono>
#include <optional>
#include <string>

#include <caf/expected.hpp>

namespace date {
class time_zone;
} // namespace date

namespace pool {

/// A cron schedule in a time zone: when a periodic operation is due.
///
/// Syntax: five fields, `minute hour day-of-month month day-of-week`, or
/// six with a leading `second`; each `*`, a number, a range `a-b`, a list
/// `a,b-c`, and steps `*/n`, `a-b/n`, `a/n`. Months and weekdays also by
/// name (`jan`..`dec`, `sun`..`sat`); weekday 0 and 7 are Sunday. As in
/// Vixie cron, when both day fields are restricted (neither starts with
/// `*`) a day matching either one is due. Shorthands: `@yearly` (`@annually`), `@monthly`, `@weekly`,
/// `@daily` (`@midnight`), `@hourly`.
///
/// Time zone: an IANA name (`Europe/Berlin`, default `UTC`). The fields
/// are local times there. A local time that the clocks skip (spring
/// forward) is due at the moment of the change; one they repeat (fall
/// back) is due once, the first time. Plain value; thread-safe to share.
class cron_schedule {
public:
  using sys_time = std::chrono::system_clock::time_point;

  /// Parses `expr` in `time_zone`. A malformed expression is
  /// `pool.invalid_option` naming the field `cron` and what is wrong; an
  /// unknown zone names `time_zone`.
  static caf::expected<cron_schedule> parse(const std::string& expr,
                                            const std::string& time_zone
                                            = "UTC");

  /// The first tick strictly after `t`, in whole seconds; none when there
  /// is none within eight years (e.g. `0 0 30 2 *`, February 30th).
  std::optional<sys_time> next_after(sys_time t) const;

  /// The expression as given.
  const std::string& text() const noexcept {
    return text_;
  }

  /// The time zone's name.
  const std::string& zone() const noexcept {
    return zone_name_;
  }

private:
  cron_schedule() = default;

  bool day_matches(int day_of_month, int month, int weekday) const;

  std::string text_;
  std::string zone_name_;
  const date::time_zone* zone_ = nullptr;
  std::bitset<60> seconds_;
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_;     // 1..31
  std::bitset<13> months_;   // 1..12
  std::bitset<7> weekdays_;  // 0 = Sunday
  bool any_day_ = true;      // day-of-month was `*`
  bool any_weekday_ = true;  // day-of-week was `*`
};

} // namespace pool
