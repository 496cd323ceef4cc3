// The logging hooks of pool::core. This test links pool::core alone (no
// pool::spdlog): the default hook writes to stderr itself.
#include "pool/log.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "pool/options.hpp"

namespace {

/// What `fn` writes to stderr (file descriptor 2), through a scratch file.
template <class F>
std::string stderr_of(F fn) {
  char path[] = "/tmp/pool_log_test_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  std::fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  fn();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  std::ifstream in{path};
  std::stringstream text;
  text << in.rdbuf();
  unlink(path);
  return text.str();
}

} // namespace

TEST_CASE("without pool::spdlog the default hook writes whole lines to "
          "stderr in spdlog's layout" *
          doctest::timeout(30)) {
  auto out = stderr_of([] {
    pool::pool_options{}.log()(pool::log_level::warning, "orders",
                               "overloaded: 401 operations waiting");
  });
  std::regex line{R"(\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] \[pool\] )"
                  R"(\[warning\] \[orders\] overloaded: 401 operations )"
                  R"(waiting\n)"};
  CHECK_MESSAGE(std::regex_match(out, line), out);
}

TEST_CASE("stderr_log_hook: lines from many threads never interleave" *
          doctest::timeout(30)) {
  auto out = stderr_of([] {
    auto hook = pool::stderr_log_hook();
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&hook, t] {
        for (int i = 0; i < 200; ++i)
          hook(pool::log_level::info, "p" + std::to_string(t),
               std::string(100, static_cast<char>('a' + t)));
      });
    for (auto& th : threads)
      th.join();
  });
  std::istringstream lines{out};
  std::string text;
  int count = 0;
  std::regex whole{R"(\[[^\]]+\] \[pool\] \[info\] \[p(\d)\] ([a-d]{100}))"};
  while (std::getline(lines, text)) {
    std::smatch m;
    REQUIRE_MESSAGE(std::regex_match(text, m, whole), text);
    CHECK(m[2].str() == std::string(100, static_cast<char>('a' + std::stoi(m[1]))));
    ++count;
  }
  CHECK(count == 800);
}

TEST_CASE("silent_log_hook writes nothing" * doctest::timeout(10)) {
  auto out = stderr_of([] {
    pool::silent_log_hook()(pool::log_level::error, "orders", "lost");
  });
  CHECK(out.empty());
}
