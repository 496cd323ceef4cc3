// The same invocations through GNU parallel and poolrun: same output
// (sorted, or in order with -k), same exit status, same files.
#include "compare.hpp"

#include <regex>

using namespace poolrun::test;

TEST_CASE("GNU parallel vs poolrun: replacement strings and quoting" *
          doctest::timeout(120)) {
  check_same(ordered({"-k", "echo", "{}", "{.}", "{/}", "{//}", "{/.}", ":::",
                      "/x/y/a.tar.gz", "b.c", ".bashrc", "a/.b", "c/", "/g"}));
  check_same(ordered({"-k", "echo", "{#}", "{}", ":::", "a", "b", "c"}));
  check_same(ordered({"-k", "-j1", "echo", "{%}", "{#}", ":::", "a", "b"}));
  check_same(ordered({"-k", "echo", "{2}", "{1}", "{1.}", "{2/}", ":::",
                      "a.x", "b.y", ":::", "/p/q", "r/s"}));
  check_same(ordered({"-k", "echo", "pre", ":::", "a", "b"}));
  check_same(ordered({"-k", "echo", "[{}]", ":::", "a b", "it's", "$HOME",
                      "*", "", "x\"y", "back\\slash"}));
  check_same(ordered({"-k", "--dry-run", "echo", "{}", ":::", "a b", "it's",
                      "$HOME", "x*"}));
  check_same(ordered({"-k", "printf", "%s|", "{}", "ok{}", ":::", "a b"}));
}

TEST_CASE("GNU parallel vs poolrun: input sources" * doctest::timeout(120)) {
  // No template: each input line is a command.
  check_same(ordered({"-k"}, "echo a\necho b; echo c\n\necho d\n"));
  check_same(ordered({"-k", ":::", "echo x", "echo y"}));
  check_same(sorted({"echo", "got", "{}"}, "x\ny\nz\n"));
  check_same(ordered({"-k", "echo", ":::", "a", "b", ":::", "1", "2", ":::",
                      "X", "Y"}));
  check_same(ordered({"-k", "echo", ":::", "a", "b", ":::+", "1", "2", ":::",
                      "X", "Y"}));
  check_same(ordered({"-k", "--link", "echo", ":::", "a", "b", "c", ":::",
                      "1", "2"}));
  check_same(ordered({"-k", "--xapply", "echo", "{2}{1}", ":::", "a", "b",
                      ":::", "1", "2"}));
  auto files = ordered({"-k", "echo", "::::", "f1", "::::", "f2"});
  files.given = {{"f1", "a\nb\n"}, {"f2", "1\n2\n"}};
  check_same(files);
  auto arg_files = ordered({"-k", "-a", "f1", "-a", "f2", "echo"});
  arg_files.given = files.given;
  check_same(arg_files);
  auto mixed = ordered({"-k", "echo", "{1}-{2}", "::::", "-", ":::", "p",
                        "q"},
                       "l1\nl2\n");
  check_same(mixed);
  check_same(ordered({"-k", "-0", "echo", "[{}]"}, std::string("a b\0c\0", 6)));
  check_same(ordered({"-k", "--null", "echo", "{}"}, std::string("x\ny\0z", 5)));
  check_same(ordered({"-k", "-d", ":", "echo", "<{}>"}, "a:b:c"));
  check_same(ordered({"-k", "-d", "\\t", "echo", "<{}>"}, "a\tb c\t"));
  check_same(sorted({"true"}, ""));
}

TEST_CASE("GNU parallel vs poolrun: arguments per command" *
          doctest::timeout(120)) {
  check_same(ordered({"-k", "-n2", "echo", ":::", "a", "b", "c", "d", "e"}));
  check_same(ordered({"-k", "-n", "2", "echo", "{}", "{#}", ":::", "a", "b",
                      "c"}));
  check_same(ordered({"-k", "-N2", "echo", "{1}-{2}", ":::", "a", "b", "c",
                      "d", "e"}));
  check_same(ordered({"-k", "-N0", "echo", "x", ":::", "a", "b"}));
  check_same(ordered({"-k", "-X", "-j1", "echo", "pre{}post", ":::", "a", "b",
                      "c"}));
  check_same(ordered({"-k", "-X", "-j2", "echo", ":::", "a", "b", "c", "d",
                      "e"}));
  check_same(ordered({"-k", "-m", "-j3", "echo", ":::", "a", "b", "c", "d",
                      "e"}));
  check_same(ordered({"-k", "-X", "-j2", "echo"}, "1\n2\n3\n4\n5\n"));
}

