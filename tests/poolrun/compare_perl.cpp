// GNU parallel vs poolrun on perl replacement strings: {= perl =},
// --rpl and --plus (evaluated by poolrun's perl co-process).
#include "compare.hpp"

#include <regex>

using namespace poolrun::test;

TEST_CASE("GNU parallel vs poolrun: {= perl =} - positions - helpers" *
          doctest::timeout(120)) {
  check_same(ordered({"-k", "echo", "{= s/a/b/ =}", ":::", "a", "ba"}));
  // {=N ...=} and {=-N ...=}: one field; a field that is not there: "".
  check_same(
      ordered({"-k", "echo", "{=2 s/a/b/ =}", "{=-1 $_.='x' =}",
               "{=3 $_='never' =}", ":::", "a", "ba", ":::", "c", "aa"}));
  // Quoted unless uq(); Q() and pQ() as GNU parallel's.
  check_same(ordered({"-k", "echo", "{= $_=Q($_) =}", "{}{=uq()=}",
                      ":::", "a b", "c'd", "`echo foo`"}));
  check_same(ordered({"-k", "echo", "{= $_=pQ($_) =}", ":::", "a$b", "c\"d"}));
  check_same(
      ordered({"-k", "echo", "{= $_=$job->seq() =}{= $_=seq() =}",
               "{= $_=$arg[1].$arg[2] =}", ":::", "a", "b", ":::", "c"}));
  // An expression over two lines, and {2} inside one (a perl quantifier).
  check_same(ordered({"-k", "echo", "{=\n s/a/b/ =}", "{2}-{=1 s/O{2}//=}",
                      ":::", "OOOK", "a", ":::", "OK"}));
  // The time functions and hash() give values of their shape (not
  // compared: the clock moves, and perl seeds its hash per process).
  child_process shapes{
      poolrun_argv({"echo",
                    "{= $_=join(' ',yyyy_mm_dd(),hhmmss(),length(hash($_))) =}",
                    ":::", "1"}),
      "", ""};
  CHECK(shapes.exit_code(30s) == 0);
  CHECK(std::regex_match(shapes.out(),
                         std::regex{"\\d{4}-\\d\\d-\\d\\d \\d{6} \\d+\n"}));
}

TEST_CASE("GNU parallel vs poolrun: {= =} evaluated once per argument - "
          "where the pairs are" *
          doctest::timeout(120)) {
  for (auto expr : {"{=  $_=++$::G =}", "{=1 $_=++$::G =}"}) {
    check_same(ordered({"-k", "echo", expr, expr, ":::", "a", "b"}));
    check_same(ordered({"-k", "echo", expr, ":::", "a", "b", ":::", "c", "d"}));
  }
  // The shortest pair wins; an unmatched {= or =} is text.
  for (auto text :
       {"{= s/a/b/=}{= {= s/a/b/=}", "{= s/a/b/=}{={=s/a/b/=}",
        "{= s/a/b/ =} {={==}", "{={= =}", "{= {= =}", "{= {= =} =}"})
    check_same(ordered({"echo", text, ":::", "a"}));
  // In --tagstring, with -X and -N.
  check_same(
      ordered({"-k", "--tagstring", "{= s/a/T/ =}", "echo", ":::", "a", "b"}));
  check_same(
      ordered({"-k", "-X", "echo", "x{= s/a/b/ =}", ":::", "a", "ba", "c"}));
  check_same(ordered({"-k", "-N2", "echo", "{= s/a/b/ =}", "{=2 $_.=1 =}",
                      ":::", "a", "ba", "c", "d"}));
}

TEST_CASE("GNU parallel vs poolrun: a replacement string in the command's "
          "first word is not quoted" *
          doctest::timeout(120)) {
  check_same(ordered({"l{= s/p/s/ =}"}, "p /bin/ls\n"));
  check_same(
      ordered({"--colsep", "-", "l{=2 s/p/s/ =}", "{1}"}, "/bin/ls-p\n"));
  check_same(ordered({"l{}"}, "s /bin/ls\n"));
  check_same(ordered({"{}"}, "echo a  b\n"));
  check_same(ordered({"-k", "echo", "{}"}, "echo a  b\n"));
  check_same(ordered({"-k", "X={}", "echo", "{}"}, "a  b\n"));
}

