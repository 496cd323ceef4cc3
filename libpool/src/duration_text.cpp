#include "pool/duration_text.hpp"

#include <cstdint>
#include <cstdio>

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

std::string short_duration(caf::timespan x) {
  struct unit {
    double ns;
    const char* suffix;
  };
  static constexpr unit units[] = {{3.6e12, "h"}, {120e9, "min"},
                                   {1e9, "s"},    {1e6, "ms"},
                                   {1e3, "us"}};
  auto ns = static_cast<double>(x.count());
  for (auto& u : units)
    if (ns >= u.ns) {
      auto per = u.ns == 120e9 ? 60e9 : u.ns;
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3g%s", ns / per, u.suffix);
      return buf;
    }
  return std::to_string(x.count()) + "ns";
}

} // namespace pool
