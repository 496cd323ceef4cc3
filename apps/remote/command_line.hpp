// What the remote examples share: their command lines (`--name value`
// pairs or `--name=value`, and positional words), the token (never from
// the command line), the actor system's configuration, and waiting for a
// stop signal.
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
#include <pool/secret.hpp>

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

/// Parses `argv[1..]`. Options listed in `flags` take no value; `--help`
/// (or `-h`) is always a flag.
inline command_line
parse_command_line(int argc, char** argv,
                   const std::vector<std::string>& flags = {}) {
  command_line result;
  for (int i = 1; i < argc; ++i) {
    std::string word = argv[i];
    if (word == "--help" || word == "-h") {
      result.named["help"] = "1";
      continue;
    }
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

/// Where the programs take the token from, for their `--help`.
constexpr const char* token_help =
    "The token (shared by the pool, its nodes and its operators) is read\n"
    "from the first of these that is set, never from the command line,\n"
    "where every user of the host can read it (ps, /proc/PID/cmdline):\n"
    "  --token-file FILE  a file only its owner can read (chmod 600 FILE)\n"
    "  POOL_TOKEN_FILE    the same, as an environment variable\n"
    "  POOL_TOKEN         the token itself, in the environment\n";

/// The token from `--token-file`, `POOL_TOKEN_FILE` or `POOL_TOKEN`, or
/// nothing with `error` saying what is wrong: `--token` on the command
/// line (refused), a refused file, or no token at all. Call it before any
/// thread starts (it reads the environment).
inline std::optional<std::string> token_of(const command_line& args,
                                           std::string& error) {
  if (args.has("token")) {
    error = "--token would show the token to every user of this host (ps, "
            "/proc/PID/cmdline): put it in a file only you can read (chmod "
            "600 FILE) and pass --token-file FILE, or set POOL_TOKEN_FILE=FILE "
            "or POOL_TOKEN in the environment";
    return std::nullopt;
  }
  pool::secret_source src;
  src.file = args.text("token-file");
  src.file_option = "--token-file";
  src.file_variable = "POOL_TOKEN_FILE";
  src.variable = "POOL_TOKEN";
  if (args.has("token-file") && src.file.empty()) {
    error = "--token-file needs the path of a file holding the token";
    return std::nullopt;
  }
  auto token = pool::load_secret(src);
  if (!token) {
    error = pool::describe(token.error());
    return std::nullopt;
  }
  if (token->empty()) {
    error = "no token: pass --token-file FILE (a file only you can read), "
            "or set POOL_TOKEN_FILE=FILE or POOL_TOKEN in the environment";
    return std::nullopt;
  }
  return std::move(*token);
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