TEST_CASE("GNU parallel vs poolrun: --rpl - groups - positions - longer "
          "first" *
          doctest::timeout(120)) {
  check_same(ordered({"-k", "--rpl", "{/(.+?)/(.*?)} s/$$1/$$2/;", "echo",
                      "{/a/b}", "{2/c/d}", ":::", "aa", ":::", "cc"}));
  check_same(
      ordered({"-k", "--rpl", "{..} s:\\.[^.]+$::;s:\\.[^.]+$::;", "echo",
               "{..}", "{2..}", ":::", "a.b.c", ":::", "x.y.z"}));
  // % is part of %D and %B: the longer ones are found first.
  check_same(ordered(
      {"--rpl", "{+.} s:.*\\.::", "--rpl", "%", "--rpl",
       "%D $_=::shell_quote(::dirname($_));", "--rpl",
       "%B s:.*/::;s:\\.[^/.]+$::;", "--rpl", "%E s:.*\\.::",
       "echo {}=%;echo %D={//};echo %B={/.};echo %E={+.};echo %D/%B.%E={}",
       ":::", "a.b/c.d/e.f"}));
  // With -I: the renamed string is kept, the --rpl strings found too.
  check_same(ordered({"-k", "-I", ",,", "--rpl", "% s/a/b/", "echo", ",,", "%",
                      "{= $_.=1 =}", ":::", "a"}));
  // --header: {=name ...=} and {name/.} are the named field.
  check_same(
      ordered({"-k", "--header", ":", "echo", "{=v2=}{=v1 $_=Q($_)=}", "{v1/.}",
               "{v1//}", ":::", "v1", "d/K.x", ":::", "v2", "O"}));
}

TEST_CASE("GNU parallel vs poolrun: --plus strings - skip() - total_jobs()" *
          doctest::timeout(120)) {
  check_same(
      ordered({"-k", "--plus", "echo",
               "{} = {+/}/{/} = {.}.{+.} = {+/}/{/.}.{+.} = {..}.{+..} = "
               "{+/}/{/..}.{+..} = {...}.{+...} = {+/}/{/...}.{+...}",
               ":::", "a", "a.b.c", "a.b/1.2", "a.b.c.d/1.2.3.4", "a.", "a./1.",
               "a.b./1.2.."}));
  check_same(
      ordered({"-k", "--plus", "echo", "{%.z.z}", "{%%.z.*z}", "{#z.*z.}",
               "{##z.*z.}", ":::", "foo.z.z.z", "z.z.z.foo"}));
  check_same(ordered({"-k", "--plus", "echo", "{:-x}", "{:1}", "{:1:2}", "{^a}",
                      "{^^a}", "{,A}", "{,,A}", "{/a/b}", "{//a/b}", "{/#a/b}",
                      "{/%a/b}", ":::", "aAaAa", ""}));
  // skip(): not run, a failure (Exitval -2 in the joblog).
  check_same(ordered(
      {"-k", "--plus", "echo", "{uniq}", ":::", "A", "B", ":::", "A", "B"}));
  check_same(ordered({"-k", "--plus", "echo", "{choose_k}", ":::", "A", "B",
                      "C", ":::", "A", "B", "C"}));
  check_same(
      ordered({"-k", "echo", "{= skip() if /b/ =}", ":::", "a", "b", "c"}));
  child_process log{poolrun_argv({"-k", "-j1", "--joblog", "-", "echo",
                                  "{= skip() if /b/ =}", ":::", "a", "b", "c"}),
                    "", ""};
  CHECK(log.exit_code(30s) == 1);
  CHECK(log.out().find("\t0\t0\t-2\t0\techo b\n") != std::string::npos);
  // total_jobs() ({##}, {0#}): the whole input is read first.
  check_same(ordered({"-k", "--plus", "echo", "{##}", "{0#}", ":::", "a", "b",
                      "c", "d", "e", "f", "g", "h", "i", "j", "k"}));
}

TEST_CASE("perl strings: mistakes are named - exit 255 - nothing runs" *
          doctest::timeout(60)) {
  // An expression perl cannot compile: as GNU parallel, exit 255.
  check_same(ordered({"echo", "{= s/a/ =}", ":::", "a"}));
  child_process bad{poolrun_argv({"echo", "{= bad( =}", ":::", "a"}), "", ""};
  CHECK(bad.exit_code(30s) == 255);
  CHECK(bad.out().empty());
  CHECK(bad.err().find("cannot use the perl expression 'bad( '") !=
        std::string::npos);
  // --rpl without a tag (GNU parallel loops forever on it).
  child_process empty{poolrun_argv({"--rpl", "", "echo", ":::", "a"}), "", ""};
  CHECK(empty.exit_code(30s) == 255);
  CHECK(empty.err().find("--rpl") != std::string::npos);
}
