// Input: records from a descriptor, sources combined and grouped, --pipe
// blocks.
#include <doctest/doctest.h>

#include <string>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include "inputs.hpp"
#include "record_reader.hpp"

using namespace poolrun;

namespace {

/// A pipe whose read end a reader gets, written by `text` then closed.
int pipe_with(const std::string& text) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::thread writer{[fd = fds[1], text] {
    size_t done = 0;
    while (done < text.size()) {
      auto n = ::write(fd, text.data() + done, text.size() - done);
      if (n <= 0)
        break;
      done += static_cast<size_t>(n);
    }
    ::close(fd);
  }};
  writer.detach();
  return fds[0];
}

std::vector<std::string> all_records(record_reader& in) {
  std::vector<std::string> out;
  std::string rec;
  bool bad = false;
  while (in.next(rec, bad))
    out.push_back(rec + (bad ? "!" : ""));
  return out;
}

input_source values(std::vector<std::string> xs, bool linked = false) {
  input_source src;
  src.values = std::move(xs);
  src.linked = linked;
  return src;
}

std::vector<std::string> commands(run_options opts, grouping g = {}) {
  std::string error;
  auto in = job_inputs::open(opts, g, error);
  REQUIRE_MESSAGE(in, error);
  std::vector<std::string> out;
  arguments args;
  bool bad = false;
  while (in->next(args, bad))
    out.push_back(join_arguments(args, ','));
  return out;
}

} // namespace

TEST_CASE("records: newline - NUL and custom delimiters - a last record "
          "without one - NUL bytes flagged" *
          doctest::timeout(10)) {
  record_reader lines{pipe_with("a\n\nb c\nlast"), true, "\n", "test"};
  CHECK(all_records(lines) ==
        std::vector<std::string>{"a", "", "b c", "last"});
  record_reader nul{pipe_with(std::string("x\ny\0z\0", 6)), true,
                    std::string(1, '\0'), "test"};
  CHECK(all_records(nul) == std::vector<std::string>{"x\ny", "z"});
  record_reader flagged{pipe_with(std::string("ok\nb\0d\n", 7)), true, "\n",
                        "test"};
  CHECK(all_records(flagged) ==
        std::vector<std::string>{"ok", std::string("b\0d!", 4)});
}

TEST_CASE("records longer than the read buffer arrive whole" *
          doctest::timeout(10)) {
  std::string big(200000, 'x');
  record_reader in{pipe_with(big + "\nend\n"), true, "\n", "test"};
  CHECK(all_records(in) == std::vector<std::string>{big, "end"});
}

TEST_CASE("unreadable files are named" * doctest::timeout(10)) {
  std::string error;
  CHECK(!record_reader::open("/nonexistent/x", "\n", error));
  CHECK(error.find("cannot read input file '/nonexistent/x'") == 0);
}

TEST_CASE("sources: every combination - the last varying fastest - linked "
          "sources side by side - wrapping" *
          doctest::timeout(10)) {
  run_options o;
  o.sources = {values({"a", "b"}), values({"1", "2"})};
  CHECK(commands(o) == std::vector<std::string>{"a,1", "a,2", "b,1", "b,2"});
  o.link = true;
  o.sources = {values({"a", "b", "c"}), values({"1", "2"})};
  CHECK(commands(o) == std::vector<std::string>{"a,1", "b,2", "c,1"});
  o.link = false;
  o.sources = {values({"a", "b"}), values({"1", "2"}, true), values({"X"})};
  CHECK(commands(o) == std::vector<std::string>{"a,1,X", "b,2,X"});
  o.sources = {values({"a"}), values({})};
  CHECK(commands(o).empty());
}

TEST_CASE("grouping: -n - -N0 - and -X spread over the slots" *
          doctest::timeout(10)) {
  run_options o;
  o.sources = {values({"a", "b", "c", "d", "e"})};
  grouping two;
  two.per_command = 2;
  CHECK(commands(o, two) == std::vector<std::string>{"a,b", "c,d", "e"});
  grouping drop;
  drop.drop = true;
  CHECK(commands(o, drop) == std::vector<std::string>{"", "", "", "", ""});
  grouping fill;
  fill.fill = true;
  fill.slots = 2;
  fill.budget = 1000;
  fill.cost = [](const record& r) { return r[0].size() + 1; };
  CHECK(commands(o, fill) == std::vector<std::string>{"a,b,c", "d,e"});
  fill.budget = 4; // two records fit
  o.sources = {values({"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"})};
  CHECK(commands(o, fill).front() == "a,b");
}

