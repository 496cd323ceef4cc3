// poolrun's command line, parsed with CLI11 after the input sources
// (`:::`, `::::`) are split off.
#pragma once

#include <string>
#include <vector>

#include "options.hpp"

namespace poolrun {

/// What `parse_command_line` found: the options, or what was wrong.
struct parsed_command_line {
  run_options options;
  /// Empty when the command line is valid.
  std::string error;
  /// -J/--profile names among the options (see profiles.hpp).
  std::vector<std::string> profiles;
};

/// Parses poolrun's command line (`argv[0]` is skipped): options, then the
/// command template (the first word that is not an option, and all after
/// it), then input sources from the first `:::`, `::::`, `:::+` or
/// `::::+` on. Reads no environment and no files. Never throws.
parsed_command_line parse_command_line(int argc, const char* const* argv);

/// `argv` with the options of `$PARALLEL` (`parallel_env`, may be null)
/// put before the first argument, as GNU parallel takes them: words split
/// at white space, a backslash makes the next character part of a word.
std::vector<std::string> with_environment_options(int argc,
                                                  const char* const* argv,
                                                  const char* parallel_env);

/// `--help`: the options by topic.
std::string usage();

/// `--version`.
std::string version_text();

} // namespace poolrun
