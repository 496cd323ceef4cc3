// The shell side of a command: quoting, which shell, and commands simple
// enough to start without one.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace poolrun {

/// Quotes `text` for a Bourne shell exactly as GNU parallel does: unchanged
/// when it holds only `-_.+/` letters and digits, `''` when empty, else in
/// single quotes (a `'` becomes `'"'"'`).
std::string shell_quote(std::string_view text);

/// The shell commands run under, as GNU parallel picks it: `option` (from
/// --shell) if not empty, else $PARALLEL_SHELL, else the shell that started
/// poolrun (its nearest ancestor process that is a shell), else $SHELL,
/// else /bin/sh.
std::string choose_shell(const std::string& option);

/// The shell poolrun's nearest ancestor process is, or "" when none is.
std::string parent_shell();

/// When `command` is one plain external program with plain arguments (no
/// quotes, expansions, redirections, operators, assignments, globs, no
/// shell builtin or keyword), returns its words: running them directly
/// gives what `shell -c command` gives, without starting the shell (what
/// xargs does). `true` and `false` qualify unless their one argument is
/// --help or --version (which the programs answer and the builtins
/// ignore). Returns nothing otherwise.
std::optional<std::vector<std::string>>
simple_command(std::string_view command);

} // namespace poolrun