TEST_CASE("--pipe blocks end at record ends - at most the block size" *
          doctest::timeout(10)) {
  record_reader in{pipe_with("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"), true, "\n",
                   "test"};
  pipe_blocks blocks{in, {10, "\n", "", 0}};
  std::vector<std::string> out;
  std::string block;
  while (blocks.next(block))
    out.push_back(block);
  CHECK(out == std::vector<std::string>{"1\n2\n3\n4\n5\n", "6\n7\n8\n9\n",
                                        "10\n"});
  record_reader long_one{pipe_with("a long record\nb\n"), true, "\n", "t"};
  pipe_blocks whole{long_one, {4, "\n", "", 0}};
  out.clear();
  while (whole.next(block))
    out.push_back(block);
  // A record longer than the block grows it as GNU parallel's does: 4,
  // 7, 11, 16, and the block is what a block of 16 holds.
  CHECK(out == std::vector<std::string>{"a long record\nb\n"});
  record_reader counted{pipe_with("a;b;c;"), true, "\n", "t"};
  pipe_blocks by_two{counted, {1000, ";", "", 2}};
  out.clear();
  while (by_two.next(block))
    out.push_back(block);
  CHECK(out == std::vector<std::string>{"a;b;", "c;"});
  // --recstart alone: cut just before each start, never at 0.
  record_reader starts{pipe_with("A1\nx\nA2\ny\n"), true, "\n", "t"};
  pipe_blocks by_start{starts, {1000, "", "A", 1}};
  out.clear();
  while (by_start.next(block))
    out.push_back(block);
  CHECK(out == std::vector<std::string>{"A1\nx\n", "A2\ny\n"});
}

namespace {

std::vector<std::string> blocks_of(const std::string& text, pipe_cut how) {
  record_reader in{pipe_with(text), true, "\n", "t"};
  pipe_blocks blocks{in, std::move(how)};
  std::vector<std::string> out;
  std::string block;
  while (blocks.next(block))
    out.push_back(block);
  return out;
}

using strings = std::vector<std::string>;

} // namespace

TEST_CASE("--pipe blocks - --pipepart, --regexp, -L, --recend ''" *
          doctest::timeout(10)) {
  auto ten = std::string{"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"};
  // --pipepart --block 5: past 5 bytes to the next record end (GNU).
  pipe_cut part{5, "\n", "", 0};
  part.in_place = true;
  CHECK(blocks_of(ten, part) ==
        strings{"1\n2\n3\n", "4\n5\n6\n", "7\n8\n9\n", "10\n"});
  // --pipe -L 4: records of 4 lines; the partial last one apart.
  pipe_cut lines{1000, "\n", "", 0};
  lines.lines_per_record = 4;
  CHECK(blocks_of(ten, lines) ==
        strings{"1\n2\n3\n4\n5\n6\n7\n8\n", "9\n10\n"});
  // --regexp: a record end matched, the start looked ahead at.
  pipe_cut re{1000, "[05]\n", "", 1};
  re.regexp = true;
  CHECK(blocks_of(ten, re) == strings{"1\n2\n3\n4\n5\n", "6\n7\n8\n9\n10\n"});
  pipe_cut starts{1000, "", "b.", 1};
  starts.regexp = true;
  CHECK(blocks_of("b1 x b2 y", starts) == strings{"b1 x ", "b2 y"});
  // --recstart alone with -N 2: two records a block.
  CHECK(blocks_of("A1\nA2\nA3\n", {1000, "", "A", 2}) ==
        strings{"A1\nA2\n", "A3\n"});
  // --recend '': records end anywhere (-n 1: a byte each).
  CHECK(blocks_of("ab\n", {1000, "", "", 1}) == strings{"a", "b", "\n"});
}

TEST_CASE(":::+ cuts to the shortest source - --link wraps the shorter" *
          doctest::timeout(10)) {
  run_options o;
  o.sources = {values({"a", "b", "c"}), values({"1", "2"}, true)};
  CHECK(commands(o) == std::vector<std::string>{"a,1", "b,2"});
  o.sources = {values({"a"}), values({"1", "2"}, true)};
  CHECK(commands(o) == std::vector<std::string>{"a,1"});
  o.link = true;
  o.sources = {values({"a"}), values({"1", "2"})};
  CHECK(commands(o) == std::vector<std::string>{"a,1", "a,2"});
}

TEST_CASE("records: -E ends the input - -r skips blank ones - --colsep "
          "splits - --trim" *
          doctest::timeout(10)) {
  run_options o;
  o.sources = {values({"a", "", " ", "b", "STOP", "c"})};
  o.eof_str = "STOP";
  CHECK(commands(o) == std::vector<std::string>{"a", "", " ", "b"});
  o.skip_empty = true;
  CHECK(commands(o) == std::vector<std::string>{"a", "b"});
  run_options cols;
  cols.sources = {values({" x , y ", "z"})};
  cols.colsep = ",";
  cols.trim = "lr";
  CHECK(commands(cols) == std::vector<std::string>{"x,y", "z"});
  cols.trim = "r";
  CHECK(commands(cols) == std::vector<std::string>{" x, y", "z"});
}
