// pool::spdlog: the logging hook on spdlog's logger "pool". Linking the
// target makes it the default hook (the registering object below).
#include "pool/spdlog_hook.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace pool {

namespace {

std::shared_ptr<spdlog::logger> pool_logger() {
  // spdlog's registry is the single place a logger named "pool" lives, so an
  // application that registered its own keeps it.
  if (auto existing = spdlog::get("pool"))
    return existing;
  try {
    return spdlog::stderr_color_mt("pool");
  } catch (const spdlog::spdlog_ex&) {
    return spdlog::get("pool"); // Another thread registered it first.
  }
}

spdlog::level::level_enum spdlog_level(log_level x) {
  switch (x) {
    case log_level::debug:
      return spdlog::level::debug;
    case log_level::info:
      return spdlog::level::info;
    case log_level::warning:
      return spdlog::level::warn;
    default:
      return spdlog::level::err;
  }
}

} // namespace

log_hook spdlog_log_hook() {
  return [](log_level level, const std::string& pool, const std::string& text) {
    if (auto logger = pool_logger())
      logger->log(spdlog_level(level), "[{}] {}", pool, text);
  };
}

} // namespace pool

/// Named by pool::spdlog's link option (`--undefined`), so that the linker
/// keeps this file (and runs its initializer) even from a static archive
/// that nothing else in the program refers to.
extern "C" {
extern const int pool_spdlog_hook_registered;
const int pool_spdlog_hook_registered
    = (pool::detail::register_default_log_hook(&pool::spdlog_log_hook), 1);
}
