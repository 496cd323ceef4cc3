// --results: the directory GNU parallel names for a job's values.
#include "results_dir.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string_view>
#include <utility>

namespace poolrun {

namespace {

std::string escape_for_dir(const std::string& value) {
  std::string out;
  for (auto c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\0':
        out += "\\0";
        break;
      case '/':
        out += "\\_";
        break;
      default:
        out += c;
    }
  }
  // As GNU parallel: a name longer than a directory entry may be is cut.
  if (out.size() > 255)
    out.resize(255);
  return out;
}

} // namespace

std::string results_dir_for(const std::string& base, const arguments& args,
                            const std::vector<std::string>& names) {
  std::string out = base;
  for (auto& rec : args) {
    if (names.empty()) {
      for (size_t i = 0; i < rec.size(); ++i)
        out += "/" + std::to_string(i + 1) + "/" + escape_for_dir(rec[i]);
      continue;
    }
    // Named by --header: in the order of the names, as GNU parallel.
    std::vector<std::pair<std::string, std::string>> fields;
    for (size_t i = 0; i < rec.size(); ++i)
      fields.emplace_back(i < names.size() ? names[i] : std::to_string(i + 1),
                          rec[i]);
    // As GNU parallel: by the names' numeric values (as Perl's <=>; a
    // name that is no number counts 0), then by text.
    auto number = [](const std::string& name) {
      auto start = name.find_first_not_of(" \t");
      bool numeric = start != std::string::npos &&
                     (std::isdigit(static_cast<unsigned char>(name[start])) ||
                      std::string_view{"+-."}.find(name[start]) !=
                          std::string_view::npos);
      return numeric ? std::strtod(name.c_str(), nullptr) : 0.0;
    };
    std::stable_sort(fields.begin(), fields.end(), [&](auto& a, auto& b) {
      auto x = number(a.first);
      auto y = number(b.first);
      return x != y ? x < y : a.first < b.first;
    });
    for (auto& [name, value] : fields)
      out += "/" + escape_for_dir(name) + "/" + escape_for_dir(value);
  }
  return out;
}

} // namespace poolrun
