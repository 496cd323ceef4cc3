#pragma once

#include <string>

#include <caf/timespan.hpp>

namespace pool {

/// Renders `x` in the largest unit that shows it exactly, as CAF's
/// configuration writes durations: `30ms`, `2s`, `5min`, `1500us`, `-3ns`.
std::string duration_text(caf::timespan x);

} // namespace pool
