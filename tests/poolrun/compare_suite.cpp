// GNU parallel vs poolrun on what GNU parallel's own test suite uses every
// day: behaviours that once differed, and the options of its working set.
#include "compare.hpp"

using namespace poolrun::test;

namespace {

std::string numbers(int from, int to) {
  std::string text;
  for (int i = from; i <= to; ++i)
    text += std::to_string(i) + "\n";
  return text;
}

} // namespace

TEST_CASE("GNU parallel vs poolrun: --pipe into a command that exits before "
          "reading its block" *
          doctest::timeout(120)) {
  // grep ends at its first match; the rest of each 1M block cannot be
  // written: both matches printed, both jobs failed by SIGPIPE (status 2).
  auto inv = sorted({"--pipe", "grep", "-m1", "5"}, numbers(1, 200000));
  auto ours = check_same(inv);
  CHECK(ours.status == 2);
  CHECK(sorted_text(ours.out) == "165669\n5\n");
}

TEST_CASE("GNU parallel vs poolrun: --retries retries at once" *
          doctest::timeout(120)) {
  // 8 attempts each: with a 100 ms doubling wait poolrun took 12.7 s.
  auto retries = sorted({"--retries", "8", "echo try >> n{}; echo {}; exit 1",
                         ":::", "a", "b"});
  retries.files = {"na", "nb"};
  auto ours = check_same(retries);
  CHECK(ours.took < 5s);
}

TEST_CASE("GNU parallel vs poolrun: {%} in --tagstring and the first slot" *
          doctest::timeout(120)) {
  check_same(ordered({"-k", "-j1", "--tagstring", "{%}", "echo", "x", ":::",
                      "a", "b"}));
  check_same(ordered({"-k", "--tagstring", "{%}", "echo", "x", ":::", "a"}));
  check_same(ordered({"-k", "--tagstring", "no strings", "echo", ":::", "a"}));
  check_same(ordered({"-k", "--lb", "--tagstring", "s{%}", "-j1", "echo",
                      ":::", "a", "b"}));
  // The lowest free slot: the first job is always in slot 1.
  for (int i = 0; i < 5; ++i)
    check_same(ordered({"-j4", "echo", "{%}", ":::", "a"}));
}

TEST_CASE("GNU parallel vs poolrun: :::+ and ::::+ link and cut to the "
          "shortest" *
          doctest::timeout(120)) {
  check_same(ordered({"-k", "echo", ":::", "a", "b", "c", ":::+", "1", "2"}));
  check_same(ordered({"-k", "echo", ":::", "x", "y", ":::", "a", "b", "c",
                      ":::+", "1", "2"}));
  std::vector<std::pair<std::string, std::string>> files = {
      {"f1", "a\nb\nc\n"}, {"f2", "1\n2\n"}, {"f3", "X\nY\nZ\n"}};
  for (auto args : std::vector<std::vector<std::string>>{
           {"-k", "echo", "::::", "f1", "::::+", "f2", "f3"},
           {"-k", "echo", "::::+", "f1", "f2", "f3"},
           {"-k", "echo", "::::", "f1", "f2", "::::+", "f3"},
           {"-k", "--link", "echo", "::::", "f1", "f2", "f3"}}) {
    auto inv = ordered(args);
    inv.given = files;
    check_same(inv);
  }
}

