#pragma once

#include <functional>
#include <string>

namespace pool {

/// Severity of a pool's log line.
enum class log_level {
  debug,
  info,
  warning,
  error,
};

/// Returns `"debug"`, `"info"`, `"warning"` or `"error"`.
std::string to_string(log_level x);

/// Where a pool's log lines go: (level, pool name, text). The one logging
/// hook of the library. Called from the shepherd's thread, one call per
/// line; it must not block for long and must not throw.
using log_hook = std::function<void(log_level level, const std::string& pool,
                                    const std::string& text)>;

/// The default hook: spdlog's logger named `"pool"` (stderr, created on
/// first use; an application may register its own logger of that name
/// with spdlog beforehand to send the lines elsewhere). Thread-safe.
log_hook default_log_hook();

/// A hook that drops every line.
log_hook silent_log_hook();

} // namespace pool
