#include "pool/backoff.hpp"

#include <algorithm>
#include <cmath>

namespace pool {

backoff::backoff(caf::timespan initial, caf::timespan max, double multiplier,
                 double jitter, uint64_t seed)
    : initial_(initial), max_(max), multiplier_(multiplier), jitter_(jitter),
      rng_(seed) {
  // nop
}

caf::timespan backoff::next(uint32_t failed_attempt) {
  auto exponent = failed_attempt > 0 ? failed_attempt - 1 : 0;
  // Computed in double to avoid overflow, then capped.
  auto base = static_cast<double>(initial_.count()) *
              std::pow(multiplier_, static_cast<double>(exponent));
  base = std::min(base, static_cast<double>(max_.count()));
  // A uniform draw in [0, 1) from the top 53 bits: the same on every
  // standard library, unlike std::uniform_real_distribution.
  auto u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  auto total = base + base * jitter_ * u;
  return caf::timespan{static_cast<caf::timespan::rep>(total)};
}

} // namespace pool
