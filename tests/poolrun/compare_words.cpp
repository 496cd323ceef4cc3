// GNU parallel vs poolrun installed as `parallel`: the messages GNU
// parallel's own test suite compares word for word, -J profiles, --wd,
// and {%} when several commands start at once.
#include "compare.hpp"

#include <algorithm>
#include <filesystem>

using namespace poolrun::test;

namespace {

/// Both tools' whole output, standard error included.
struct both {
  outcome ours;
  outcome theirs;
};

/// Runs `args` through GNU parallel and through poolrun under the name
/// `parallel` (a link, the drop-in way), each in a fresh directory, with
/// `env`; files `given` are made in both directories first.
both run_as_parallel(const std::vector<std::string>& args,
                     const std::string& input = "",
                     std::vector<std::string> env = {},
                     std::vector<std::pair<std::string, std::string>> given = {}) {
  temp_dir bin;
  std::filesystem::create_symlink(POOLRUN_BINARY, bin / "parallel");
  temp_dir ours_dir;
  temp_dir theirs_dir;
  for (auto& [name, content] : given) {
    write_file(ours_dir / name, content);
    write_file(theirs_dir / name, content);
  }
  auto ours_argv = args;
  ours_argv.insert(ours_argv.begin(), bin / "parallel");
  child_process ours{ours_argv, input, ours_dir.path, env};
  child_process theirs{parallel_argv(args), input, theirs_dir.path, env};
  both result;
  result.ours.status = ours.exit_code(60s);
  result.theirs.status = theirs.exit_code(60s);
  result.ours.out = ours.out();
  result.theirs.out = theirs.out();
  result.ours.err = ours.err();
  result.theirs.err = theirs.err();
  return result;
}

/// Runs both and checks that output, standard error and status agree.
outcome check_words(const std::vector<std::string>& args,
                    const std::string& input = "",
                    std::vector<std::string> env = {},
                    std::vector<std::pair<std::string, std::string>> given = {}) {
  std::string shown;
  for (auto& arg : args)
    shown += " " + arg;
  CAPTURE(shown);
  auto [ours, theirs] = run_as_parallel(args, input, std::move(env),
                                        std::move(given));
  CHECK(ours.status == theirs.status);
  CHECK(ours.out == theirs.out);
  CHECK(ours.err == theirs.err);
  return ours;
}

} // namespace

TEST_CASE("GNU parallel vs poolrun as parallel: --halt syntax errors in "
          "GNU parallel's words" *
          doctest::timeout(120)) {
  for (auto value : {"error", "soon", "now", "now,fail", "soon,fail=x",
                     "now,done=50%", "never", "5%"}) {
    auto ours = check_words({"--halt", value, "echo", ":::", "x"});
    CAPTURE(value);
    if (std::string{value} == "error")
      CHECK(ours.err == "parallel: Error: --halt must have 'never', 'soon', "
                        "or 'now'.\n");
  }
}

TEST_CASE("GNU parallel vs poolrun as parallel: the --timeout warning" *
          doctest::timeout(120)) {
  auto ours = check_words({"--timeout", "1", "sleep", ":::", "5"});
  CHECK(ours.status == 1);
  CHECK(ours.err.find("timed out") != std::string::npos);
  // Two deadlines at once: both warned as GNU parallel words them. Their
  // order is the order the two commands started, which each tool's
  // scheduling decides (it swapped under load, in either tool).
  auto [ours2, theirs2] =
      run_as_parallel({"--timeout", "1", "-j2", "sleep", ":::", "5", "6"});
  CHECK(ours2.status == theirs2.status);
  CHECK(ours2.out == theirs2.out);
  // (Each warning is two lines: the notice, then the command.)
  auto warnings = [](const std::string& err) {
    auto lines = lines_of(err);
    std::vector<std::string> result;
    for (size_t i = 0; i + 1 < lines.size(); i += 2)
      result.push_back(lines[i] + "\n" + lines[i + 1]);
    if (lines.size() % 2 != 0)
      result.push_back(lines.back());
    std::sort(result.begin(), result.end());
    return result;
  };
  CHECK(warnings(ours2.err) == warnings(theirs2.err));
  CHECK(lines_of(ours2.err).size() == 4);
  // A command of two lines: only the first is prefixed.
  check_words({"--timeout", "1", "sleep 5\necho x", ":::", "a"});
}

