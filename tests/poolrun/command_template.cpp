// Command templates, GNU parallel's quoting, and commands started without
// a shell.
#include <memory>

#include <doctest/doctest.h>

#include "command_template.hpp"
#include "perl_expr.hpp"
#include "perl_strings.hpp"
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

TEST_CASE("perl strings: {= =} pairs, --rpl tags with groups, longer first" *
          doctest::timeout(10)) {
  using kind = poolrun::template_piece::kind;
  auto pieces = poolrun::split_perl_strings(
      "a{=2 s/x/y/ =}{}%D%{/b/c}", {{"%", ""}, {"%D", "s/a/b/"},
                                    {"{/(.+?)/(.*?)}", "s/$$1/$$2/"}},
      {"{}"}, {});
  REQUIRE(pieces.size() == 6);
  CHECK(pieces[0].text == "a");
  CHECK(pieces[1].what == kind::perl);
  CHECK(pieces[1].position == 2);
  CHECK(pieces[1].text == "s/x/y/ ");
  CHECK(pieces[2].what == kind::kept);
  CHECK(pieces[3].text == "s/a/b/"); // %D before %
  CHECK(pieces[4].text.empty());
  CHECK(pieces[5].text ==
        "$_pAr_gRp1 = \"b\";$_pAr_gRp2 = \"c\";s/$_pAr_gRp1/$_pAr_gRp2/");
  // The shortest pair; a lone {= is text. --header names give positions.
  auto nested = poolrun::split_perl_strings("{={==}", {}, {}, {});
  REQUIRE(nested.size() == 2);
  CHECK(nested[0].text == "{=");
  auto named = poolrun::split_perl_strings("{=v2 $_.=1=}", {}, {},
                                           {"v1", "v2"});
  REQUIRE(named.size() == 1);
  CHECK(named[0].position == 2);
}

TEST_CASE("perl strings: evaluated once per argument and job, quoted unless "
          "uq()" *
          doctest::timeout(30)) {
  auto perl = std::make_shared<poolrun::perl_evaluator>(poolrun::rpl_table{});
  command_template t{"e {= $_=++$::n.$_ =} {=2 uq() =} {=1 $_=++$::n =}", false,
                     {}, {}, perl};
  REQUIRE(perl->error().empty());
  perl->begin_job(1, {"a b", "c;d"});
  CHECK(t.expand({{"a b", "c;d"}}, 1) == "e '1a b' '2c;d' c;d 3");
  CHECK(t.starts_with_replacement() == false);
  CHECK(command_template{"l{= s/p/s/ =} x", false, {}, {}, perl}
            .starts_with_replacement());
  command_template bad{"{= s/a/ =}", false, {}, {}, perl};
  CHECK(perl->error().find("cannot use the perl expression") == 0);
}
