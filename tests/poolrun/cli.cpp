// poolrun's command line: sources split off, options through CLI11, values
// checked, mistakes named.
#include <doctest/doctest.h>

#include <chrono>

#include "cli.hpp"
#include "specs.hpp"

using namespace std::chrono_literals;
using poolrun::parse_command_line;

namespace {

poolrun::parsed_command_line parse(std::vector<const char*> args) {
  args.insert(args.begin(), "poolrun");
  return parse_command_line(static_cast<int>(args.size()), args.data());
}

} // namespace

TEST_CASE("the command starts at the first word that is no option - and "
          "sources at the first :::" *
          doctest::timeout(10)) {
  auto p = parse({"-j2", "-k", "echo", "-n", "{}", ":::", "a", "b", "::::",
                  "f1", "f2", ":::+", "x"});
  REQUIRE(p.error.empty());
  auto& o = p.options;
  CHECK(o.keep_order);
  CHECK(o.jobs.type == poolrun::jobs_spec::kind::count);
  CHECK(o.jobs.value == 2);
  CHECK(o.command == std::vector<std::string>{"echo", "-n", "{}"});
  REQUIRE(o.sources.size() == 4);
  CHECK(o.sources[0].values == std::vector<std::string>{"a", "b"});
  CHECK(o.sources[1].is_file);
  CHECK(o.sources[1].path == "f1");
  CHECK(o.sources[2].path == "f2");
  CHECK(o.sources[3].linked);
  CHECK(o.sources[3].values == std::vector<std::string>{"x"});
}

TEST_CASE("-a files come before ::: sources - no source means stdin" *
          doctest::timeout(10)) {
  auto p = parse({"-a", "one", "--arg-file", "two", "echo", ":::", "v"});
  REQUIRE(p.error.empty());
  REQUIRE(p.options.sources.size() == 3);
  CHECK(p.options.sources[0].path == "one");
  CHECK(p.options.sources[1].path == "two");
  CHECK(!p.options.sources[2].is_file);
  auto q = parse({"gzip"});
  CHECK(q.options.sources.empty());
  CHECK(q.options.command == std::vector<std::string>{"gzip"});
}

TEST_CASE("-j takes N - N% - +N - -N and 0 - relative to the cores" *
          doctest::timeout(10)) {
  using poolrun::parse_jobs;
  CHECK(parse_jobs("4")->slots(2) == 4);
  CHECK(parse_jobs("50%")->slots(8) == 4);
  CHECK(parse_jobs("200%")->slots(2) == 4);
  CHECK(parse_jobs("+1")->slots(2) == 3);
  CHECK(parse_jobs("-1")->slots(2) == 1);
  CHECK(parse_jobs("-5")->slots(2) == 1);
  CHECK(parse_jobs("0")->slots(2) == poolrun::unlimited_jobs);
  CHECK(!parse_jobs("x"));
  CHECK(!parse_jobs("1.5"));
  CHECK(!parse_jobs("%"));
  // Default: one per core.
  CHECK(parse({}).options.jobs.slots(6) == 6);
}

TEST_CASE("durations - sizes and --halt in GNU parallel's forms" *
          doctest::timeout(10)) {
  using poolrun::parse_duration;
  CHECK(parse_duration("500ms") == caf::timespan{500ms});
  CHECK(parse_duration("1.5") == caf::timespan{1500ms});
  CHECK(parse_duration("2m") == caf::timespan{120s});
  CHECK(parse_duration("1h") == caf::timespan{3600s});
  CHECK(!parse_duration("-1"));
  CHECK(!parse_duration("5 s"));
  CHECK(poolrun::parse_size("1M") == size_t{1024 * 1024});
  // GNU parallel's prefixes: k is 1000, K and ki 1024.
  CHECK(poolrun::parse_size("10k") == size_t{10000});
  CHECK(poolrun::parse_size("10K") == size_t{10240});
  CHECK(poolrun::parse_size("2ki") == size_t{2048});
  CHECK(poolrun::parse_size("3G") == size_t{3} << 30);
  CHECK(poolrun::parse_size("1m") == size_t{1000000});
  CHECK(poolrun::parse_size("7") == size_t{7});
  CHECK(!poolrun::parse_size("0"));
  CHECK(!poolrun::parse_size("1X"));
  std::string why;
  auto h = poolrun::parse_halt("now,fail=20%", why);
  REQUIRE(h);
  CHECK(h->on == poolrun::halt_spec::when::now);
  CHECK(h->percent);
  CHECK(h->value == 20);
  CHECK(poolrun::parse_halt("2", why)->on == poolrun::halt_spec::when::now);
  CHECK(poolrun::parse_halt("-1", why)->cause ==
        poolrun::halt_spec::why::success);
  CHECK(poolrun::parse_halt("10%", why)->percent);
  CHECK(!poolrun::parse_halt("later,fail=1", why));
  CHECK(why.find("'never', 'soon' or 'now'") != std::string::npos);
  CHECK(!poolrun::parse_halt("soon,broke=1", why));
  CHECK(!poolrun::parse_halt("soon,fail=x", why));
}