TEST_CASE("GNU parallel vs poolrun as parallel: a record longer than "
          "--block grows the block as GNU parallel's does" *
          doctest::timeout(120)) {
  std::string ten;
  for (int i = 1; i <= 10; ++i)
    ten += std::to_string(i) + "\n";
  auto ours = check_words({"-k", "--pipe", "--recend", "\\n", "--recstart",
                           "6", "--block", "1", "echo a; cat"},
                          ten);
  CHECK(ours.err.find("Increasing to --blocksize 12.") != std::string::npos);
  check_words({"-k", "--pipe", "--block", "3", "wc", "-c"},
              "abcdefghijkl\nx\nyz\n");
  check_words({"-k", "--pipe", "--block", "5", "wc", "-c"},
              std::string(40, 'q'));
}

TEST_CASE("GNU parallel vs poolrun as parallel: -J profiles" *
          doctest::timeout(120)) {
  temp_dir home;
  std::filesystem::create_directories(home / ".parallel");
  write_file(home / ".parallel/tagged", "# a comment\n--tagstring 'fo o'\n");
  write_file(home / ".parallel/keep", "-k -j2\n");
  std::vector<std::string> env{"HOME=" + home.path};
  check_words({"-k", "-J", "tagged", "echo", ":::", "a", "b"}, "", env);
  check_words({"-J", "tagged", "-J", "keep", "echo", ":::", "a", "b", "c"},
              "", env);
  // The command line's own option wins over the profile's.
  check_words({"-k", "--tagstring", "x", "-J", "tagged", "echo", ":::", "a"},
              "", env);
  check_words({"--profile", "keep", "echo", ":::", "1", "2", "3"}, "", env);
  // After the command -J is the command's.
  check_words({"-k", "echo", "-J", "tagged", ":::", "a"}, "", env);
  // ./NAME: a file in the current folder.
  check_words({"-J", "./local", "echo", ":::", "a"}, "", env,
              {{"local", "--tag\n"}});
}

TEST_CASE("poolrun: -J with a profile found nowhere is refused" *
          doctest::timeout(60)) {
  temp_dir home;
  child_process run{poolrun_argv({"-J", "nosuch", "echo", ":::", "a"}), "", "",
                    {"HOME=" + home.path}};
  CHECK(run.exit_code(30s) == 255);
  CHECK(run.out().empty());
  CHECK(run.err().find("-J nosuch: no readable profile") != std::string::npos);
}

TEST_CASE("GNU parallel vs poolrun as parallel: --wd" *
          doctest::timeout(120)) {
  temp_dir home;
  std::vector<std::string> env{"HOME=" + home.path};
  // A folder made if need be, the command run in it, $OLDPWD where the
  // run started.
  auto inv = ordered({"-k", "--wd", "sub/dir",
                      "echo {} > f{}; basename $PWD; test $OLDPWD = $(cd "
                      "../.. && pwd) && echo old",
                      ":::", "a", "b"});
  inv.files = {"sub/"};
  inv.env = env;
  check_same(inv);
  // "...": a folder of its own under ~/.parallel/tmp, gone after; the
  // command's status kept.
  check_words({"-k", "--wd", "...",
               "basename $(dirname $PWD); pwd >> $HOME/where; test {} = 0",
               ":::", "0", "3"},
              "", env);
  for (auto& dir : lines_of(read_file(home / "where")))
    CHECK(!std::filesystem::exists(dir));
  check_words({"--wd", ".", "pwd > here; echo", ":::", "x"}, "", env);
}

TEST_CASE("poolrun: --wd mistakes named" * doctest::timeout(60)) {
  child_process braces{poolrun_argv({"--wd", "{}", "pwd", ":::", "a"})};
  CHECK(braces.exit_code(30s) == 255);
  CHECK(braces.err().find("replacement strings in --wd") != std::string::npos);
  child_process blocked{poolrun_argv({"--wd", "/proc/none", "pwd", ":::", "a"})};
  CHECK(blocked.exit_code(30s) == 255);
  CHECK(blocked.err().find("--wd: cannot make the folder '/proc/none'") !=
        std::string::npos);
}

TEST_CASE("GNU parallel vs poolrun: {%} goes by start order when several "
          "commands start at once" *
          doctest::timeout(120)) {
  for (int i = 0; i < 2; ++i) {
    check_same(ordered({"-k", "-j10", "sleep 1; echo {%}", ":::", "1", "2",
                        "3", "4", "5", "6", "7", "8", "9", "10"}));
    check_same(ordered({"-k", "-j4", "--tagstring", "{%}", "sleep 0.{}; echo",
                        ":::", "1", "2", "3", "4", "5", "6"}));
  }
  // --tee: every command at once, each its own slot in input order.
  check_same(ordered({"-k", "--tee", "--pipe", "--tag",
                      "sleep 1; echo {%}; wc -l",
                      ":::", "1", "2", "3", ":::", "a", "b"},
                     "x\ny\n"));
}

