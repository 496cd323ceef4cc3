#pragma once

#include <string>

#include <caf/timespan.hpp>

namespace pool {

/// Renders `x` in the largest unit that shows it exactly, as CAF's
/// configuration writes durations: `30ms`, `2s`, `5min`, `1500us`, `-3ns`.
std::string duration_text(caf::timespan x);

/// Renders `x` for humans, three significant digits at most in the unit
/// that fits: `850us`, `35.1ms`, `1.2s`, `2.5min`, `3h`.
std::string short_duration(caf::timespan x);

} // namespace pool