TEST_CASE("GNU parallel vs poolrun: --pipe" * doctest::timeout(120)) {
  std::string ten;
  for (int i = 1; i <= 10; ++i)
    ten += std::to_string(i) + "\n";
  check_same(ordered({"-k", "--pipe", "--block", "10", "echo B; cat"}, ten));
  check_same(ordered({"-k", "--pipe", "-N3", "echo B; cat"}, ten));
  check_same(ordered({"-k", "--pipe", "--recend", ";", "--block", "3",
                      "echo \"[$(cat)]\""},
                     "a;b;c;d;"));
  check_same(sorted({"--pipe", "--block", "1k", "wc", "-l"}, ten + ten + ten));
  check_same(ordered({"-k", "--pipe", "--block", "4", "cat"},
                     "a long record\nb\n"));
}

TEST_CASE("GNU parallel vs poolrun: --halt and exit statuses" *
          doctest::timeout(120)) {
  for (auto halt : {"now,fail=1", "soon,fail=1", "soon,fail=2", "1", "2"})
    check_same(ordered({"-j1", "--halt", halt, "echo {}; exit {}", ":::", "0",
                        "1", "0", "3", "0"}));
  check_same(ordered({"-j1", "--halt", "now,success=1", "echo {}; exit {}",
                      ":::", "1", "0", "2"}));
  check_same(ordered({"-j1", "--halt", "soon,fail=50%", "exit {}", ":::", "0",
                      "1", "1", "0", "0", "0"}));
  check_same(ordered({"-j1", "--halt", "soon,fail=50%", "exit {}", ":::", "0",
                      "1", "1", "1", "0", "0"}));
  check_same(ordered({"-j1", "--halt", "now,done=2", "exit {}", ":::", "0",
                      "1", "5"}));
  check_same(ordered({"-j1", "--halt", "soon,success=50%", "exit {}", ":::",
                      "1", "0", "0", "0"}));
  check_same(ordered({"-j1", "--halt", "now,fail=1", "kill -9 $$", ":::",
                      "a"}));
  // The exit status counts failed jobs, at most 101.
  check_same(sorted({"-j2", "exit {}", ":::", "0", "1", "2", "0", "255"}));
  std::string many;
  for (int i = 0; i < 102; ++i)
    many += "exit 1\n";
  check_same(sorted({"-j2"}, many));
}

TEST_CASE("GNU parallel vs poolrun: output modes" * doctest::timeout(120)) {
  check_same(ordered({"-k", "-j3", "sleep 0.{}; echo {}; echo e{} >&2", ":::",
                      "3", "1", "2"}));
  auto err = sorted({"-j3", "echo {} out; echo {} err >&2", ":::", "a", "b",
                     "c"});
  err.compare_stderr = true;
  check_same(err);
  check_same(ordered({"-k", "--tag", "echo", "x", ":::", "a", "b", ":::",
                      "1"}));
  check_same(ordered({"-k", "--tagstring", "<{}-{#}>", "echo",
                      "x; echo y", ":::", "a", "b"}));
  check_same(sorted({"--line-buffer", "-j2", "echo a{}; sleep 0.2; echo b{}",
                     ":::", "1", "2"}));
  check_same(sorted({"--lb", "--tag", "-j2", "echo a{}; sleep 0.1; echo b{}",
                     ":::", "1", "2"}));
  check_same(sorted({"-u", "-j2", "echo {}", ":::", "1", "2", "3"}));
  auto results = sorted({"--results", "res", "echo out {}; echo err {} >&2",
                         ":::", "a", "b/c", "", ":::", "1", "2"});
  results.files = {"res/"};
  check_same(results);
  auto templated = sorted({"--results", "out/{1}/x", "echo {}", ":::", "p",
                           "q"});
  templated.files = {"out/"};
  check_same(templated);
  auto into_dirs = sorted({"--results", "d/{#}/", "echo {}", ":::", "p"});
  into_dirs.files = {"d/"};
  check_same(into_dirs);
}