TEST_CASE("GNU parallel vs poolrun: --compress-program is accepted" *
          doctest::timeout(120)) {
  check_same(ordered({"--compress", "--compress-program", "gzip", "-k", "seq",
                      "{}", "2000", ":::", "1", "2", "3"}));
  check_same(ordered({"--compress-program", "zstd", "--decompress-program",
                      "zstd -dc", "-k", "echo", ":::", "a"}));
}

TEST_CASE("GNU parallel vs poolrun as parallel: env_parallel's parset "
          "(--_parset)" *
          doctest::timeout(120)) {
  REQUIRE(std::system("command -v env_parallel.bash >/dev/null") == 0);
  // The same script with `parallel` GNU parallel, then poolrun (first in
  // $PATH under that name).
  std::string script =
      ". \"$(command -v env_parallel.bash)\"\n"
      "parset a,b,c echo ::: x 'y  z' \"it's\"; echo \"$a|$b|$c\"\n"
      "parset arr seq ::: 2 3; echo \"${arr[1]}\"; echo ${#arr[@]}\n"
      "parset 'm[3] m[1]' echo ::: p q; echo \"${m[*]}\"\n"
      "declare -A h; parset h echo ::: k1 k2; echo \"${h[k2]}\"\n"
      "parset v -v seq ::: 2; echo \"$v\"\n"
      "parset e,f false ::: 1 2; echo \"status $? [$e]\"\n";
  temp_dir bin;
  std::filesystem::create_symlink(POOLRUN_BINARY, bin / "parallel");
  auto path = std::string{std::getenv("PATH")};
  child_process theirs{{"bash", "-c", script}};
  child_process ours{{"bash", "-c", script}, "", "",
                     {"PATH=" + bin.path + ":" + path}};
  CHECK(ours.exit_code(60s) == theirs.exit_code(60s));
  CHECK(ours.out() == theirs.out());
  CHECK(ours.out().find("x|y  z|it's\n") != std::string::npos);
  CHECK(ours.err() == theirs.err());
}

TEST_CASE("poolrun: --_parset mistakes named" * doctest::timeout(60)) {
  child_process bad{poolrun_argv({"--_parset", "var,1x", "echo", ":::", "a"})};
  CHECK(bad.exit_code(30s) == 255);
  CHECK(bad.err().find("'1x' is no variable name") != std::string::npos);
  child_process kind{poolrun_argv({"--_parset", "list,a", "echo", ":::", "a"})};
  CHECK(kind.exit_code(30s) == 255);
  CHECK(kind.err().find("expected var,NAME") != std::string::npos);
}

TEST_CASE("GNU parallel vs poolrun as parallel: a NUL byte in the input "
          "becomes \\0" *
          doctest::timeout(120)) {
  auto ours = check_words({"-k", "echo"}, std::string{"foo\0bar\nbaz\n", 12});
  CHECK(ours.out == "foo\\0bar\nbaz\n");
  check_words({"-k", "echo", "{1}-{2}", "::::", "-", ":::", "x"},
              std::string{"a\0b\0c\n", 6});
}

TEST_CASE("GNU parallel vs poolrun: --retries with a replacement string" *
          doctest::timeout(120)) {
  auto inv = sorted({"--retries", "{//}", "echo try >> n{/}; exit {/}", ":::",
                     "1/11", "2/22", "3/33"});
  inv.files = {"n11", "n22", "n33"};
  auto ours = check_same(inv);
  CHECK(ours.files["n33"] == "try\ntry\ntry\n");
  check_same(sorted({"--retries", "{}", "echo {}; test {} = 2", ":::", "1",
                     "2"}));
}

TEST_CASE("poolrun: --retries with a replacement string that is no count" *
          doctest::timeout(60)) {
  child_process run{poolrun_argv({"--retries", "{}", "echo", ":::", "x", "2"})};
  CHECK(run.exit_code(30s) == 255);
  CHECK(run.out() == "2\n");
  CHECK(run.err().find("--retries {} is 'x' for job 1: expected a whole "
                       "number") != std::string::npos);
}

