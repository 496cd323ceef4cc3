// poolrun's own errors: exit 255 with a message, and no command runs.
#include "child_process.hpp"

using namespace poolrun::test;

namespace {

const std::string marker_command = "touch ran\n";

/// Runs poolrun with `args` on `marker_command`; checks that it exits 255
/// with `message` on stderr and ran nothing.
void check_refused(const std::vector<std::string>& args,
                   const std::string& message) {
  temp_dir tmp;
  child_process run{poolrun_argv(args), marker_command, tmp.path};
  CHECK(run.exit_code(20s) == 255);
  CHECK_MESSAGE(run.err().find(message) != std::string::npos,
                "stderr: " << run.err());
  CHECK(run.err().rfind("poolrun: ", 0) == 0);
  CHECK(::access((tmp / "ran").c_str(), F_OK) != 0);
}

} // namespace

TEST_CASE("bad flags exit 255 naming the problem" * doctest::timeout(60)) {
  check_refused({"--frobnicate"}, "unknown option '--frobnicate'");
  check_refused({"-x"}, "unknown option '-x'");
  check_refused({"-j", "0"}, "invalid value '0' for -j");
  check_refused({"-j", "many"}, "invalid value 'many' for -j");
  check_refused({"--jobs=-2"}, "invalid value '-2' for --jobs");
  check_refused({"--retries"}, "option '--retries' needs a value");
  check_refused({"--timeout", "soon"}, "invalid value 'soon' for --timeout");
  check_refused({"--timeout", "0"}, "invalid value '0' for --timeout");
  check_refused({"--replay"}, "--replay needs --journal");
  check_refused({"a", "b"}, "only one input file");
}

TEST_CASE("an unreadable input exits 255" * doctest::timeout(60)) {
  check_refused({"/nonexistent/commands"},
                "cannot read '/nonexistent/commands'");
  check_refused({"-a", "/nonexistent/commands"},
                "cannot read '/nonexistent/commands'");
  check_refused({"/"}, "cannot read '/': Is a directory");
}

TEST_CASE("a journal or joblog that cannot be opened exits 255" *
          doctest::timeout(60)) {
  check_refused({"--journal", "/nonexistent/journal.db"},
                "cannot open journal '/nonexistent/journal.db'");
  check_refused({"--joblog", "/nonexistent/joblog"},
                "cannot open joblog '/nonexistent/joblog'");
  // A file that is not a journal is left alone.
  temp_dir tmp;
  write_file(tmp / "notes.txt", "my precious notes\n");
  child_process run{poolrun_argv({"--journal", tmp / "notes.txt"}),
                    marker_command, tmp.path};
  CHECK(run.exit_code(20s) == 255);
  CHECK(run.err().find("cannot open journal") != std::string::npos);
  CHECK(read_file(tmp / "notes.txt") == "my precious notes\n");
}

TEST_CASE("help prints usage and exits 0" * doctest::timeout(30)) {
  child_process run{poolrun_argv({"--help"})};
  CHECK(run.exit_code(20s) == 0);
  CHECK(run.out().rfind("Usage: poolrun", 0) == 0);
  CHECK(run.out().find("--journal") != std::string::npos);
}