TEST_CASE("GNU parallel vs poolrun: joblog - resume - retries - timeout" *
          doctest::timeout(120)) {
  auto cmd = std::string{"echo {}; exit $(( {} % 3 == 0 ))"};
  std::vector<std::string> values = {":::", "1", "2", "3", "4", "5", "6"};
  auto with = [&](std::vector<std::string> front) {
    front.push_back(cmd);
    front.insert(front.end(), values.begin(), values.end());
    return front;
  };
  // The joblog: Seq, Host, Send, Receive, Exitval, Signal, Command as GNU
  // parallel writes them (times differ); --halt stops a first run, then
  // --resume, then --resume-failed continue it.
  temp_dir ours_dir;
  temp_dir theirs_dir;
  auto columns = [](const std::string& log) {
    std::string out;
    for (auto& line : lines_of(log)) {
      std::vector<std::string> f;
      size_t b = 0;
      for (;;) {
        auto t = line.find('\t', b);
        f.push_back(line.substr(b, t - b));
        if (t == std::string::npos)
          break;
        b = t + 1;
      }
      REQUIRE(f.size() == 9);
      out += f[0] + " " + f[1] + " " + f[4] + " " + f[5] + " " + f[6] + " " +
             f[7] + " " + f[8] + "\n";
    }
    return out;
  };
  for (auto run :
       {with({"--joblog", "jl", "-j1", "--halt", "now,fail=1"}),
        with({"--joblog", "jl", "-j1", "--resume"}),
        with({"--joblog", "jl", "-j1", "--resume-failed"})}) {
    child_process ours{poolrun_argv(run), "", ours_dir.path};
    child_process theirs{parallel_argv(run), "", theirs_dir.path};
    CHECK(ours.exit_code(30s) == theirs.exit_code(30s));
    CHECK(ours.out() == theirs.out());
    CHECK(columns(read_file(ours_dir / "jl")) ==
          columns(read_file(theirs_dir / "jl")));
  }
  // -k: the joblog in input order too, as GNU parallel writes it.
  {
    auto seqs = [](const std::string& log) {
      std::string out;
      for (auto& line : lines_of(log))
        out += line.substr(0, line.find('\t')) + " ";
      return out;
    };
    auto kept = ordered({"-k", "-j3", "--joblog", "jl", "sleep {}; echo {}",
                         ":::", "0.3", "0.1", "0.2"});
    temp_dir a;
    temp_dir b;
    child_process ours{poolrun_argv(kept.args), "", a.path};
    child_process theirs{parallel_argv(kept.args), "", b.path};
    CHECK(ours.exit_code(30s) == theirs.exit_code(30s));
    CHECK(ours.out() == theirs.out());
    CHECK(seqs(read_file(a / "jl")) == "Seq 1 2 3 ");
    CHECK(seqs(read_file(a / "jl")) == seqs(read_file(b / "jl")));
  }
  // --retries N: N attempts in all; only the last one's output.
  auto retries = sorted({"--retries", "3", "echo try >> n{}; echo out{}; "
                                           "exit 1",
                         ":::", "a", "b"});
  retries.files = {"na", "nb"};
  check_same(retries);
  auto recover = sorted({"--retries", "3",
                         "echo x >> n; [ $(wc -l < n) -ge 2 ] && echo ok"},
                        "1\n");
  recover.files = {"n"};
  check_same(recover);
  // A timed-out job: failed, Exitval -1 in the joblog.
  auto slow = sorted({"--timeout", "0.3", "--joblog", "jl", "sleep {}; echo {}",
                      ":::", "0.05", "5"});
  auto [ours, theirs] = run_both(slow);
  CHECK(ours.status == theirs.status);
  CHECK(ours.out == theirs.out);
}