TEST_CASE("GNU parallel vs poolrun: --pipe --group-by a column number" *
          doctest::timeout(120)) {
  std::string commas = "a\t,b\na,,b\nb,,a\nb,a,b\n";
  check_same(ordered({"--pipe", "--group-by", "2", "--colsep", ",", "-kN1",
                      "wc"},
                     commas));
  std::string spaces = "a\t b\na  b\nb  a\nb a b\n";
  check_same(ordered({"--pipe", "--group-by", "2", "--colsep", " ", "-kN1",
                      "wc"},
                     spaces));
  std::string tabs = "k1\t1\nk1\t2\nk2\t3\nk3\t4\nk3\t5\nk3\t6\nk4\t7\n";
  check_same(ordered({"--pipe", "--groupby", "1", "-k", "-N2", "wc", "-l"},
                     tabs));
  check_same(ordered({"--pipe", "--group-by", "1", "-k", "wc", "-l"}, tabs));
}

TEST_CASE("poolrun: --group-by mistakes named" * doctest::timeout(60)) {
  for (auto args : std::vector<std::vector<std::string>>{
           {"--pipe", "--group-by", "name", "wc"},
           {"--group-by", "1", "echo", ":::", "a"}}) {
    child_process run{poolrun_argv(args), "a\n"};
    CHECK(run.exit_code(30s) == 255);
    CHECK(run.err().find("poolrun groups --pipe input by a column number") !=
          std::string::npos);
  }
}

TEST_CASE("GNU parallel vs poolrun as parallel: --semaphore, --fg and "
          "--wait" *
          doctest::timeout(120)) {
  // Two slots: the third command starts when the first ends; --wait
  // waits for all three. The same script with GNU parallel, then poolrun.
  std::string script =
      "s() { parallel --semaphore --id t -u -j2 \"$@\"; }\n"
      "s 'echo a1; sleep 1.5; echo a3'; sleep 0.4\n"
      "s 'echo b2; sleep 1.5; echo b5'; sleep 0.4\n"
      "s 'echo c4; sleep 1.5; echo c6'\n"
      "parallel --semaphore --id t --wait; echo done\n"
      "parallel --semaphore --id t --fg 'echo fg; exit 3'; echo status $?\n";
  temp_dir bin;
  temp_dir home;
  std::filesystem::create_symlink(POOLRUN_BINARY, bin / "parallel");
  auto path = std::string{std::getenv("PATH")};
  child_process theirs{{"bash", "-c", script}, "", "", {"HOME=" + home.path}};
  CHECK(theirs.exit_code(60s) == 0);
  child_process ours{{"bash", "-c", script}, "", "",
                     {"HOME=" + home.path, "PATH=" + bin.path + ":" + path}};
  CHECK(ours.exit_code(60s) == 0);
  CHECK(ours.out() == theirs.out());
  CHECK(ours.out() == "a1\nb2\na3\nc4\nb5\nc6\ndone\nfg\nstatus 3\n");
}

TEST_CASE("poolrun: --semaphore mistakes named" * doctest::timeout(60)) {
  child_process args{poolrun_argv({"--semaphore", "echo", ":::", "a"})};
  CHECK(args.exit_code(30s) == 255);
  CHECK(args.err().find("--semaphore runs one command") != std::string::npos);
  child_process wait{poolrun_argv({"--wait", "echo", ":::", "a"})};
  CHECK(wait.exit_code(30s) == 255);
  CHECK(wait.err().find("--fg and --wait go with --semaphore") !=
        std::string::npos);
}

TEST_CASE("GNU parallel vs poolrun: --results folders named by --header "
          "go by the names' numbers first" *
          doctest::timeout(120)) {
  auto inv = sorted({"--header", ":", "--results", "res", "echo", ":::", "Col",
                     "v", ":::", "10", "w", ":::", "9", "z", ":::", "b", "u"});
  inv.files = {"res/"};
  check_same(inv);
}

TEST_CASE("GNU parallel vs poolrun: --results with --compress" *
          doctest::timeout(120)) {
  // The same compressor (the first of GNU parallel's list here), so the
  // same bytes; "1" is not in a file as it is.
  auto inv = sorted({"--results", "res", "--compress", "echo {}; echo e{} >&2",
                     ":::", "1", "  ", "/"});
  inv.files = {"res/"};
  auto ours = check_same(inv);
  CHECK(ours.files["res/"].find("stdout: 1\n") == std::string::npos);
  auto gz = sorted({"--results", "res", "--compress-program", "cat", "echo",
                    ":::", "x"});
  gz.files = {"res/"};
  CHECK(check_same(gz).files["res/"].find("stdout: x\n") != std::string::npos);
}
