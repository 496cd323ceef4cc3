#pragma once

// Jobs that compute (not sleep) for a set time: a dependent multiply-add
// chain, calibrated once per run. Shared by the saturation and scaling
// workloads.

#include <algorithm>
#include <cstdint>

#include <caf/behavior.hpp>
#include <caf/event_based_actor.hpp>

#include "bench_util.hpp"

namespace bench {

/// Computes for `iters` steps of a dependent multiply-add chain (about a
/// nanosecond each) and folds the result into the reply.
inline int32_t burn(uint64_t iters, int32_t x) {
  uint64_t acc = static_cast<uint64_t>(x) | 1u;
  for (uint64_t i = 0; i < iters; ++i) {
    acc = acc * 6364136223846793005ull + 1442695040888963407ull;
    asm volatile("" : "+r"(acc));
  }
  return static_cast<int32_t>(acc & 0x7fff);
}

/// Steps of `burn` per microsecond on this machine: the fastest of a few
/// runs (the least disturbed one).
inline double steps_per_us() {
  constexpr uint64_t probe = 2'000'000;
  double best = 0;
  for (int i = 0; i < 7; ++i) {
    auto t0 = clock_type::now();
    volatile int32_t sink = burn(probe, i);
    (void) sink;
    auto us = static_cast<double>(ns_between(t0, clock_type::now())) / 1e3;
    best = std::max(best, static_cast<double>(probe) / us);
  }
  return best;
}

/// The job as a function object (the pool).
struct burner {
  uint64_t iters;
  int32_t operator()(int32_t x) const {
    return burn(iters, x);
  }
};

/// The job as an actor (actor_pool).
inline caf::behavior burner_actor(caf::event_based_actor*, uint64_t iters) {
  return {[iters](int32_t x) { return burn(iters, x); }};
}

} // namespace bench