TEST_CASE("mistakes are named: unknown options - bad values - conflicts" *
          doctest::timeout(10)) {
  CHECK(parse({"--frobnicate", "echo"}).error ==
        "unknown option '--frobnicate'");
  CHECK(parse({"-j", "x", "echo"}).error.find("invalid value 'x' for -j") == 0);
  CHECK(parse({"--retries", "-2"}).error.find("--retries") !=
        std::string::npos);
  CHECK(parse({"--timeout", "200%"}).error.find("percentage") !=
        std::string::npos);
  CHECK(parse({"--resume"}).error.find("--joblog") != std::string::npos);
  CHECK(parse({"-u", "--line-buffer"}).error.find("choose one") == 0);
  CHECK(parse({"--pipe", "-X"}).error.find("--pipe") == 0);
  CHECK(parse({"echo", "::::"}).error.find("needs at least one file") !=
        std::string::npos);
  CHECK(parse({"-d", "ab"}).error.empty()); // several characters, as GNU
  CHECK(parse({"--header", "a.*", "echo"}).error.find("--pipe") !=
        std::string::npos);
  CHECK(parse({"--pipepart", "cat"}).error.find("one file") !=
        std::string::npos);
  CHECK(parse({"--pipe", "--regexp", "--recend", "(", "cat"})
            .error.find("regular expression") != std::string::npos);
}

TEST_CASE("flags and values in their spellings" * doctest::timeout(10)) {
  auto p = parse({"--line-buffer", "--tag", "--tagstring", "T", "--results",
                  "r", "--joblog", "j", "--resume-failed", "--retries", "0",
                  "--timeout", "2s", "--halt", "soon,fail=1", "-0", "-n3",
                  "--pipe", "--block", "2k", "--recend", "\\n\\n", "--shell",
                  "/bin/dash", "-S", "2/a,b", "--slf", "f", "--trc", "{}.out",
                  "--dry-run", "--bar", "--eta", "--will-cite", "--version", "cat"});
  REQUIRE(p.error.empty());
  auto& o = p.options;
  CHECK(o.output == poolrun::output_mode::line_buffer);
  CHECK(o.tag);
  CHECK(o.tagstring == "T");
  CHECK(o.results == "r");
  CHECK(o.resume_failed);
  CHECK(o.retries == uint32_t{0});
  CHECK(o.timeout == caf::timespan{2s});
  CHECK(o.halt.on == poolrun::halt_spec::when::soon);
  CHECK(o.delimiter == std::string(1, '\0'));
  CHECK(o.max_args == 3);
  CHECK(o.block_size == 2000); // k is 1000, as in GNU parallel
  CHECK(o.recend == "\n\n");
  CHECK(o.shell == "/bin/dash");
  CHECK(o.sshlogins == std::vector<std::string>{"2/a,b"});
  CHECK(o.sshlogin_files == std::vector<std::string>{"f"});
  CHECK(o.transfer_files == std::vector<std::string>{"{}"});
  CHECK(o.return_files == std::vector<std::string>{"{}.out"});
  CHECK(o.cleanup);
  CHECK(o.dry_run);
  CHECK(o.version);
  auto help = parse({"--help"});
  CHECK(help.options.help);
}

TEST_CASE("--help groups the options by topic" * doctest::timeout(10)) {
  auto text = poolrun::usage();
  for (auto group : {"Input", "Running", "Remote", "Output", "Records",
                     "Progress"})
    CHECK(text.find(group) != std::string::npos);
  CHECK(text.find("--sshlogin") != std::string::npos);
  CHECK(poolrun::version_text().find("poolrun ") == 0);
}

TEST_CASE("--queue with a password is refused, naming where libpq finds it "
          "instead" *
          doctest::timeout(10)) {
  for (auto uri : {"postgres://alice:hunter2@db/jobs",
                   "postgresql://alice:hunter2@db:5432/jobs?sslmode=require",
                   "postgres://alice@db/jobs?sslmode=require&password=hunter2",
                   "postgres://db/jobs?password=hunter2"}) {
    INFO(uri);
    auto p = parse({"--queue", uri, "echo"});
    CHECK(p.error.find("--queue carries a password") != std::string::npos);
    for (auto way : {"PGPASSWORD", "~/.pgpass", "PGSERVICE"})
      CHECK(p.error.find(way) != std::string::npos);
    CHECK(p.error.find("hunter2") == std::string::npos);
  }
  for (auto uri : {"postgres://alice@db/jobs", "postgres://db/jobs",
                   "postgres://alice@[::1]:5432/jobs",
                   "postgres://db/jobs?passfile=/home/alice/.pgpass",
                   "postgres://db/jobs?application_name=a:b@c"}) {
    INFO(uri);
    CHECK(parse({"--queue", uri, "echo"}).error.empty());
  }
}

