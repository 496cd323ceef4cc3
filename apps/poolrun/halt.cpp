// GNU parallel's should_we_halt and halt, as a plain unit.
#include "halt.hpp"

#include <algorithm>
#include <cmath>

namespace poolrun {

namespace {

int percent_of(size_t part, size_t whole) {
  if (whole == 0)
    whole = 1;
  return static_cast<int>(
      std::ceil(static_cast<double>(part) / static_cast<double>(whole) * 100));
}

} // namespace

halt_policy::action halt_policy::finished(bool failed, int exit_code,
                                          int signal, size_t total) {
  ++finished_;
  if (failed)
    ++failed_;
  if (halted_ || spec_.on == halt_spec::when::never)
    return action::none;
  size_t limit = 0;
  switch (spec_.cause) {
    case halt_spec::why::fail:
      if (!failed)
        return action::none;
      limit = failed_;
      break;
    case halt_spec::why::success:
      if (failed)
        return action::none;
      limit = finished_ - failed_;
      break;
    case halt_spec::why::done:
      limit = finished_;
      break;
  }
  auto needed =
      spec_.percent ? static_cast<double>(total) * spec_.value / 100.0
                    : spec_.value;
  if (static_cast<double>(limit) < needed)
    return action::none;
  halted_ = true;
  if (spec_.cause == halt_spec::why::success) {
    status_ = 0;
  } else if (spec_.percent) {
    status_ = percent_of(failed_, total);
  } else if (spec_.value == 1) {
    // As bash reports a signal: 128 + its number.
    status_ = exit_code != 0 ? exit_code : (signal != 0 ? 128 + signal : 0);
  } else {
    status_ = static_cast<int>(std::min<size_t>(failed_, 101));
  }
  return spec_.on == halt_spec::when::now ? action::now : action::soon;
}

int halt_policy::exit_status(size_t started) const {
  if (status_)
    return *status_;
  if (spec_.on != halt_spec::when::never && spec_.percent)
    return percent_of(failed_, started);
  return static_cast<int>(std::min<size_t>(failed_, 101));
}

} // namespace poolrun
