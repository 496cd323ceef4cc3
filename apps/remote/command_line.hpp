// What the remote examples share: their command lines (`--name value`
// pairs or `--name=value`, and positional words), the actor system's
// configuration, and waiting for a stop signal.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <signal.h>
#include <time.h>

#include <caf/all.hpp>
#include <pool/remote.hpp>

namespace remote_demo {

/// A parsed command line. Plain value.
struct command_line {
  std::map<std::string, std::string> named;
  std::vector<std::string> positional;
  /// Empty when the command line is well-formed.
  std::string error;

  bool has(const std::string& name) const {
    return named.count(name) > 0;
  }

  std::string text(const std::string& name, std::string fallback = {}) const {
    auto i = named.find(name);
    return i != named.end() ? i->second : fallback;
  }

  /// The value of `--name` as an unsigned number in [0, max], `fallback`
  /// when absent, nothing when malformed.
  std::optional<uint64_t> number(const std::string& name, uint64_t fallback,
                                 uint64_t max = UINT64_MAX) const {
    auto i = named.find(name);
    if (i == named.end())
      return fallback;
    return parse_number(i->second, max);
  }

  static std::optional<uint64_t> parse_number(const std::string& text,
                                              uint64_t max = UINT64_MAX) {
    if (text.empty() || text.size() > 19 ||
        text.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    auto x = std::stoull(text);
    if (x > max)
      return std::nullopt;
    return x;
  }
};

/// Parses `argv[1..]`. Options listed in `flags` take no value.
inline command_line
parse_command_line(int argc, char** argv,
                   const std::vector<std::string>& flags = {}) {
  command_line result;
  for (int i = 1; i < argc; ++i) {
    std::string word = argv[i];
    if (word.rfind("--", 0) != 0) {
      result.positional.push_back(word);
      continue;
    }
    auto name = word.substr(2);
    if (auto eq = name.find('='); eq != std::string::npos) {
      result.named[name.substr(0, eq)] = name.substr(eq + 1);
    } else if (std::find(flags.begin(), flags.end(), name) != flags.end()) {
      result.named[name] = "1";
    } else if (i + 1 < argc) {
      result.named[name] = argv[++i];
    } else {
      result.error = "--" + name + " needs a value";
    }
  }
  return result;
}

/// Configures `cfg` for remote pools, with CAF's own log lines off.
inline void configure(caf::actor_system_config& cfg) {
  cfg.set("logger.verbosity", caf::atom("quiet"));
  pool::configure_remote(cfg);
}

/// Blocks SIGINT and SIGTERM in this thread and in every thread started
/// after it (call it before the actor system starts), so that
/// `wait_for_stop` can take them.
inline sigset_t block_stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

/// Waits until SIGINT or SIGTERM arrives (returns true) or `watched`
/// terminates (returns false).
inline bool wait_for_stop(caf::actor_system& sys, const caf::actor& watched,
                          const sigset_t& signals) {
  caf::scoped_actor self{sys};
  self->monitor(watched);
  for (;;) {
    timespec poll{0, 50 * 1000 * 1000};
    if (sigtimedwait(&signals, nullptr, &poll) > 0)
      return true;
    auto down = false;
    self->receive([&](caf::down_msg&) { down = true; },
                  caf::after(std::chrono::seconds(0)) >> [] {});
    if (down)
      return false;
  }
}

} // namespace remote_demo
