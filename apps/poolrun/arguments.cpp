// Parses poolrun's command line into run_options, with messages for mistakes.
#include "arguments.hpp"

#include <charconv>
#include <cmath>
#include <vector>

#include <pool/options.hpp>

namespace poolrun {

namespace {

/// Parses a whole decimal number of at least `min`; nothing otherwise.
std::optional<uint64_t> parse_count(std::string_view text, uint64_t min) {
  uint64_t result = 0;
  auto last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), last, result);
  if (text.empty() || ec != std::errc{} || ptr != last || result < min)
    return std::nullopt;
  return result;
}

/// Options that take a value, by every name they answer to.
enum class valued {
  jobs,
  retries,
  retry_delay,
  timeout,
  joblog,
  journal,
  input,
  serve,
  bind,
  join,
  join_wait,
  token
};

std::optional<valued> valued_option(std::string_view name) {
  if (name == "-j" || name == "-P" || name == "--jobs")
    return valued::jobs;
  if (name == "--retries")
    return valued::retries;
  if (name == "--retry-delay")
    return valued::retry_delay;
  if (name == "--timeout")
    return valued::timeout;
  if (name == "--joblog")
    return valued::joblog;
  if (name == "--journal")
    return valued::journal;
  if (name == "-a" || name == "--arg-file")
    return valued::input;
  if (name == "--serve")
    return valued::serve;
  if (name == "--bind")
    return valued::bind;
  if (name == "--join")
    return valued::join;
  if (name == "--join-wait")
    return valued::join_wait;
  if (name == "--token")
    return valued::token;
  return std::nullopt;
}

/// Stores `value` for option `name`; returns what was wrong, or "".
std::string set_valued(run_options& opts, valued which, std::string_view name,
                       std::string_view value) {
  auto bad = [&](std::string_view what) {
    return "invalid value '" + std::string{value} + "' for " +
           std::string{name} + ": " + std::string{what};
  };
  switch (which) {
    case valued::jobs:
      if (auto n = parse_count(value, 1)) {
        opts.jobs = static_cast<size_t>(*n);
        return {};
      }
      if (value == "0")
        return bad("a pool needs at least one local worker (with --serve, "
                   "use -j 1: the joined nodes' workers come on top)");
      return bad("expected a whole number of at least 1");
    case valued::retries:
      if (auto n = parse_count(value, 0); n && *n < 1000000) {
        opts.retries = static_cast<uint32_t>(*n);
        return {};
      }
      return bad("expected a whole number of at least 0");
    case valued::retry_delay:
      if (auto d = parse_duration(value)) {
        opts.retry_delay = *d;
        return {};
      }
      return bad("expected a duration such as 100ms, 2s or 1min");
    case valued::timeout:
      if (auto d = parse_duration(value); d && d->count() > 0) {
        opts.timeout = *d;
        return {};
      }
      return bad("expected a positive duration such as 500ms, 2s or 1min");
    case valued::joblog:
      opts.joblog = std::string{value};
      return value.empty() ? bad("expected a file name") : std::string{};
    case valued::journal:
      opts.journal = std::string{value};
      return value.empty() ? bad("expected a file name") : std::string{};
    case valued::input:
      if (!opts.input.empty())
        return "only one input file is supported";
      opts.input = std::string{value};
      return value.empty() ? bad("expected a file name") : std::string{};
    case valued::serve:
      if (auto n = parse_count(value, 0); n && *n <= 65535) {
        opts.serve_port = static_cast<uint16_t>(*n);
        return {};
      }
      return bad("expected a port number from 0 to 65535 (0: any free one)");
    case valued::bind:
      opts.bind_address = std::string{value};
      return value.empty() ? bad("expected an address such as 0.0.0.0")
                           : std::string{};
    case valued::join: {
      // HOST:PORT, or [IPv6]:PORT.
      auto colon = value.rfind(':');
      if (colon == std::string_view::npos || colon == 0)
        return bad("expected HOST:PORT");
      auto host = value.substr(0, colon);
      if (host.size() > 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
      auto port = parse_count(value.substr(colon + 1), 1);
      if (!port || *port > 65535)
        return bad("expected HOST:PORT with a port from 1 to 65535");
      opts.join_host = std::string{host};
      opts.join_port = static_cast<uint16_t>(*port);
      return {};
    }
    case valued::join_wait:
      if (auto d = parse_duration(value); d && d->count() > 0) {
        opts.join_wait = *d;
        return {};
      }
      return bad("expected a positive duration such as 500ms, 2s or 1min");
    case valued::token:
      opts.token = std::string{value};
      return value.empty() ? bad("expected a non-empty token") : std::string{};
  }
  return {};
}

/// Sets a flag by name; returns false for unknown names.
bool set_flag(run_options& opts, std::string_view name) {
  if (name == "-k" || name == "--keep-order")
    opts.keep_order = true;
  else if (name == "--bar")
    opts.bar = true;
  else if (name == "--summary")
    opts.summary = true;
  else if (name == "--replay")
    opts.replay = true;
  else if (name == "-h" || name == "--help")
    opts.help = true;
  else
    return false;
  return true;
}

} // namespace

