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

/// The default hook. In a program that links `pool::spdlog`, spdlog's
/// logger named `"pool"` (`spdlog_log_hook()` in `pool/spdlog_hook.hpp`);
/// otherwise `stderr_log_hook()`. Thread-safe.
log_hook default_log_hook();

/// A line per call on stderr, in spdlog's default layout without colours:
/// `[2026-11-27 20:00:00.123] [pool] [warning] [<pool name>] <text>`.
/// Whole lines: concurrent calls never interleave. Thread-safe.
log_hook stderr_log_hook();

/// A hook that drops every line.
log_hook silent_log_hook();

namespace detail {

/// What `default_log_hook()` returns; `pool::spdlog` registers its hook
/// here when linked. Not for applications: pass `pool_options::log`.
void register_default_log_hook(log_hook (*make)());

} // namespace detail

} // namespace pool