TEST_CASE("--http-token-file needs --http, and --help shows no way to put "
          "a token on the command line" *
          doctest::timeout(10)) {
  CHECK(parse({"--http-token-file", "f", "echo"}).error ==
        "--http-token-file needs --http ADDR:PORT");
  auto ok = parse({"--http", ":0", "--http-token-file", "f", "echo"});
  REQUIRE(ok.error.empty());
  CHECK(ok.options.http_token_file == "f");
  auto text = poolrun::usage();
  CHECK(text.find("--http-token-file") != std::string::npos);
  CHECK(text.find("--token ") == std::string::npos);
}

TEST_CASE("--queue-outage takes a duration of at least 1s, with --queue" *
          doctest::timeout(10)) {
  auto q = "postgres://db/jobs";
  auto ok = parse({"--queue", q, "--queue-outage", "90s", "echo"});
  REQUIRE(ok.error.empty());
  CHECK(ok.options.queue_outage == std::chrono::seconds(90));
  CHECK(parse({"--queue", q, "echo"}).options.queue_outage
        == std::chrono::minutes(5));
  for (auto bad : {"500ms", "soon", "0"})
    CHECK(parse({"--queue", q, "--queue-outage", bad, "echo"})
              .error.find("--queue-outage")
          != std::string::npos);
  CHECK(parse({"--queue-outage", "1min", "echo"}).error.find("with --queue")
        != std::string::npos);
}

TEST_CASE("::::+ links every file after it - $PARALLEL words come first" *
          doctest::timeout(10)) {
  auto p = parse({"echo", "::::", "f0", "::::+", "f1", "f2"});
  REQUIRE(p.error.empty());
  REQUIRE(p.options.sources.size() == 3);
  CHECK(!p.options.sources[0].linked);
  CHECK(p.options.sources[1].linked);
  CHECK(p.options.sources[2].linked);
  const char* argv[] = {"poolrun", "echo"};
  auto words = poolrun::with_environment_options(2, argv, " -k  --tag\\ x ");
  CHECK(words ==
        std::vector<std::string>{"poolrun", "-k", "--tag x", "echo"});
  CHECK(poolrun::with_environment_options(2, argv, nullptr).size() == 2);
}

TEST_CASE("GNU parallel's options poolrun leaves out are named with what "
          "to use instead" *
          doctest::timeout(10)) {
  auto p = parse({"--tmux", "echo"});
  CHECK(p.error.find("--tmux is not supported by poolrun: watch the jobs") ==
        0);
  CHECK(parse({"--header", "x.*", "echo"}).error.find("--header") !=
        std::string::npos);
  CHECK(parse({"--env", "V", "-S", "host", "echo"}).error.find("--env") == 0);
  CHECK(parse({"--frobnicate"}).error == "unknown option '--frobnicate'");
  CHECK(parse({"--pipe"}).error.find("--pipe must have a command") == 0);
  CHECK(parse({"-n0", "echo"}).options.no_args);
  CHECK(parse({"-L2", "echo"}).options.exact_args == 2);
  CHECK(parse({"--joblog", "+log", "echo"}).options.joblog_append);
  CHECK(parse({"--joblog", "+log", "echo"}).options.joblog == "log");
}

TEST_CASE("an empty value where only a real one means something is an "
          "error, not the default" *
          doctest::timeout(10)) {
  for (auto* option : {"--halt", "-j", "-P", "--timeout", "--trim", "--nice",
                       "--tmpdir", "--delay", "--retry-delay", "--journal",
                       "--queue", "--status-interval"}) {
    CAPTURE(option);
    auto p = parse({option, "", "echo"});
    CHECK(p.error.find(": an empty value; give one") != std::string::npos);
  }
  // Where GNU parallel gives the empty value a meaning, it keeps it.
  CHECK(parse({"--recend", "", "--pipe", "cat"}).error.empty());
  CHECK(parse({"--tagstring", "", "echo", ":::", "a"}).error.empty());
}

TEST_CASE("an empty value given before a real one is overridden, not an "
          "error" *
          doctest::timeout(10)) {
  // As from $PARALLEL or a profile, then the command line.
  CHECK(parse({"--halt", "", "--halt", "now,fail=1", "echo"}).error.empty());
  CHECK(!parse({"--halt", "now,fail=1", "--halt", "", "echo"}).error.empty());
}
