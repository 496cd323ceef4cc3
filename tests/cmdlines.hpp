#pragma once

// Test helpers for secrets on a host: the command lines of its processes,
// as every local user can read them in /proc/PID/cmdline.

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <dirent.h>
#include <sys/types.h>

#include <doctest/doctest.h>

namespace pool::test {

/// The command line of process `pid` (NULs as spaces), or empty when gone.
inline std::string cmdline_of(pid_t pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/cmdline"};
  std::string text{std::istreambuf_iterator<char>{in}, {}};
  std::replace(text.begin(), text.end(), '\0', ' ');
  return text;
}

/// `pid: command line` of every process whose command line holds `text`.
inline std::vector<std::string> cmdlines_with(const std::string& text) {
  std::vector<std::string> result;
  auto dir = ::opendir("/proc");
  REQUIRE(dir != nullptr);
  while (auto entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name.empty() || name.find_first_not_of("0123456789") != name.npos)
      continue;
    auto line = cmdline_of(std::stoi(name));
    if (line.find(text) != std::string::npos)
      result.push_back(name + ": " + line);
  }
  ::closedir(dir);
  return result;
}

/// `cmdlines_with(text)` as one text, a line each (for failed checks).
inline std::string cmdlines_text(const std::string& text) {
  std::string result;
  for (auto& x : cmdlines_with(text))
    result += x + "\n";
  return result;
}

} // namespace pool::test