std::optional<caf::timespan> parse_duration(std::string_view text) {
  size_t split = 0;
  while (split < text.size() &&
         ((text[split] >= '0' && text[split] <= '9') || text[split] == '.'))
    ++split;
  auto number = text.substr(0, split);
  auto unit = text.substr(split);
  if (number.empty() || number == ".")
    return std::nullopt;
  // std::from_chars for double is not in every C++17 library: parse by hand.
  double value = 0;
  double scale = 0; // 0 while in the integer part
  for (auto c : number) {
    if (c == '.') {
      if (scale != 0)
        return std::nullopt; // a second dot
      scale = 1;
      continue;
    }
    auto digit = c - '0';
    if (scale == 0) {
      value = value * 10 + digit;
    } else {
      scale /= 10;
      value += digit * scale;
    }
  }
  double ns_per_unit = 0;
  if (unit.empty() || unit == "s")
    ns_per_unit = 1e9;
  else if (unit == "ms")
    ns_per_unit = 1e6;
  else if (unit == "us")
    ns_per_unit = 1e3;
  else if (unit == "ns")
    ns_per_unit = 1;
  else if (unit == "min" || unit == "m")
    ns_per_unit = 60e9;
  else if (unit == "h")
    ns_per_unit = 3600e9;
  else
    return std::nullopt;
  auto ns = value * ns_per_unit;
  if (!std::isfinite(ns) || ns > 1e18) // about 31 years: surely a typo
    return std::nullopt;
  return caf::timespan{static_cast<caf::timespan::rep>(std::llround(ns))};
}

parsed_arguments parse_arguments(int argc, const char* const* argv) {
  parsed_arguments result;
  auto& opts = result.options;
  opts.jobs = pool::default_dedicated_workers();
  std::vector<std::string_view> positional;
  bool options_done = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (options_done || arg == "-" || arg.empty() || arg[0] != '-') {
      positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    // --name=value
    if (arg.rfind("--", 0) == 0) {
      if (auto eq = arg.find('='); eq != std::string_view::npos) {
        auto name = arg.substr(0, eq);
        auto which = valued_option(name);
        if (!which) {
          result.error = "unknown option '" + std::string{name} + "'";
          return result;
        }
        result.error = set_valued(opts, *which, name, arg.substr(eq + 1));
        if (!result.error.empty())
          return result;
        continue;
      }
    }
    if (set_flag(opts, arg))
      continue;
    if (auto which = valued_option(arg)) {
      if (i + 1 >= argc) {
        result.error = "option '" + std::string{arg} + "' needs a value";
        return result;
      }
      result.error = set_valued(opts, *which, arg, argv[++i]);
      if (!result.error.empty())
        return result;
      continue;
    }
    // -j4, -P4, -afile: a short option with its value attached.
    if (arg.size() > 2 && arg[1] != '-') {
      auto name = arg.substr(0, 2);
      if (auto which = valued_option(name)) {
        result.error = set_valued(opts, *which, name, arg.substr(2));
        if (!result.error.empty())
          return result;
        continue;
      }
    }
    result.error = "unknown option '" + std::string{arg} + "'";
    return result;
  }
  if (opts.help)
    return result;
  if (positional.size() + (opts.input.empty() ? 0 : 1) > 1) {
    result.error = "only one input file is supported (got '" +
                   std::string{positional.empty() ? std::string_view{opts.input}
                                                  : positional.front()} +
                   "' and '" + std::string{positional.back()} + "')";
    return result;
  }
  if (!positional.empty())
    opts.input = std::string{positional.front()};
  if (opts.replay && opts.journal.empty())
    result.error = "--replay needs --journal";
  else if (opts.serving() && opts.joining())
    result.error = "--serve and --join exclude each other";
  else if (opts.joining() && (!opts.input.empty() || opts.keep_order ||
                              opts.bar || opts.summary || opts.retries > 0 ||
                              !opts.joblog.empty() || !opts.journal.empty()))
    result.error = "--join makes a worker node: it reads no input and takes "
                   "only -j, --timeout, --token and --join-wait (retries, "
                   "logs and output order are the serving poolrun's)";
  else if (opts.bind_address != "127.0.0.1" && !opts.serving())
    result.error = "--bind needs --serve";
  else if (!opts.token.empty() && !opts.serving() && !opts.joining())
    result.error = "--token needs --serve or --join";
  return result;
}

