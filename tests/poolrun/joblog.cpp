// --joblog: GNU parallel's format, one line per finished command.
#include "child_process.hpp"

#include <map>

using namespace poolrun::test;

namespace {

const std::string header =
    "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand";

std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> result;
  size_t begin = 0;
  for (;;) {
    auto tab = line.find('\t', begin);
    result.push_back(line.substr(begin, tab - begin));
    if (tab == std::string::npos)
      return result;
    begin = tab + 1;
  }
}

/// Joblog lines by Seq, fields without Starttime and JobRuntime (which
/// differ from run to run).
std::map<int, std::vector<std::string>> stable_fields(const std::string& log) {
  std::map<int, std::vector<std::string>> result;
  auto lines = lines_of(log);
  for (size_t i = 1; i < lines.size(); ++i) {
    auto fields = fields_of(lines[i]);
    REQUIRE(fields.size() == 9);
    fields.erase(fields.begin() + 2, fields.begin() + 4);
    result[std::stoi(fields[0])] = fields;
  }
  return result;
}

const std::string commands = "echo hi\n"
                             "exit 3\n"
                             "echo out; echo err >&2; exit 5\n"
                             "kill -9 $$\n";

} // namespace

TEST_CASE("joblog at 2 workers: header, one line per command, exit values "
          "and signals" *
          doctest::timeout(60)) {
  temp_dir tmp;
  auto before = std::time(nullptr);
  child_process run{poolrun_argv({"-j", "2", "--joblog", tmp / "log"}),
                    commands, tmp.path};
  CHECK(run.exit_code(20s) == 3);
  auto lines = lines_of(read_file(tmp / "log"));
  REQUIRE(lines.size() == 5);
  CHECK(lines[0] == header);
  std::map<int, std::vector<std::string>> by_seq;
  for (size_t i = 1; i < lines.size(); ++i) {
    auto fields = fields_of(lines[i]);
    REQUIRE(fields.size() == 9);
    by_seq[std::stoi(fields[0])] = fields;
  }
  REQUIRE(by_seq.size() == 4);
  for (auto& [seq, f] : by_seq) {
    CHECK(f[1] == ":");
    // Starttime: epoch seconds with 3 decimals, around now.
    auto dot = f[2].find('.');
    REQUIRE(dot != std::string::npos);
    CHECK(f[2].size() - dot - 1 == 3);
    CHECK(std::stod(f[2]) >= static_cast<double>(before) - 1);
    CHECK(std::stod(f[3]) >= 0);
    CHECK(f[4] == "0");
  }
  // Receive (stdout bytes), Exitval, Signal, Command.
  CHECK(std::vector<std::string>(by_seq[1].begin() + 5, by_seq[1].end()) ==
        std::vector<std::string>{"3", "0", "0", "echo hi"});
  CHECK(std::vector<std::string>(by_seq[2].begin() + 5, by_seq[2].end()) ==
        std::vector<std::string>{"0", "3", "0", "exit 3"});
  CHECK(std::vector<std::string>(by_seq[3].begin() + 5, by_seq[3].end()) ==
        std::vector<std::string>{"4", "5", "0",
                                 "echo out; echo err >&2; exit 5"});
  CHECK(std::vector<std::string>(by_seq[4].begin() + 5, by_seq[4].end()) ==
        std::vector<std::string>{"0", "0", "9", "kill -9 $$"});
}

TEST_CASE("joblog at 2 workers matches GNU parallel's but for the times" *
          doctest::timeout(60)) {
  temp_dir tmp;
  REQUIRE(::access("/usr/bin/parallel", X_OK) == 0);
  child_process ours{poolrun_argv({"-j", "2", "--joblog", tmp / "ours"}),
                     commands, tmp.path};
  CHECK(ours.exit_code(20s) == 3);
  child_process theirs{{"/usr/bin/parallel", "--will-cite", "-j", "2",
                        "--joblog", tmp / "theirs"},
                       commands,
                       tmp.path};
  CHECK(theirs.exit_code(20s) == 3);
  auto our_log = read_file(tmp / "ours");
  auto their_log = read_file(tmp / "theirs");
  CHECK(lines_of(our_log)[0] == lines_of(their_log)[0]);
  CHECK(stable_fields(our_log) == stable_fields(their_log));
}
