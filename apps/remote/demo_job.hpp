// The demo job of the remote examples (and their tests): a CPU-bound hash.
#pragma once

#include <cstdint>

namespace remote_demo {

/// A CPU-bound hash of `x`: 2,000 rounds of splitmix64. The same input gives
/// the same output on every machine, so a caller can check any result.
inline int64_t hash_job(int32_t x) {
  auto h = static_cast<uint64_t>(static_cast<int64_t>(x));
  for (int i = 0; i < 2000; ++i) {
    h += 0x9e3779b97f4a7c15ull;
    auto z = h;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    h = z ^ (z >> 31);
  }
  return static_cast<int64_t>(h);
}

} // namespace remote_demo