TEST_CASE("GNU parallel vs poolrun: jobs - shell and environment" *
          doctest::timeout(120)) {
  // Job slots in use: as many as -j says, numbered from 1.
  for (auto jobs : {"3", "200%", "+1", "-1", "50%"}) {
    auto inv = sorted({"-j", jobs, "sleep 0.3; echo $PARALLEL_JOBSLOT #{}",
                       ":::", "1", "2", "3", "4", "5", "6"});
    auto [ours, theirs] = run_both(inv);
    auto slots = [](const std::string& out) {
      auto lines = sorted_lines(out);
      lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
      std::string text;
      for (auto& line : lines)
        text += line + "\n";
      return text;
    };
    std::string spec = jobs;
    CAPTURE(spec);
    CHECK(ours.status == theirs.status);
    CHECK(slots(ours.out) == slots(theirs.out));
  }
  check_same(ordered({"-k", "-j1", "echo $PARALLEL_SEQ $PARALLEL_JOBSLOT {}",
                      ":::", "a", "b", "c"}));
  for (auto shell : {"PARALLEL_SHELL=/bin/bash", "PARALLEL_SHELL=/bin/sh"}) {
    auto inv = ordered({"-k", "echo ${BASH_VERSION:+bash} {}", ":::", "x"});
    inv.env = {shell};
    check_same(inv);
  }
}

TEST_CASE("GNU parallel vs poolrun: --results X.json writes a JSON line per "
          "job" *
          doctest::timeout(120)) {
  // The times differ: each "Starttime" and "JobRuntime" is normalized.
  auto normalized = [](const std::string& text) {
    static const std::regex times{R"re("(Starttime|JobRuntime)": [0-9.]+)re"};
    return std::regex_replace(text, times, "\"$1\": T");
  };
  auto to_stdout = ordered({"-k", "--results", "-.json", "sh", "-c",
                            "echo \"$0\\\"\\\\\"; echo e >&2; exit $1", ":::",
                            "a", "b\tc", ":::", "0", "3"});
  auto [ours, theirs] = run_both(to_stdout);
  CHECK(ours.status == theirs.status);
  CHECK(normalized(ours.out) == normalized(theirs.out));
  CHECK(ours.out.find("\"V\": [ \"b\\u0009c\",\"3\" ]") != std::string::npos);
  auto to_file = ordered({"-k", "--results", "x.json", "seq", ":::", "2",
                          "3", ":::", "4"});
  to_file.files = {"x.json"};
  auto [a, b] = run_both(to_file);
  CHECK(a.status == b.status);
  CHECK(a.out.empty());
  CHECK(normalized(a.files["x.json"]) == normalized(b.files["x.json"]));
}

TEST_CASE("GNU parallel vs poolrun: GNU parallel's other spellings of "
          "options" *
          doctest::timeout(120)) {
  check_same(ordered({"--keeporder", "--maxprocs", "2", "--col-sep", ",",
                      "--tag-string", "x", "echo", "{2}", ":::", "a,b",
                      "c,d"}));
  check_same(ordered({"--keeporder", "--maxargs", "2", "--dr", "echo", ":::",
                      "1", "2", "3"}));
  auto part = ordered({"-k", "--linebuffered", "--blocksize", "4",
                       "--pipe-part", "--argfile", "f", "cat"});
  part.given = {{"f", "1\n2\n3\n4\n5\n"}};
  check_same(part);
  check_same(ordered({"-k", "--skipfirstline", "--regex", "--pipe",
                      "--recend", "[,;]", "--block", "1", "cat"},
                     "skip\na,b;c"));
  // GNU parallel's other spellings of options poolrun leaves out get the
  // same advice.
  for (auto* option : {"--sql-master", "--tmux-pane", "--ssh-delay"}) {
    CAPTURE(option);
    child_process run{poolrun_argv({option, "1", "echo", ":::", "a"}), "",
                      ""};
    CHECK(run.exit_code(30s) == 255);
    CHECK(run.err().find("is not supported by poolrun: ") !=
          std::string::npos);
  }
}

TEST_CASE("GNU parallel vs poolrun: {%} in a --results path is the job's "
          "slot" *
          doctest::timeout(60)) {
  auto inv = ordered({"--results", "rs/{%}/x", "echo", ":::", "a"});
  inv.files = {"rs/1/x", "rs/1/x.seq"};
  auto ours = check_same(inv);
  CHECK(ours.files["rs/1/x"] == "a\n");
}
