// poolrun's argument parser and duration syntax, tested directly.
#include <doctest/doctest.h>

#include <chrono>

#include <pool/options.hpp>

#include "arguments.hpp"

using namespace std::chrono_literals;

namespace {

poolrun::parsed_arguments parse(std::vector<const char*> args) {
  args.insert(args.begin(), "poolrun");
  return poolrun::parse_arguments(static_cast<int>(args.size()), args.data());
}

} // namespace

TEST_CASE("durations take GNU parallel's seconds and CAF's units" *
          doctest::timeout(10)) {
  using poolrun::parse_duration;
  CHECK(parse_duration("500ms") == caf::timespan{500ms});
  CHECK(parse_duration("2s") == caf::timespan{2s});
  CHECK(parse_duration("1.5s") == caf::timespan{1500ms});
  CHECK(parse_duration("1min") == caf::timespan{60s});
  CHECK(parse_duration("1h") == caf::timespan{3600s});
  CHECK(parse_duration("250us") == caf::timespan{250us});
  CHECK(parse_duration("0.3") == caf::timespan{300ms});
  CHECK(parse_duration("7") == caf::timespan{7s});
  CHECK(!parse_duration(""));
  CHECK(!parse_duration("ms"));
  CHECK(!parse_duration("-1s"));
  CHECK(!parse_duration("1.2.3s"));
  CHECK(!parse_duration("5 s"));
  CHECK(!parse_duration("3days"));
}

TEST_CASE("defaults: cores - 1 dedicated workers, stdin, no retries" *
          doctest::timeout(10)) {
  auto parsed = parse({});
  CHECK(parsed.error.empty());
  CHECK(parsed.options.jobs == pool::default_dedicated_workers());
  CHECK(parsed.options.jobs >= 1);
  CHECK(parsed.options.input.empty());
  CHECK(parsed.options.retries == 0);
  CHECK(!parsed.options.timeout);
  CHECK(!parsed.options.keep_order);
}

TEST_CASE("options in their spellings" * doctest::timeout(10)) {
  for (auto args :
       {std::vector<const char*>{"-j", "4"}, std::vector<const char*>{"-j4"},
        std::vector<const char*>{"--jobs", "4"},
        std::vector<const char*>{"--jobs=4"},
        std::vector<const char*>{"-P", "4"}}) {
    auto parsed = parse(args);
    CHECK(parsed.error.empty());
    CHECK(parsed.options.jobs == 4);
  }
  auto parsed = parse({"-k", "--retries=2", "--timeout", "2s", "--joblog",
                       "log", "--journal", "j.db", "--replay", "--bar",
                       "--summary", "--retry-delay", "1s", "cmds"});
  REQUIRE(parsed.error.empty());
  auto& opts = parsed.options;
  CHECK(opts.keep_order);
  CHECK(opts.retries == 2);
  CHECK(opts.timeout == caf::timespan{2s});
  CHECK(opts.joblog == "log");
  CHECK(opts.journal == "j.db");
  CHECK(opts.replay);
  CHECK(opts.bar);
  CHECK(opts.summary);
  CHECK(opts.retry_delay == caf::timespan{1s});
  CHECK(opts.input == "cmds");
  CHECK(parse({"-a", "cmds"}).options.input == "cmds");
  CHECK(parse({"--", "-weird-name"}).options.input == "-weird-name");
  CHECK(parse({"-"}).options.input == "-");
}

TEST_CASE("mistakes are named" * doctest::timeout(10)) {
  CHECK(parse({"--nope"}).error == "unknown option '--nope'");
  CHECK(parse({"--nope=1"}).error == "unknown option '--nope'");
  CHECK(parse({"-j"}).error == "option '-j' needs a value");
  CHECK(parse({"-j", "0"}).error ==
        "invalid value '0' for -j: a pool needs at least one local worker "
        "(with --serve, use -j 1: the joined nodes' workers come on top)");
  CHECK(parse({"-j", "3x"}).error.find("invalid value '3x'") == 0);
  CHECK(parse({"--retries", "-1"}).error.find("invalid value '-1'") == 0);
  CHECK(parse({"--timeout", "0s"}).error.find("invalid value '0s'") == 0);
  CHECK(parse({"a", "b"}).error.find("only one input file") == 0);
  CHECK(parse({"-a", "a", "b"}).error.find("only one input file") == 0);
  CHECK(parse({"--replay"}).error == "--replay needs --journal");
  CHECK(parse({"--help", "--nope"}).error == "unknown option '--nope'");
  CHECK(parse({"--help"}).options.help);
}

TEST_CASE("--serve, --join, --bind, --token and --join-wait" *
          doctest::timeout(10)) {
  auto serve = parse({"--serve", "0", "--bind", "0.0.0.0", "-j", "2"});
  REQUIRE(serve.error.empty());
  CHECK(serve.options.serving());
  CHECK(*serve.options.serve_port == 0);
  CHECK(serve.options.bind_address == "0.0.0.0");
  CHECK(!serve.options.joining());
  auto join = parse({"--join=node.example:7300", "--token", "t", "--join-wait",
                     "30s", "--timeout", "5s"});
  REQUIRE(join.error.empty());
  CHECK(join.options.joining());
  CHECK(join.options.join_host == "node.example");
  CHECK(join.options.join_port == 7300);
  CHECK(join.options.token == "t");
  CHECK(join.options.join_wait == caf::timespan{30s});
  auto six = parse({"--join", "[::1]:7300"});
  REQUIRE(six.error.empty());
  CHECK(six.options.join_host == "::1");
  CHECK(parse({"--serve", "65536"}).error.find("invalid value") == 0);
  CHECK(parse({"--join", "host:0"}).error.find("expected HOST:PORT") !=
        std::string::npos);
  CHECK(parse({"--join", "host:1", "commands.txt"})
            .error.find("reads no input") != std::string::npos);
  CHECK(!parse({"--token", "t"}).error.empty());
  // The token: the option wins over the environment; one is required.
  auto opts = serve.options;
  CHECK(!poolrun::check_token(opts, nullptr).empty());
  CHECK(poolrun::check_token(opts, "from-env").empty());
  CHECK(opts.token == "from-env");
  auto given = join.options;
  CHECK(poolrun::check_token(given, "from-env").empty());
  CHECK(given.token == "t");
  auto local = parse({}).options;
  CHECK(poolrun::check_token(local, nullptr).empty());
}
