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
        "invalid value '0' for -j: expected a whole number of at least 1");
  CHECK(parse({"-j", "3x"}).error.find("invalid value '3x'") == 0);
  CHECK(parse({"--retries", "-1"}).error.find("invalid value '-1'") == 0);
  CHECK(parse({"--timeout", "0s"}).error.find("invalid value '0s'") == 0);
  CHECK(parse({"a", "b"}).error.find("only one input file") == 0);
  CHECK(parse({"-a", "a", "b"}).error.find("only one input file") == 0);
  CHECK(parse({"--replay"}).error == "--replay needs --journal");
  CHECK(parse({"--help", "--nope"}).error == "unknown option '--nope'");
  CHECK(parse({"--help"}).options.help);
}
