#pragma once

#include <cstdint>
#include <random>

#include <caf/timespan.hpp>

namespace pool {

/// Delay before retrying an operation: exponential with a cap, plus jitter.
/// After the n-th failed attempt the delay is
/// `base = min(max, initial * multiplier^(n-1))`, plus `base * jitter * u`
/// with `u` uniform in [0, 1) from a generator seeded with `seed`: the same
/// seed gives the same sequence on every run. Not thread-safe; owned by one
/// shepherd.
class backoff {
public:
  backoff(caf::timespan initial, caf::timespan max, double multiplier,
          double jitter, uint64_t seed);

  /// Delay after failed attempt `failed_attempt` (1 for the first failure).
  caf::timespan next(uint32_t failed_attempt);

private:
  caf::timespan initial_;
  caf::timespan max_;
  double multiplier_;
  double jitter_;
  std::mt19937_64 rng_;
};

} // namespace pool