TEST_CASE("GNU parallel vs poolrun: -n0 - -N context - {-1} - -X positional" *
          doctest::timeout(120)) {
  check_same(ordered({"-k", "-n0", "echo", "x", ":::", "a", "b"}));
  check_same(ordered({"-k", "-N", "10", "echo", "a{}b"}, numbers(1, 19)));
  check_same(ordered({"-k", "-N3", "echo", "a{1}b{}c", "x{.}"},
                     numbers(1, 7)));
  check_same(ordered({"-k", "-N3", "echo", "a{-1}b{}c"}, numbers(1, 5)));
  check_same(ordered({"-k", "echo", "{-1}", "{1}", ":::", "a", "b", ":::",
                      "c", "d"}));
  check_same(ordered({"-k", "-n", "3", "echo", "{-1}", ":::", "a", "b", "c",
                      "d", "e"}));
  check_same(ordered({"-k", "-X", "-j1", "echo", "a{1}b{}c"}, numbers(1, 5)));
  check_same(ordered({"-k", "-X", "-j1", "echo", "x{-1}y"}, numbers(1, 5)));
  check_same(ordered({"-k", "-X", "echo", "{2/.}", ":::", "a/b.c", "d/e.f",
                      ":::", "x/y.z"}));
}

TEST_CASE("GNU parallel vs poolrun: --results with a 300-byte value" *
          doctest::timeout(120)) {
  auto inv = sorted({"--results", "res", "echo", ":::", std::string(300, 'x'),
                     "a/" + std::string(300, 'y')});
  inv.files = {"res/"};
  check_same(inv);
}

TEST_CASE("GNU parallel vs poolrun: options in $PARALLEL" *
          doctest::timeout(120)) {
  auto inv = ordered({"echo", "{}", ":::", "b", "a"});
  inv.env = {"PARALLEL=-k --tag"};
  check_same(inv);
  auto escaped = ordered({"-k", "echo", ":::", "a"});
  escaped.env = {"PARALLEL=--tagstring a\\ b"};
  check_same(escaped);
}

TEST_CASE("GNU parallel vs poolrun: --pipe without a command is an error" *
          doctest::timeout(60)) {
  auto ours = check_same(sorted({"--pipe"}, "a\n"));
  CHECK(ours.status == 255);
  CHECK(ours.err.empty()); // (its own line only)
}

TEST_CASE("GNU parallel vs poolrun: --halt names the job that stopped the "
          "run" *
          doctest::timeout(120)) {
  for (auto halt : {"now,fail=1", "soon,fail=1", "1", "2", "now,success=1",
                    "soon,done=1"}) {
    auto inv = sorted({"-j2", "--halt", halt, "sleep 0.{}; exit {}", ":::",
                       "1", "5", "0"});
    inv.compare_stderr = true; // the command lines after "This job ..."
    auto [ours, theirs] = run_both(inv);
    CAPTURE(halt);
    CHECK(ours.status == theirs.status);
    CHECK(ours.err == theirs.err);
  }
}

TEST_CASE("GNU parallel vs poolrun: -I - -q - -v - -t - -r - -E - --trim" *
          doctest::timeout(120)) {
  check_same(ordered({"-k", "-I", ",,", "echo", ",,{}", ":::", "a", "b"}));
  check_same(ordered({"-k", "-I", "XX", "echo", "<XX>", "XX.", ":::", "a"}));
  check_same(ordered({"-k", "-q", "echo", "a  b", "{}", "$HOME", ":::",
                      "x y"}));
  check_same(ordered({"-k", "-v", "echo", ":::", "a", "b"}));
  auto traced = ordered({"-k", "-t", "echo", ":::", "a", "b"});
  traced.compare_stderr = true;
  check_same(traced);
  check_same(ordered({"-k", "--verbose", "echo", ":::", "a"}));
  check_same(ordered({"-k", "-r", "echo", "x{}y"}, "a\n\n  \nb\n"));
  check_same(ordered({"-k", "--no-run-if-empty", "echo", "x{}y", ":::", "",
                      "a", " "}));
  check_same(ordered({"-k", "-E", "STOP", "echo"}, "a\nb\nSTOP\nc\n"));
  check_same(ordered({"-j2", "-N1", "--pipe", "cat"}, "\n"));
  check_same(ordered({"-r", "-j2", "-N1", "--pipe", "cat"}, "\n"));
  auto dry = ordered({"--dryrun", "--joblog", "-", "echo", ":::", "a"});
  check_same(dry);
  check_same(ordered({"-k", "-E", "b", "echo", ":::", "a", "b", "c"}));
  // -E ends each source at its own STR.
  auto per_source = ordered({"-k", "-E", "5", "echo", "::::", "-", ":::", "2",
                             "3", "4", "5", "6", "::::", "f"},
                            numbers(1, 100));
  per_source.given = {{"f", numbers(3, 11)}};
  check_same(per_source);
  auto cut_to_nothing = ordered({"-k", "-E", "3", "echo", "::::", "-", ":::",
                                 "3", "4", "::::", "f"},
                                numbers(1, 10));
  cut_to_nothing.given = {{"f", numbers(3, 5)}};
  check_same(cut_to_nothing);
  auto all_cut = ordered({"-k", "-E", "3", "echo", "::::", "-", ":::", "3",
                          "4", "::::", "f"},
                         numbers(3, 10));
  all_cut.given = {{"f", numbers(3, 5)}};
  check_same(all_cut);
  check_same(ordered({"-k", "--skip-first-line", "--pipe", "--block", "10",
                      "--header", "1", "cat"},
                     "skipped\nMyHeader\n" + numbers(1, 10)));
  check_same(ordered({"-k", "--skip-first-line", "echo"}, numbers(1, 3)));
  check_same(ordered({"-k", "--trim", "lr", "echo", "[{}]", ":::", " a ",
                      "b  "}));
  check_same(ordered({"-k", "--trim", "r", "echo", "[{}]"}, " a \n"));
}

