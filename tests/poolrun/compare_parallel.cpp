// poolrun vs GNU parallel: same output blocks, exit status and -k order.
#include "child_process.hpp"

#include <algorithm>
#include <map>

using namespace poolrun::test;

namespace {

/// 30 commands: multi-line output with pauses inside a block, output to
/// stderr, exit statuses 3 and 1, short sleeps. 9 of them fail.
std::string mixed_commands() {
  std::string result;
  for (int i = 1; i <= 30; ++i) {
    auto tag = "job" + std::to_string(i);
    auto pause = "sleep 0.0" + std::to_string(i % 7);
    switch (i % 5) {
      case 0:
        result += "echo " + tag + " a; " + pause + "; echo " + tag + " b";
        break;
      case 1:
        result += "echo " + tag + " failing; " + pause + "; exit 3";
        break;
      case 2:
        result += "echo " + tag + " err >&2; " + pause + "; echo " + tag +
                  " err2 >&2; echo " + tag + " out";
        break;
      case 3:
        result += pause + "; echo " + tag + " slept";
        break;
      default:
        result += "echo " + tag + " x; " + pause + "; echo " + tag +
                  " y >&2; exit " + std::to_string(i % 2);
    }
    result += '\n';
  }
  return result;
}

/// Splits output into one block per command (lines start with the
/// command's tag) and checks that no two blocks interleave.
std::vector<std::string> blocks_of(const std::string& text) {
  std::vector<std::string> blocks;
  std::vector<std::string> tags;
  for (auto& line : lines_of(text)) {
    auto tag = line.substr(0, line.find(' '));
    if (tags.empty() || tags.back() != tag) {
      CHECK_MESSAGE(std::find(tags.begin(), tags.end(), tag) == tags.end(),
                    "output of " << tag << " is split:\n"
                                 << text);
      tags.push_back(tag);
      blocks.emplace_back();
    }
    blocks.back() += line + "\n";
  }
  std::sort(blocks.begin(), blocks.end());
  return blocks;
}

std::vector<std::string> gnu_parallel(std::vector<std::string> args) {
  REQUIRE_MESSAGE(::access("/usr/bin/parallel", X_OK) == 0,
                  "GNU parallel is missing: run scripts/install-deps");
  args.insert(args.begin(), {"/usr/bin/parallel", "--will-cite"});
  return args;
}

} // namespace

TEST_CASE("30 mixed commands at 4 workers give the same output blocks and "
          "exit status as GNU parallel" *
          doctest::timeout(60)) {
  temp_dir tmp;
  auto input = mixed_commands();
  child_process ours{poolrun_argv({"-j", "4"}), input, tmp.path};
  auto our_status = ours.exit_code(30s);
  child_process theirs{gnu_parallel({"-j", "4"}), input, tmp.path};
  auto their_status = theirs.exit_code(30s);
  CHECK(our_status == 9);
  CHECK(our_status == their_status);
  auto our_out = blocks_of(ours.out());
  CHECK(our_out.size() == 30);
  CHECK(our_out == blocks_of(theirs.out()));
  CHECK(blocks_of(ours.err()) == blocks_of(theirs.err()));
}

TEST_CASE("keep-order at 4 workers prints in input order, as GNU parallel "
          "-k does" *
          doctest::timeout(60)) {
  temp_dir tmp;
  // Later lines finish first.
  std::string input;
  std::string expected;
  for (int i = 1; i <= 12; ++i) {
    auto tag = "job" + std::to_string(i);
    auto ms = std::to_string((13 - i) * 30);
    input += "echo " + tag + " a; sleep 0." + std::string(3 - ms.size(), '0') +
             ms + "; echo " + tag + " b\n";
    expected += tag + " a\n" + tag + " b\n";
  }
  child_process ours{poolrun_argv({"-k", "-j", "4"}), input, tmp.path};
  CHECK(ours.exit_code(30s) == 0);
  CHECK(ours.out() == expected);
  child_process theirs{gnu_parallel({"-k", "-j", "4"}), input, tmp.path};
  CHECK(theirs.exit_code(30s) == 0);
  CHECK(ours.out() == theirs.out());
  // Without -k the first line, which sleeps longest, is not printed first.
  child_process unordered{poolrun_argv({"-j", "4"}), input, tmp.path};
  CHECK(unordered.exit_code(30s) == 0);
  CHECK(unordered.out() != expected);
}

TEST_CASE("exit status counts failed commands and stops at 101, as GNU "
          "parallel's does" *
          doctest::timeout(60)) {
  temp_dir tmp;
  std::string input;
  for (int i = 0; i < 110; ++i)
    input += "exit 1\n";
  child_process ours{poolrun_argv({"-j", "4"}), input, tmp.path};
  CHECK(ours.exit_code(30s) == 101);
  child_process theirs{gnu_parallel({"-j", "4"}), input, tmp.path};
  CHECK(theirs.exit_code(30s) == 101);
  child_process some{poolrun_argv({"-j", "2"}), "exit 1\ntrue\nexit 2\n",
                     tmp.path};
  CHECK(some.exit_code(30s) == 2);
}

TEST_CASE("no input runs nothing and exits 0" * doctest::timeout(30)) {
  temp_dir tmp;
  child_process ours{poolrun_argv({"-j", "2"}), "", tmp.path};
  CHECK(ours.exit_code(20s) == 0);
  CHECK(ours.out().empty());
  CHECK(ours.err().empty());
}
