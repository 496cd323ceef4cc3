// Secrets for programs: files only their owner can read, and environment
// variables, in a fixed order; every refusal names the file and the fix.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

#include "pool/errors.hpp"
#include "pool/secret.hpp"

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// A scratch directory with files made on request; removed at scope exit.
struct scratch {
  std::string dir;

  scratch() {
    char name[] = "/tmp/pool-secret-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    dir = name;
  }

  ~scratch() {
    if (std::system(("rm -rf '" + dir + "'").c_str()) != 0)
      MESSAGE("could not remove " << dir);
  }

  std::string file(const std::string& name, const std::string& text,
                   mode_t mode) {
    auto path = dir + "/" + name;
    std::ofstream{path} << text;
    REQUIRE(::chmod(path.c_str(), mode) == 0);
    return path;
  }
};

/// Sets an environment variable for one scope (tests run one at a time,
/// before any thread of theirs starts).
struct env_var {
  std::string name;

  env_var(std::string n, const std::string& value) : name(std::move(n)) {
    ::setenv(name.c_str(), value.c_str(), 1);
  }

  ~env_var() {
    ::unsetenv(name.c_str());
  }
};

std::string refusal(const caf::expected<std::string>& x) {
  REQUIRE_FALSE(x);
  CHECK(pool::is(x.error(), pool::pool_errc::invalid_option));
  return pool::describe(x.error());
}

} // namespace

TEST_CASE("read_secret_file: one line, without its line break" *
          doctest::timeout(10)) {
  scratch s;
  auto a = pool::read_secret_file(s.file("a", "s3cret\n", 0600), "--f");
  REQUIRE(a);
  CHECK(*a == "s3cret");
  auto b = pool::read_secret_file(s.file("b", "with spaces\r\n", 0400), "--f");
  REQUIRE(b);
  CHECK(*b == "with spaces");
  auto c = pool::read_secret_file(s.file("c", "no-newline", 0600), "--f");
  REQUIRE(c);
  CHECK(*c == "no-newline");
}

TEST_CASE("read_secret_file: a file others may read is refused, with the "
          "chmod that fixes it" *
          doctest::timeout(10)) {
  scratch s;
  for (auto mode : {0644, 0640, 0604, 0620, 0660}) {
    auto path = s.file("open", "s3cret\n", static_cast<mode_t>(mode));
    auto text = refusal(pool::read_secret_file(path, "--token-file"));
    INFO(text);
    CHECK(contains(text, "--token-file: " + path));
    CHECK(contains(text, "chmod 600 " + path));
  }
}

TEST_CASE("read_secret_file: empty, several lines, too large, missing, a "
          "directory and an empty path are refused, naming what is wrong" *
          doctest::timeout(10)) {
  scratch s;
  CHECK(contains(refusal(pool::read_secret_file(s.file("e", "", 0600), "x")),
                 "is empty"));
  CHECK(contains(refusal(pool::read_secret_file(s.file("n", "\n", 0600), "x")),
                 "is empty"));
  CHECK(contains(
      refusal(pool::read_secret_file(s.file("m", "a\nb\n", 0600), "x")),
      "more than one line"));
  CHECK(contains(refusal(pool::read_secret_file(
                     s.file("l", std::string(5000, 'x'), 0600), "x")),
                 "larger than 4096 bytes"));
  CHECK(contains(refusal(pool::read_secret_file(s.dir + "/none", "x")),
                 "cannot open " + s.dir + "/none: No such file"));
  REQUIRE(::chmod(s.dir.c_str(), 0700) == 0);
  CHECK(contains(refusal(pool::read_secret_file(s.dir, "x")),
                 "is not a regular file"));
  CHECK(contains(refusal(pool::read_secret_file("", "--token-file")),
                 "--token-file: names no file"));
}

TEST_CASE("load_secret: the file first, then the variable naming a file, "
          "then the variable holding the secret, and none set is none" *
          doctest::timeout(10)) {
  scratch s;
  pool::secret_source src;
  src.file_option = "--token-file";
  src.file_variable = "POOL_TEST_SECRET_FILE";
  src.variable = "POOL_TEST_SECRET";
  auto none = pool::load_secret(src);
  REQUIRE(none);
  CHECK(none->empty());
  // A default source looks nowhere.
  auto nowhere = pool::load_secret(pool::secret_source{});
  REQUIRE(nowhere);
  CHECK(nowhere->empty());
  {
    env_var value{"POOL_TEST_SECRET", "from-env"};
    CHECK(*pool::load_secret(src) == "from-env");
    env_var file{"POOL_TEST_SECRET_FILE", s.file("v", "from-var-file\n", 0600)};
    CHECK(*pool::load_secret(src) == "from-var-file");
    src.file = s.file("o", "from-option\n", 0600);
    CHECK(*pool::load_secret(src) == "from-option");
  }
  // Refusals name where the path came from.
  src.file.clear();
  env_var open{"POOL_TEST_SECRET_FILE", s.file("w", "x\n", 0644)};
  CHECK(contains(refusal(pool::load_secret(src)), "POOL_TEST_SECRET_FILE: "));
}

TEST_CASE("load_secret: a variable set but empty is refused" *
          doctest::timeout(10)) {
  pool::secret_source src;
  src.file_variable = "POOL_TEST_SECRET_FILE";
  src.variable = "POOL_TEST_SECRET";
  {
    env_var empty{"POOL_TEST_SECRET", ""};
    CHECK(contains(refusal(pool::load_secret(src)),
                   "POOL_TEST_SECRET: is set but empty"));
  }
  env_var empty{"POOL_TEST_SECRET_FILE", ""};
  CHECK(contains(refusal(pool::load_secret(src)),
                 "POOL_TEST_SECRET_FILE: is set but empty"));
}
