#include "pool/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

#include <fmt/format.h>

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

/// Set once, by a target's registering object, before main.
std::atomic<log_hook (*)()> registered_default{nullptr};

std::string local_time_now() {
  using namespace std::chrono;
  auto now = system_clock::now();
  auto secs = system_clock::to_time_t(now);
  auto millis = duration_cast<milliseconds>(now.time_since_epoch()).count()
                % 1000;
  std::tm local{};
  localtime_r(&secs, &local);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &local);
  return fmt::format("{}.{:03}", text, millis);
}

} // namespace

log_hook stderr_log_hook() {
  return [](log_level level, const std::string& pool, const std::string& text) {
    auto line = fmt::format("[{}] [pool] [{}] [{}] {}\n", local_time_now(),
                            to_string(level), pool, text);
    static std::mutex mtx;
    std::lock_guard<std::mutex> guard{mtx};
    std::fwrite(line.data(), 1, line.size(), stderr);
  };
}

log_hook default_log_hook() {
  if (auto make = registered_default.load())
    return make();
  return stderr_log_hook();
}

log_hook silent_log_hook() {
  return [](log_level, const std::string&, const std::string&) {};
}

namespace detail {

void register_default_log_hook(log_hook (*make)()) {
  registered_default.store(make);
}

} // namespace detail

} // namespace pool
