#include "pool/duration_text.hpp"

#include <cstdint>

namespace pool {

std::string duration_text(caf::timespan x) {
  struct unit {
    int64_t ns;
    const char* suffix;
  };
  static constexpr unit units[] = {{3'600'000'000'000, "h"},
                                   {60'000'000'000, "min"},
                                   {1'000'000'000, "s"},
                                   {1'000'000, "ms"},
                                   {1'000, "us"}};
  auto n = x.count();
  if (n != 0)
    for (auto& u : units)
      if (n % u.ns == 0)
        return std::to_string(n / u.ns) + u.suffix;
  return std::to_string(n) + "ns";
}

} // namespace pool