TEST_CASE("GNU parallel vs poolrun: --colsep - -L - -l" *
          doctest::timeout(120)) {
  check_same(ordered({"-k", "--colsep", "\\t", "echo", "{2}", "{1}"},
                     "a\tb\nc\td\n"));
  check_same(ordered({"-k", "-C", " ", "echo", "{2}", "{1}"}, "a b\nc d\n"));
  check_same(ordered({"-k", "--colsep", ",", "echo", "[{2}]"}, "a,b\nc\n"));
  check_same(ordered({"-k", "--colsep", ",", "echo", "[{1}][{2}]"},
                     " a , b \n"));
  check_same(ordered({"-k", "--colsep", ",", "--trim", "n", "echo",
                      "[{1}][{2}]"},
                     " a , b \n"));
  check_same(ordered({"-k", "--colsep", " +", "echo", "{1}-{2}"}, "a  b\n"));
  check_same(ordered({"-k", "--colsep", ",", "echo", ":::", "a,b", "c,d"}));
  check_same(ordered({"-k", "--colsep", ",", "echo", "{}"}, "a,b\n"));
  check_same(ordered({"-k", "-L2", "echo"}, numbers(1, 5)));
  check_same(ordered({"-k", "-L2", "echo", "{}x"}, numbers(1, 5)));
  check_same(ordered({"-k", "--max-lines", "3", "echo"}, numbers(1, 5)));
  check_same(ordered({"-k", "-l", "echo"}, numbers(1, 3)));
}

TEST_CASE("GNU parallel vs poolrun: --delay - --shuf - --joblog +FILE - "
          "--dryrun and --jl" *
          doctest::timeout(120)) {
  auto delayed = sorted({"-j4", "--delay", "0.2", "echo", ":::", "a", "b",
                         "c", "d"});
  auto ours = check_same(delayed);
  CHECK(ours.took >= 550ms); // three gaps of 0.2 s between four starts
  check_same(sorted({"--shuf", "echo", ":::", "a", "b", "c", "d", "e"}));
  check_same(ordered({"-k", "--dryrun", "echo", ":::", "a", "b"}));
  auto appended = ordered({"-k", "--jl", "+log", "echo", ":::", "a", "b"});
  appended.given = {{"log", "earlier line\n"}};
  auto [a, b] = run_both(appended);
  CHECK(a.status == b.status);
  CHECK(a.out == b.out);
  temp_dir dir;
  write_file(dir / "log", "earlier line\n");
  child_process run{poolrun_argv({"--joblog", "+log", "echo", ":::", "a"}),
                    "", dir.path};
  REQUIRE(run.exit_code(30s) == 0);
  auto log = read_file(dir / "log");
  CHECK(log.rfind("earlier line\n", 0) == 0);
  CHECK(log.find("\techo a\n") != std::string::npos);
}

