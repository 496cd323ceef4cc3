// Command templates, GNU parallel's quoting, and commands started without
// a shell.
#include <doctest/doctest.h>

#include "command_template.hpp"
#include "shell.hpp"

using poolrun::arguments;
using poolrun::command_template;

TEST_CASE("replacement strings as GNU parallel's" * doctest::timeout(10)) {
  command_template t{"x {} {.} {/} {//} {/.} {#}"};
  CHECK(t.has_replacements());
  CHECK(t.expand({{"/a/b.tar.gz"}}, 7) ==
        "x /a/b.tar.gz /a/b.tar b.tar.gz /a b.tar 7");
  CHECK(t.expand({{"c/"}}, 1) == "x c/ c/ '' . '' 1");
  CHECK(t.expand({{".bashrc"}}, 1) == "x .bashrc '' .bashrc . '' 1");
  CHECK(t.expand({{"/g"}}, 1) == "x /g /g g / g 1");
}

TEST_CASE("positional strings index the fields of all records" *
          doctest::timeout(10)) {
  command_template t{"{2}-{1}:{3.}"};
  CHECK(t.expand({{"a", "b", "c.x"}}, 1) == "b-a:c");
  CHECK(t.expand({{"a"}, {"b"}}, 1) == "b-a:");
  // -n2 with one source: {} joins the arguments.
  CHECK(command_template{"e {}"}.expand({{"a"}, {"b c"}}, 1) == "e a 'b c'");
}

TEST_CASE("without replacement strings the arguments are appended - quoted" *
          doctest::timeout(10)) {
  command_template t{"echo pre"};
  CHECK(!t.has_replacements());
  CHECK(t.expand({{"a b", "$x"}}, 1) == "echo pre 'a b' '$x'");
  // {#} alone counts as a replacement string: nothing is appended.
  CHECK(command_template{"echo {#}"}.expand({{"a"}}, 3) == "echo 3");
  // Braces that name no replacement are text.
  CHECK(command_template{"echo {a,b} {0} {}"}.expand({{"v"}}, 1) ==
        "echo {a,b} {0} v");
}

TEST_CASE("-X repeats the word around {} per argument" * doctest::timeout(10)) {
  command_template t{"echo pre{}post end", true};
  CHECK(t.expand({{"a"}, {"b"}}, 1) == "echo preapost prebpost end");
}

TEST_CASE("{%} waits for the slot" * doctest::timeout(10)) {
  command_template t{"run {%} {%}"};
  CHECK(t.uses_slot());
  auto cmd = t.expand({{"x"}}, 1);
  CHECK(cmd.find(poolrun::slot_mark) != std::string::npos);
  CHECK(poolrun::fill_slot(cmd, 12) == "run 12 12");
}

TEST_CASE("quoting as GNU parallel's Q()" * doctest::timeout(10)) {
  using poolrun::shell_quote;
  CHECK(shell_quote("abc-_.+/9") == "abc-_.+/9");
  CHECK(shell_quote("") == "''");
  CHECK(shell_quote("a b") == "'a b'");
  CHECK(shell_quote("it's") == "'it'\"'\"'s'");
  CHECK(shell_quote("'x'") == "\"'\"'x'\"'\"");
  CHECK(shell_quote("$HOME") == "'$HOME'");
}

TEST_CASE("simple commands start without a shell - anything the shell "
          "would treat specially goes through it" *
          doctest::timeout(10)) {
  using poolrun::simple_command;
  CHECK(simple_command("true 1") == std::vector<std::string>{"true", "1"});
  CHECK(simple_command("gzip -9 a/b.txt") ==
        std::vector<std::string>{"gzip", "-9", "a/b.txt"});
  for (auto cmd : {"echo hi", "cd /", "A=1 env", "ls *", "ls 'a b'",
                   "ls $HOME", "a; b", "a | b", "a > f", "ls ~", "true --help",
                   "kill 1", "x=1", "f {a,b}", "printf %s", "test -f x",
                   "ls =x", ""})
    CHECK_MESSAGE(!simple_command(cmd), cmd);
  CHECK(simple_command("true --help x"));
}

TEST_CASE("the shell: --shell - then PARALLEL_SHELL" * doctest::timeout(10)) {
  CHECK(poolrun::choose_shell("/bin/dash") == "/bin/dash");
  ::setenv("PARALLEL_SHELL", "/bin/zsh-like", 1);
  CHECK(poolrun::choose_shell("") == "/bin/zsh-like");
  ::unsetenv("PARALLEL_SHELL");
  CHECK(!poolrun::choose_shell("").empty());
}
