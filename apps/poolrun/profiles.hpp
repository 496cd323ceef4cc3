// -J NAME / --profile NAME: options kept in a file, as GNU parallel's
// profiles (~/.parallel/NAME).
#pragma once

#include <string>
#include <vector>

namespace poolrun {

/// The words of `line` as a shell splits them: white space separates,
/// '...' and "..." quote, a backslash takes the next character (inside
/// "..." only before `"`, `\`, `$` and a backquote).
std::vector<std::string> shell_words(const std::string& line);

/// The option words of the profiles `names`, in order: a name starting
/// with "./" or "/" is that file; another is looked up in $PARALLEL_HOME,
/// $XDG_CONFIG_HOME/parallel, $XDG_CONFIG_DIRS' parallel folders and
/// ~/.parallel (each folder that has it). Lines starting with '#' are
/// comments. On a name found nowhere, `error` says so.
std::vector<std::string> profile_words(const std::vector<std::string>& names,
                                       std::string& error);

} // namespace poolrun
