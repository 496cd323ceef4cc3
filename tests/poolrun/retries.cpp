// --retries: failing commands run again with backoff, counted once.
#include "child_process.hpp"

using namespace poolrun::test;

namespace {

/// A command that fails until its `n`-th run, counting runs in `file`.
std::string succeeds_on_run(int n, const std::string& file) {
  return "n=$(cat " + file +
         " 2>/dev/null || echo 0); n=$((n + 1)); echo $n > " + file +
         "; echo " + file + " attempt $n; [ $n -ge " + std::to_string(n) +
         " ]\n";
}

} // namespace

TEST_CASE("retries 2 at 2 workers: a command failing twice then succeeding "
          "exits 0 and prints only its last attempt" *
          doctest::timeout(60)) {
  temp_dir tmp;
  auto input = succeeds_on_run(3, "counter") + "echo steady\n";
  auto started = std::chrono::steady_clock::now();
  child_process run{
      poolrun_argv({"-j", "2", "--retries", "2", "--retry-delay", "200ms"}),
      input, tmp.path};
  CHECK(run.exit_code(30s) == 0);
  auto elapsed = std::chrono::steady_clock::now() - started;
  CHECK(read_file(tmp / "counter") == "3\n");
  auto out = lines_of(run.out());
  std::sort(out.begin(), out.end());
  CHECK(out == std::vector<std::string>{"counter attempt 3", "steady"});
  // Backoff: 200 ms before the second attempt, 400 ms before the third.
  CHECK(elapsed >= 600ms);
}

TEST_CASE("without retries at 2 workers the same command fails and counts" *
          doctest::timeout(60)) {
  temp_dir tmp;
  child_process run{poolrun_argv({"-j", "2"}), succeeds_on_run(3, "counter"),
                    tmp.path};
  CHECK(run.exit_code(30s) == 1);
  CHECK(read_file(tmp / "counter") == "1\n");
}

TEST_CASE("retries 2 at 2 workers: a command that always fails runs three "
          "times and counts once in the exit status" *
          doctest::timeout(60)) {
  temp_dir tmp;
  auto input =
      std::string{"echo run >> always; echo always failing; exit 7\n"} +
      succeeds_on_run(2, "counter") + "echo fine\n";
  child_process run{poolrun_argv({"-j", "2", "--retries", "2", "--retry-delay",
                                  "10ms", "--summary"}),
                    input, tmp.path};
  CHECK(run.exit_code(30s) == 1);
  CHECK(read_file(tmp / "always") == "run\nrun\nrun\n");
  auto out = lines_of(run.out());
  std::sort(out.begin(), out.end());
  CHECK(out == std::vector<std::string>{"always failing", "counter attempt 2",
                                        "fine"});
  // The summary counts commands, and the failed attempts retried.
  CHECK(run.err().find("2 succeeded, 1 failed") != std::string::npos);
  CHECK(run.err().find("3 retried") != std::string::npos);
}