TEST_CASE("GNU parallel vs poolrun: --header - --recstart - -s - --env" *
          doctest::timeout(120)) {
  check_same(ordered({"-k", "--header", ":", "echo", "{a}", "{b}", ":::",
                      "a", "1", "2", ":::", "b", "x", "y"}));
  check_same(ordered({"-k", "--header", ":", "--colsep", "\\t", "echo", "{y}",
                      "{x}"},
                     "x\ty\n1\t2\n3\t4\n"));
  auto file = ordered({"-k", "--header", ":", "--colsep", ",", "echo",
                       "{y}{x}", "::::", "hf"});
  file.given = {{"hf", "x,y\n1,2\n"}};
  check_same(file);
  check_same(ordered({"-k", "--header", "1", "echo", "{}"}, "h\n1\n2\n"));
  check_same(ordered({"-k", "--header", ":", "echo", "{B}", "{A}"},
                     "A\tB\n1\tone"));
  check_same(ordered({"-k", "--header", ":", "--pipe", "-N1", "cat"},
                     "h\n1\n2\n"));
  check_same(ordered({"-k", "--recstart", "A", "--pipe", "-N1",
                      "echo [; cat; echo ]"},
                     "A1\nx\nA2\ny\n"));
  check_same(ordered({"-k", "--recend", ";", "--recstart", "A", "--pipe", "-N1",
                      "echo [; cat; echo ]"},
                     "a;A1\nx;A2\ny\n"));
  check_same(ordered({"-k", "-s", "10", "-X", "echo"}, numbers(1, 12)));
  check_same(ordered({"-k", "-s", "12", "-m", "echo"}, numbers(1, 12)));
  auto env = ordered({"-k", "--env", "V", "echo", "$V", ":::", "a"});
  env.env = {"V=value"};
  check_same(env);
}

TEST_CASE("GNU parallel vs poolrun: --files - --round-robin" *
          doctest::timeout(120)) {
  // --files: a file name per job; the files hold the outputs.
  auto [ours, theirs] = run_both(sorted({"--files", "echo", ":::", "a", "b"}));
  CHECK(ours.status == theirs.status);
  auto contents = [](const std::string& out) {
    std::string all;
    for (auto& path : sorted_lines(out)) {
      CHECK(path.size() > 4);
      CHECK(path.substr(path.size() - 4) == ".par");
      all += read_file(path);
      ::unlink(path.c_str());
    }
    return sorted_text(all);
  };
  CHECK(contents(ours.out) == "a\nb\n");
  CHECK(contents(theirs.out) == "a\nb\n");
  // --round-robin: one command per slot, every block given to one.
  for (auto jobs : {"2", "3"}) {
    auto [a, b] = run_both(sorted({"--round-robin", "--pipe", "--block", "100",
                                   "-j", jobs, "wc", "-l"},
                                  numbers(1, 1000)));
    auto sum = [](const std::string& out) {
      long total = 0;
      for (auto& line : lines_of(out))
        total += std::stol(line);
      return total;
    };
    CAPTURE(jobs);
    CHECK(a.status == b.status);
    CHECK(lines_of(a.out).size() == lines_of(b.out).size());
    CHECK(sum(a.out) == 1000);
    CHECK(sum(b.out) == 1000);
  }
  check_same(sorted({"--round-robin", "--pipe", "-j3", "wc", "-l"},
                    numbers(1, 3)));
}

