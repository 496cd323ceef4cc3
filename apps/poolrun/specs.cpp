// Option value parsers.
#include "specs.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <vector>

#include <unistd.h>

#include "user_regex.hpp"

namespace poolrun {

std::optional<uint64_t> parse_count(std::string_view text, uint64_t min,
                                    uint64_t max) {
  uint64_t result = 0;
  auto last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), last, result);
  if (text.empty() || ec != std::errc{} || ptr != last || result < min ||
      result > max)
    return std::nullopt;
  return result;
}

namespace {

/// `text` cut at each of the characters `separators` (empty parts kept).
std::vector<std::string> split_at(std::string_view text,
                                  std::string_view separators) {
  std::vector<std::string> parts{""};
  for (char c : text)
    if (separators.find(c) != std::string_view::npos)
      parts.emplace_back();
    else
      parts.back() += c;
  return parts;
}

/// A non-negative decimal number (digits, at most one '.') at the start of
/// `text`; `used` gets its length.
std::optional<double> leading_number(std::string_view text, size_t& used) {
  used = 0;
  bool dot = false;
  while (used < text.size() &&
         ((text[used] >= '0' && text[used] <= '9') ||
          (text[used] == '.' && !dot))) {
    dot = dot || text[used] == '.';
    ++used;
  }
  if (used == 0 || (used == 1 && text[0] == '.'))
    return std::nullopt;
  return std::strtod(std::string{text.substr(0, used)}.c_str(), nullptr);
}

} // namespace

std::optional<caf::timespan> parse_duration(std::string_view text) {
  size_t used = 0;
  auto number = leading_number(text, used);
  if (!number)
    return std::nullopt;
  auto unit = text.substr(used);
  double scale = 0; // nanoseconds per unit
  if (unit.empty() || unit == "s")
    scale = 1e9;
  else if (unit == "ms")
    scale = 1e6;
  else if (unit == "us")
    scale = 1e3;
  else if (unit == "ns")
    scale = 1;
  else if (unit == "min" || unit == "m")
    scale = 60e9;
  else if (unit == "h")
    scale = 3600e9;
  else if (unit == "d")
    scale = 86400e9;
  else
    return std::nullopt;
  auto ns = *number * scale;
  if (!(ns < 9e18))
    return std::nullopt;
  return caf::timespan{static_cast<int64_t>(std::llround(ns))};
}

std::optional<size_t> parse_size(std::string_view text) {
  size_t used = 0;
  auto number = leading_number(text, used);
  if (!number)
    return std::nullopt;
  // GNU parallel's prefixes: K M G T powers of 1024, k m g t powers of
  // 1000, Ki ki Mi mi... powers of 1024.
  auto unit = text.substr(used);
  double scale = 1;
  if (!unit.empty()) {
    static const std::string_view prefixes = "kmgt";
    auto letter = unit[0];
    auto lower =
        static_cast<char>(std::tolower(static_cast<unsigned char>(letter)));
    auto power = prefixes.find(lower);
    bool binary = letter != lower || unit.substr(1) == "i";
    if (power == std::string_view::npos ||
        !(unit.size() == 1 || unit.substr(1) == "i"))
      return std::nullopt;
    scale = std::pow(binary ? 1024.0 : 1000.0, static_cast<double>(power + 1));
  }
  auto bytes = *number * scale;
  if (bytes < 1 || bytes > 1e15)
    return std::nullopt;
  return static_cast<size_t>(bytes);
}

std::optional<jobs_spec> parse_jobs(std::string_view text) {
  jobs_spec result;
  if (text.empty())
    return std::nullopt;
  if (text.back() == '%') {
    auto n = parse_count(text.substr(0, text.size() - 1), 1, 100000);
    if (!n)
      return std::nullopt;
    result.type = jobs_spec::kind::percent;
    result.value = static_cast<int64_t>(*n);
    return result;
  }
  if (text[0] == '+' || text[0] == '-') {
    auto n = parse_count(text.substr(1), 0, 100000);
    if (!n)
      return std::nullopt;
    result.type =
        text[0] == '+' ? jobs_spec::kind::plus : jobs_spec::kind::minus;
    result.value = static_cast<int64_t>(*n);
    return result;
  }
  auto n = parse_count(text, 0, 100000);
  if (!n)
    return std::nullopt;
  result.type = *n == 0 ? jobs_spec::kind::unlimited : jobs_spec::kind::count;
  result.value = static_cast<int64_t>(*n);
  return result;
}

size_t jobs_spec::slots(size_t cores) const {
  auto c = static_cast<int64_t>(cores);
  int64_t n = 1;
  switch (type) {
    case kind::count:
      n = value;
      break;
    case kind::percent:
      n = c * value / 100;
      break;
    case kind::plus:
      n = c + value;
      break;
    case kind::minus:
      n = c - value;
      break;
    case kind::unlimited:
      n = static_cast<int64_t>(unlimited_jobs);
      break;
  }
  return static_cast<size_t>(std::max<int64_t>(n, 1));
}

