// A user's regular expression: --colsep, --header, --regexp's --recstart
// and --recend, --_parset's names.
#pragma once

#include <regex>
#include <string>

namespace poolrun {

/// libstdc++'s default executor backtracks: it recursed once per character
/// matched (`--colsep ' +'` on a line of 30,000 spaces overflowed the stack,
/// SIGSEGV) and took exponential time on a pattern such as `(a*)*b` (20
/// characters ran for minutes; GNU parallel: 0.1 s). The polynomial
/// (Thompson NFA) executor recurses only as deep as the pattern is large;
/// a search takes time in line length × pattern size per start tried (so
/// up to the square of the line's length for a pattern that fails often);
/// a match found there is the longest at the leftmost start. It takes no
/// back-reference: a pattern with one keeps the backtracking executor.
/// Throws `std::regex_error` for a pattern that is not one.
inline std::regex user_regex(const std::string& text) {
  try {
    return std::regex{text, std::regex::ECMAScript |
                                std::regex_constants::__polynomial};
  } catch (const std::regex_error& e) {
    // libstdc++ 12 says error_complexity ("Unexpected back-reference in
    // polynomial mode"); a malformed pattern throws again below.
    if (e.code() != std::regex_constants::error_complexity &&
        e.code() != std::regex_constants::error_backref)
      throw;
  }
  return std::regex{text};
}

} // namespace poolrun