TEST_CASE("GNU parallel vs poolrun: -l0 - -L0 - -e - --dnr and the other "
          "renamed strings" *
          doctest::timeout(120)) {
  check_same(ordered({"-k", "-l0", "echo", "l0"}, numbers(1, 2)));
  check_same(ordered({"-k", "-l2", "echo", "l2"}, numbers(1, 5)));
  check_same(ordered({"-k", "-L0", "echo", "L0"}, numbers(1, 2)));
  check_same(ordered({"-k", "-i", "-eEND", "echo", "repl{.}ce"},
                     "a\nEND\nb\n"));
  check_same(ordered({"-k", "--replace", "-eEND", "echo", "repl{.}ce"},
                     "a\nEND\nb\n"));
  check_same(ordered({"--dnr", "II", "-k", "echo", "II", "{}", ":::", "a",
                      "a/b", "a/b/c"}));
  check_same(ordered({"--er", "EE", "--bnr", "BB", "-k", "echo", "EE", "BB",
                      "{.}", ":::", "x/a.b"}));
  check_same(ordered({"--bner", "NN", "--seqreplace", "SS", "-k", "echo",
                      "NN", "SS", "{#}", ":::", "x/a.b"}));
  check_same(ordered({"--slotreplace", "%%", "-j1", "-k", "echo", "%%",
                      ":::", "a"}));
}

TEST_CASE("options poolrun leaves out say what to use instead" *
          doctest::timeout(60)) {
  for (auto option : {"--tmux", "--memfree", "--load", "--basefile",
                      "--sqlmaster", "--onall"}) {
    CAPTURE(option);
    child_process run{poolrun_argv({option, "x", "echo", ":::", "a"}), "", ""};
    CHECK(run.exit_code(30s) == 255);
    CHECK(run.err().find("is not supported by poolrun") != std::string::npos);
    CHECK(run.out().empty());
  }
}

TEST_CASE("GNU parallel vs poolrun: -d splits ::: values - longer -d - "
          "--compress - --nice - --result - -t in order" *
          doctest::timeout(120)) {
  check_same(ordered({"-k", "-d", " ", "echo", ":::", "1 done"}));
  check_same(ordered({"-k", "-d", ",", "echo", "x{}y", ":::", "a,b,", "c"}));
  check_same(ordered({"-k", "echo", "x{}y", ":::", "a\nb", "", "c"}));
  check_same(ordered({"-k", "-0", "echo", "x{}y", ":::", "a\nb"}));
  check_same(
      ordered({"-k", "-d", "\\n\\n", "--tagstring", "{#}", "echo", "ABC;echo"},
              "1\n2\n\n3\n4\n\n"));
  check_same(ordered({"-k", "-d", "ab", "echo", "[{}]"}, "1ab2aab3a"));
  check_same(ordered({"-k", "--compress", "echo", ":::", "OK"}));
  check_same(ordered({"--nice", "1", "-vv", "echo $(nice)", ":::", "b"}));
  auto results = sorted({"--result", "res", "echo", ":::", "a", "b"});
  results.files = {"res/"};
  check_same(results);
  // --process-slot-var: {%} - 1; four at once hold four slots.
  check_same(
      sorted({"-j4", "--process-slot-var=name", "sleep 0.5; echo $name; : {}",
              ":::", "a", "b", "c", "d"}));
  check_same(ordered({"-j1", "-k", "--process-slot-var", "v", "-q", "sh", "-c",
                      "echo \"$v$0\"", ":::", "a", "b"}));
  // -i and --replace: an optional value, attached or the next word.
  for (auto args : std::vector<std::vector<std::string>>{
           {"-i+", "echo", "repl+ce"},
           {"--replace", "+", "echo", "repl+ce"},
           {"--replace==", "echo", "repl=ce"},
           {"--replace=^", "echo", "repl^ce"}}) {
    args.insert(args.begin(), {"-k", "-eEND"});
    check_same(ordered(args, "a\nEND\nb\n"));
  }
  // -s N with -X/-m: commands up to N-1 bytes, as GNU parallel packs.
  std::string gifs;
  for (int i = 1; i <= 15; ++i)
    gifs += std::to_string(i) + ".gif\n";
  for (auto mode : {"-kX", "-km"})
    check_same(ordered({"-j1", "-s", "80", mode, "echo", "a{}b{.}c{.}"}, gifs));
  // Without -s, half the longest command less 3000, as GNU parallel: as
  // many commands (their last arguments differ: GNU parallel probes its
  // longest command).
  for (auto word : {"a::b::c::", "x"}) {
    auto [ours, theirs] = run_both(
        ordered({"-j1", "-I", "::", "-X", "echo", word}, numbers(1, 10000)));
    CHECK(lines_of(ours.out).size() == lines_of(theirs.out).size());
  }
  // Counts with prefixes: -N 1k is 1000 arguments.
  check_same(sorted({"-N", "1k", "echo {} | wc -w"}, numbers(1, 2500)));
  check_same(sorted({"-n", "1K", "echo {} | wc -w"}, numbers(1, 2500)));
  // -t lines in input order, as GNU parallel starts the jobs.
  // ulimit -n 30: fewer slots, and every job runs (GNU parallel too).
  std::vector<std::string> few{"sh", "-c", "ulimit -n 30; exec \"$@\"", "sh"};
  for (auto& arg : poolrun_argv({"-k", "-j0", "--retries", "2", "--timeout",
                                 "0.1", "echo {}; sleep {}; false"}))
    few.push_back(arg);
  child_process limited{few, numbers(1, 8), ""};
  CHECK(limited.exit_code(60s) == 8);
  CHECK(limited.out() == numbers(1, 8));
  // --delay: the jobs start in input order.
  for (auto delay : {"0.1s", "0.005m"})
    check_same(ordered({"--delay", delay, "echo", ":::", "a", "b", "c"}));
  for (int i = 0; i < 3; ++i) {
    auto traced = ordered({"-k", "-j8", "-t", "true", "{}ar"}, numbers(1, 40));
    traced.compare_stderr = true;
    auto [ours, theirs] = run_both(traced);
    CHECK(ours.err == theirs.err);
  }
}

