// The test runner of every unit: doctest's own, plus one check. CTest runs
// each case as `--test-case=<name>`; a name CTest cuts short (it splits at
// `;`) matches no case, and doctest would pass having run nothing. Here a
// `--test-case` filter that selects no case fails, naming the filter.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string_view>

namespace {

int selected = -1;

/// Records how many cases passed the filters; reports nothing else.
struct selection_listener : doctest::IReporter {
  explicit selection_listener(const doctest::ContextOptions&) {
    // nop
  }
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    selected = static_cast<int>(stats.numTestCasesPassingFilters);
  }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

REGISTER_LISTENER("selection", 1, selection_listener);

} // namespace

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  auto result = context.run();
  if (context.shouldExit())
    return result;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg{argv[i]};
    if (arg.rfind("--test-case=", 0) == 0 && selected == 0) {
      std::fprintf(stderr,
                   "no test case matches %s (a case name must not contain "
                   "';', which CTest splits at)\n",
                   argv[i]);
      return 1;
    }
  }
  return result;
}
