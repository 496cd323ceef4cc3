#include "pool/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace pool {

std::string to_string(log_level x) {
  switch (x) {
    case log_level::debug:
      return "debug";
    case log_level::info:
      return "info";
    case log_level::warning:
      return "warning";
    default:
      return "error";
  }
}

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

log_hook default_log_hook() {
  return [](log_level level, const std::string& pool, const std::string& text) {
    if (auto logger = pool_logger())
      logger->log(spdlog_level(level), "[{}] {}", pool, text);
  };
}

log_hook silent_log_hook() {
  return [](log_level, const std::string&, const std::string&) {};
}

} // namespace pool