TEST_CASE("GNU parallel vs poolrun: $PARALLEL_ENV - lines going on after a "
          "blank with -L - header names of \\r\\n files" *
          doctest::timeout(120)) {
  auto variable = ordered({"{}", "$v", ":::", "echo"});
  variable.env = {"PARALLEL_ENV=v='OK as variable'"};
  check_same(variable);
  auto file = ordered({"{}", "$v", ":::", "echo"});
  file.env = {"PARALLEL_ENV=envf"};
  file.given = {{"envf", "v='OK as file'\n"}};
  check_same(file);
  // -L: a line ending in a blank goes on in the next, as in xargs.
  check_same(ordered({"-kr", "-L2", "echo"}, "foo\n\nole \nbar\nquux\n"));
  check_same(
      ordered({"-kr", "-L2", "echo", ":::", "foo", "", "ole ", "bar", "quux"}));
  check_same(ordered({"--max-lines", "3", "echo"}, "> \n> \n>\n"));
  check_same(
      ordered({"-kr", "-L2", "-E", "bar", "echo"}, "foo\n\nole \nbar\nquux\n"));
  check_same(ordered({"--colsep", ",", "--header", ":", "echo", "{foo}"},
                     "foo\r\nbar\r\n"));
  // --results with --header: the fields' names instead of 1, 2.
  auto named =
      ordered({"-k", "--header", ":", "--results", "res", "echo", "{1}", "{2}",
               ":::", "a", "I", "II", ":::", "b", "III"});
  named.files = {"res/"};
  check_same(named);
  auto swapped =
      ordered({"-k", "--header", ":", "--results", "res", "echo", "{a}", "{b}",
               ":::", "b", "III", "IIII", ":::", "a", "I"});
  swapped.files = {"res/"};
  check_same(swapped); // res/a/I/b/III: in the order of the names
  // White space after a field's number: {1 }, {1 .}, `{1` newline `}`.
  check_same(
      ordered({"-k", "echo {1 .} {1. } {2\n  }", ":::", "a.b", ":::", "c"}));
  // --nonall: the command once, without arguments (here: locally).
  check_same(
      ordered({"-q", "--nonall", "sh", "-c", "echo $#", "_", "a", "b", ""}));
  check_same(ordered({"--nonall", "echo", "x{}y"}));
  // --compress with --results: see compare_words.cpp.
}