std::optional<halt_spec> parse_halt(std::string_view text, std::string& why) {
  std::string form{text};
  if (form == "0")
    form = "never";
  else if (form == "1")
    form = "soon,fail=1";
  else if (form == "2")
    form = "now,fail=1";
  else if (form == "-1")
    form = "soon,success=1";
  else if (form == "-2")
    form = "now,success=1";
  else if (!form.empty() && form.back() == '%' &&
           form.find_first_of(",=") == std::string::npos)
    form = "soon,fail=" + form;
  halt_spec result;
  auto comma = form.find(',');
  auto when = form.substr(0, comma);
  if (when == "never")
    result.on = halt_spec::when::never;
  else if (when == "soon")
    result.on = halt_spec::when::soon;
  else if (when == "now")
    result.on = halt_spec::when::now;
  else {
    why = "--halt must start with 'never', 'soon' or 'now'";
    return std::nullopt;
  }
  if (result.on == halt_spec::when::never)
    return comma == std::string::npos
               ? std::optional<halt_spec>{result}
               : (why = "--halt never takes nothing after it", std::nullopt);
  auto rest = comma == std::string::npos ? std::string{}
                                         : form.substr(comma + 1);
  auto eq = rest.find('=');
  auto cause = rest.substr(0, eq);
  if (cause == "fail")
    result.cause = halt_spec::why::fail;
  else if (cause == "success")
    result.cause = halt_spec::why::success;
  else if (cause == "done")
    result.cause = halt_spec::why::done;
  else {
    why = "--halt " + when + " must be followed by ,fail=, ,success= or ,done=";
    return std::nullopt;
  }
  auto amount = eq == std::string::npos ? std::string{} : rest.substr(eq + 1);
  result.percent = !amount.empty() && amount.back() == '%';
  if (result.percent)
    amount.pop_back();
  auto n = parse_count(amount, result.percent ? 1 : 1,
                       result.percent ? 100 : 1000000000);
  if (!n) {
    why = "--halt " + when + "," + cause +
          " must be followed by =N or =N% (N at least 1)";
    return std::nullopt;
  }
  result.value = static_cast<double>(*n);
  return result;
}

std::string gnu_halt_error(std::string_view text) {
  // GNU parallel's checks, in its order: the short forms expanded, then
  // the value split at ',' and '='.
  std::string form{text};
  for (auto [from, to] : {std::pair{"0", "never"}, {"1", "soon,fail=1"},
                          {"2", "now,fail=1"}, {"-1", "soon,success=1"},
                          {"-2", "now,success=1"}})
    if (form == from)
      form = to;
  if (form.size() > 1 && form.back() == '%' &&
      form.find_first_not_of("0123456789") == form.size() - 1)
    form = "soon,fail=" + form;
  auto parts = split_at(form, ",=");
  parts.resize(std::max<size_t>(parts.size(), 3));
  const auto& when = parts[0];
  if (when != "never" && when != "soon" && when != "now")
    return "Error: --halt must have 'never', 'soon', or 'now'.";
  if (when == "never")
    return {};
  if (parts[1] != "fail" && parts[1] != "success" && parts[1] != "done")
    return "Error: --halt " + when + " must be followed by ,success or ,fail.";
  const auto& amount = parts[2];
  auto digits = amount.substr(0, amount.size() - (!amount.empty() &&
                                                  amount.back() == '%'));
  if (digits.empty() ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    return "Error: --halt " + when + "," + parts[1] +
           " must be followed by ,number or ,percent%.";
  return {};
}

std::string parse_parset(std::string_view text, run_options& o) {
  auto names = split_at(text, ", ");
  auto kind = names.front();
  names.erase(names.begin());
  static const std::regex legal =
      user_regex("[a-zA-Z_][a-zA-Z_0-9]*(\\[[0-9]+\\])?");
  for (auto& name : names)
    if (!std::regex_match(name, legal))
      return "--_parset: '" + name +
             "' is no variable name (a letter or _, then letters, digits "
             "or _; NAME[N] for an entry of an array)";
  if (names.empty() || (kind != "var" && kind != "assoc"))
    return "--_parset: expected var,NAME... or assoc,NAME (as parset "
           "from env_parallel gives it)";
  o.parset = kind == "assoc"      ? run_options::parset_mode::assoc
             : names.size() > 1 ? run_options::parset_mode::vars
                                : run_options::parset_mode::array;
  o.parset_names = std::move(names);
  return {};
}

std::string find_compress_program() {
  // GNU parallel's order (fastest first on many cores).
  static const char* const programs[] = {
      "pzstd", "lbzip2", "pbzip2", "zstd", "pixz", "lz4",  "pigz", "lzop",
      "plzip", "lzip",   "gzip",   "lrz",  "pxz",  "bzip2", "lzma", "xz",
      "clzip"};
  std::string path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  for (auto program : programs)
    for (size_t at = 0; at <= path.size();) {
      auto end = std::min(path.find(':', at), path.size());
      auto dir = path.substr(at, end - at);
      if (::access(((dir.empty() ? "." : dir) + "/" + program).c_str(),
                   X_OK) == 0)
        return std::string{program} + " -c -1";
      at = end + 1;
    }
  return "cat";
}

} // namespace poolrun