std::string check_token(run_options& opts, const char* env_token) {
  if (!opts.serving() && !opts.joining())
    return {};
  if (opts.token.empty() && env_token != nullptr)
    opts.token = env_token;
  if (opts.token.empty())
    return std::string{opts.serving() ? "--serve" : "--join"} +
           " needs a shared token: give --token T or set POOLRUN_TOKEN";
  return {};
}

std::string usage() {
  return R"(Usage: poolrun [OPTIONS] [FILE]

Runs one shell command per line of FILE (or of standard input, or of the
file given with -a) with /bin/sh -c, several at once, on a worker pool.
Each command's standard output and standard error are printed whole when
it finishes, never mixed with another command's.

Options:
  -j, --jobs N          run N commands at once (default: cores - 1, at
                        least 1); -P N is the same
  -a, --arg-file FILE   read the commands from FILE ("-" = standard input)
  -k, --keep-order      print outputs in input order
      --retries N       run a failing command up to N more times, with
                        exponential backoff and jitter (default 0)
      --retry-delay D   delay before the first retry, doubled for each
                        further one (default 100ms)
      --timeout D       kill a command (its whole process group) that runs
                        longer than D; counts as a failed attempt
      --joblog FILE     write GNU parallel's joblog to FILE ("-" = stdout)
      --journal FILE    durable journal: rerunning the same command line
                        after a crash or Ctrl-C skips finished commands
      --replay          with --journal: also print the recorded output of
                        commands that finished in an earlier run
      --bar             progress line on stderr (when it is a terminal) and
                        a summary at the end
      --summary         summary on stderr at the end
  -h, --help            print this help

Remote workers (the same poolrun on other machines runs commands too):
      --serve PORT      publish this run's pool on PORT (0: any free port;
                        "poolrun: serving on ADDR:PORT" goes to stderr);
                        commands run on the -j local workers and on the
                        workers of every node that joins
      --bind ADDR       address --serve listens on (default 127.0.0.1, this
                        machine only; 0.0.0.0 for every interface)
      --join HOST:PORT  be a worker node of the poolrun serving there: read
                        no input, run the commands it hands out on -j
                        workers (with this node's --timeout); exit 0 when
                        that poolrun finishes or on Ctrl-C
      --join-wait D     how long a node keeps trying to reach its pool, at
                        the start and after losing it (default 10s)
      --token T         shared secret of --serve and --join (required; else
                        the environment variable POOLRUN_TOKEN)

Durations: 500ms, 2s, 1.5s, 1min, 1h, 250us; a plain number is seconds.

Ctrl-C once: no new commands start; running ones finish, then poolrun
exits (terminated by SIGINT). Ctrl-C twice: running commands are killed.

Exit status: the number of failed commands (at most 101); 0 when all
succeeded; 255 for poolrun's own errors (bad options, unreadable input,
a journal or joblog that cannot be opened). A --join node: 0 when its pool
finished or it was interrupted, 255 when it could not join (wrong token,
unreachable within --join-wait) or lost its pool for longer than that.
)";
}

} // namespace poolrun