TEST_CASE("GNU parallel vs poolrun: --tmpl files - replacement strings - "
          "--cleanup" *
          doctest::timeout(120)) {
  std::string text = "Job:{#} Slot:{%} All:{} 1:{1} -1:{-1} x:{x} "
                     "Perl:{=x $_=sprintf('%.2f',$_) =}\n";
  for (bool cleanup : {false, true}) {
    std::vector<std::string> args{"-k", "-j1", "--header", ":", "--tmpl",
                                  "t=out.{#}", "--tmpl", "u=o-{x}-{y}",
                                  "cat out.{#} o-{x}-{y}; ls o* | wc -l",
                                  ":::", "x", "1.5", "2", ":::", "y", "a",
                                  "b"};
    if (cleanup)
      args.insert(args.begin(), "--cleanup");
    auto inv = ordered(args);
    inv.given = {{"t", text}, {"u", "{}/{2}\n"}};
    check_same(inv);
  }
  // A template that cannot be read, a --tmpl without NAME: named.
  for (auto value : {"missing=x", "t"}) {
    child_process run{poolrun_argv({"--tmpl", value, "echo", ":::", "a"}), "",
                      ""};
    CHECK(run.exit_code(30s) == 255);
    CHECK(run.err().find("--tmpl") != std::string::npos);
    CHECK(run.out().empty());
  }
}

TEST_CASE("GNU parallel vs poolrun: --header 0 names each file source by "
          "its file" *
          doctest::timeout(120)) {
  auto named = ordered({"-k", "--header", "0", "echo", "{f.txt}", "{f.txt.}",
                        "{=f.txt $_.='x' =}", "{g}", "::::", "f.txt", "g"});
  named.given = {{"f.txt", "c1\nc2.d\n"}, {"g", "e\n"}};
  check_same(named);
  // First: a file named 1 makes {1} its source (the third here).
  auto first = ordered({"-k", "--header", "0", "echo", "{1}", "::::", "3", "2",
                        "1"});
  first.given = {{"1", "1\n"}, {"2", "1\n2\n"}, {"3", "1\n2\n3\n"}};
  check_same(first);
}

TEST_CASE("GNU parallel vs poolrun: --retry-failed reruns the joblog's "
          "failed commands - a newline in a command is a NUL there" *
          doctest::timeout(120)) {
  // A joblog with a failed command holding a newline: the failed ones
  // run again, not the command line's.
  auto retry = ordered({"-k", "--jl", "log", "--retry-failed", "never run",
                        ":::", "x"});
  retry.given = {{"log", "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\t"
                         "Exitval\tSignal\tCommand\n"
                         "1\t:\t1.000\t0.001\t0\t2\t0\t0\techo a\n"
                         "2\t:\t1.000\t0.001\t0\t2\t1\t0\techo b; false\n"
                         "3\t:\t1.000\t0.001\t0\t2\t1\t0\techo \"c" +
                         std::string(1, '\0') + "d\"\n"}};
  check_same(retry);
  // A newline of a command is written as a NUL; "-" is a file name.
  auto lines = ordered({"--jl", "-", "--resume", "echo \"a\nb\"", ":::",
                        "x"});
  auto [a, b] = run_both(lines);
  CHECK(a.status == b.status);
  CHECK(a.out.find(std::string{"echo \"a\0b\" x\n", 13}) != std::string::npos);
  CHECK(b.out.find(std::string{"echo \"a\0b\" x\n", 13}) != std::string::npos);
}
