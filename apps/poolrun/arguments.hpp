// poolrun's command line: the options a run is configured with, and parsing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <caf/timespan.hpp>

namespace poolrun {

/// Everything a run is configured with. Plain value.
struct run_options {
  /// Commands run at once (`-j`): dedicated worker threads.
  size_t jobs = 1;
  /// Extra attempts for a command that fails (`--retries`).
  uint32_t retries = 0;
  /// Delay before the first retry, doubled for each further one, plus up to
  /// 20 % jitter (`--retry-delay`).
  caf::timespan retry_delay = std::chrono::milliseconds(100);
  /// Longest one attempt may run (`--timeout`); none by default.
  std::optional<caf::timespan> timeout;
  /// GNU parallel joblog file (`--joblog`); empty for none, "-" for stdout.
  std::string joblog;
  /// Durable journal for resuming (`--journal`); empty for none.
  std::string journal;
  /// Where the commands come from: a file, or empty / "-" for stdin.
  std::string input;
  /// Print outputs in input order (`-k`).
  bool keep_order = false;
  /// Progress line on stderr when it is a terminal, and the summary.
  bool bar = false;
  /// Summary on stderr at the end.
  bool summary = false;
  /// With a journal: also print the recorded output of commands that
  /// finished in an earlier run.
  bool replay = false;
  /// `--help` was given.
  bool help = false;
  /// `--serve PORT`: publish the pool for `--join` nodes on this port (0:
  /// the system picks one).
  std::optional<uint16_t> serve_port;
  /// `--bind ADDR`: the address `--serve` listens on.
  std::string bind_address = "127.0.0.1";
  /// `--join HOST:PORT`: be a worker node of the poolrun serving there.
  std::string join_host;
  uint16_t join_port = 0;
  /// `--join-wait D`: how long a node keeps trying to reach its pool, at
  /// the start and after losing it.
  caf::timespan join_wait = std::chrono::seconds(10);
  /// `--token T`: the shared secret of `--serve` and `--join` (else the
  /// environment variable POOLRUN_TOKEN).
  std::string token;

  bool serving() const noexcept {
    return serve_port.has_value();
  }

  bool joining() const noexcept {
    return !join_host.empty();
  }
};

/// What `parse_arguments` found: the options, or what was wrong.
struct parsed_arguments {
  run_options options;
  /// Empty when the command line is valid.
  std::string error;
};

/// Parses poolrun's command line (`argv[0]` is skipped). Never throws.
/// Reads no environment: a missing `--token` is left empty (see
/// `check_token`).
parsed_arguments parse_arguments(int argc, const char* const* argv);

/// With `--serve` or `--join`: takes the token from `env_token` (the
/// environment variable POOLRUN_TOKEN, may be null) when `--token` was not
/// given; returns what is wrong when there is none, else "".
std::string check_token(run_options& opts, const char* env_token);

/// Parses a duration such as `500ms`, `2s`, `1.5s`, `1min`, `1h`, `250us`;
/// a plain number means seconds, as in GNU parallel. Returns nothing for
/// malformed or negative input.
std::optional<caf::timespan> parse_duration(std::string_view text);

/// The text `--help` prints.
std::string usage();

} // namespace poolrun
