#pragma once

// Runs the same invocation through GNU parallel and poolrun and compares
// output (sorted, or in order with -k), exit status and files.
#include "child_process.hpp"

#include <map>

namespace poolrun::test {

/// One invocation, run through both tools in fresh directories.
struct invocation {
  std::vector<std::string> args;
  std::string input;
  /// Output in order (-k, -j1) rather than compared sorted.
  bool ordered = false;
  /// Files (relative) whose contents must match; a trailing '/' lists a
  /// directory tree with contents.
  std::vector<std::string> files;
  /// Also the commands' standard error (minus the tools' own lines).
  bool compare_stderr = false;
  std::vector<std::string> env;
  /// Files to create first: name, content.
  std::vector<std::pair<std::string, std::string>> given;
};

/// Lines of `text` that the tool did not write itself.
inline std::string without_own_lines(const std::string& text) {
  std::string out;
  for (auto& line : lines_of(text))
    if (line.rfind("poolrun: ", 0) != 0 && line.rfind("parallel: ", 0) != 0)
      out += line + "\n";
  return out;
}

/// A directory tree as "path: content" lines, sorted.
inline std::string tree_of(const std::string& root) {
  child_process find{{"find", root, "-type", "f"}, "", ""};
  REQUIRE(find.exit_code(10s) == 0);
  std::string out;
  for (auto& path : sorted_lines(find.out()))
    out += path.substr(root.size()) + ": " + read_file(path) + "\n";
  return out;
}

inline std::string content_of(const std::string& dir, const std::string& name) {
  if (!name.empty() && name.back() == '/')
    return tree_of(dir + "/" + name);
  return read_file(dir + "/" + name);
}

struct outcome {
  int status = -1;
  /// From the start of both tools to this one's end.
  std::chrono::milliseconds took{0};
  std::string out;
  std::string err;
  std::map<std::string, std::string> files;
};

/// Runs `inv` through poolrun and GNU parallel at once.
inline std::pair<outcome, outcome> run_both(const invocation& inv) {
  temp_dir ours_dir;
  temp_dir theirs_dir;
  for (auto& [name, content] : inv.given) {
    write_file(ours_dir / name, content);
    write_file(theirs_dir / name, content);
  }
  child_process ours{poolrun_argv(inv.args), inv.input, ours_dir.path,
                     inv.env};
  child_process theirs{parallel_argv(inv.args), inv.input, theirs_dir.path,
                       inv.env};
  outcome a;
  outcome b;
  auto started = std::chrono::steady_clock::now();
  auto since = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started);
  };
  a.status = ours.exit_code(60s);
  a.took = since();
  b.status = theirs.exit_code(60s);
  b.took = since();
  a.out = ours.out();
  b.out = theirs.out();
  a.err = without_own_lines(ours.err());
  b.err = without_own_lines(theirs.err());
  for (auto& f : inv.files) {
    a.files[f] = content_of(ours_dir.path, f);
    b.files[f] = content_of(theirs_dir.path, f);
  }
  return {a, b};
}

/// Runs `inv` through both and checks that they agree; returns poolrun's
/// outcome.
inline outcome check_same(const invocation& inv) {
  std::string shown;
  for (auto& arg : inv.args)
    shown += " " + arg;
  CAPTURE(shown);
  auto [ours, theirs] = run_both(inv);
  CHECK(ours.status == theirs.status);
  if (inv.ordered) {
    CHECK(ours.out == theirs.out);
  } else {
    CHECK(sorted_text(ours.out) == sorted_text(theirs.out));
  }
  if (inv.compare_stderr)
    CHECK(sorted_text(ours.err) == sorted_text(theirs.err));
  for (auto& f : inv.files) {
    CAPTURE(f);
    CHECK(ours.files[f] == theirs.files[f]);
  }
  return ours;
}

inline invocation ordered(std::vector<std::string> args, std::string input = "") {
  invocation inv;
  inv.args = std::move(args);
  inv.input = std::move(input);
  inv.ordered = true;
  return inv;
}

inline invocation sorted(std::vector<std::string> args, std::string input = "") {
  auto inv = ordered(std::move(args), std::move(input));
  inv.ordered = false;
  return inv;
}

} // namespace poolrun::test
