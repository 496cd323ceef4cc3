// Everything poolrun writes: command outputs, the joblog, progress, summary.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "job.hpp"

namespace poolrun {

/// Figures for the progress line.
struct progress {
  size_t total = 0;
  /// Finished (including failed and skipped ones).
  size_t finished = 0;
  size_t failed = 0;
  size_t running = 0;
  std::chrono::steady_clock::duration elapsed{};
};

/// Writes outputs whole (standard output, then standard error, of one
/// command at a time), optionally in input order, plus the joblog and the
/// progress line. Used by one thread (the runner's); not thread-safe.
class report {
public:
  /// `keep_order`: print in input order; `bar`: draw a progress line on
  /// stderr (only when stderr is a terminal).
  report(bool keep_order, bool bar);

  ~report();

  report(const report&) = delete;
  report& operator=(const report&) = delete;

  /// Opens GNU parallel's joblog at `path` ("-" = standard output);
  /// appends when `append` and the file has content, else starts it with
  /// the header. Returns what went wrong, or nothing.
  std::optional<std::string> open_joblog(const std::string& path, bool append);

  /// Line `seq` (0-based) is finished; `res` is what to print, or nothing
  /// (a skipped or interrupted command). With keep-order, waits for the
  /// lines before it.
  void finished(size_t seq, std::optional<job_result> res);

  /// Prints what keep-order still holds back, in order, gaps skipped.
  void flush_held();

  /// Appends one joblog line for line `seq` (0-based), if there is a joblog.
  void joblog(size_t seq, const job_result& res);

  /// A line on stderr, prefixed "poolrun: ".
  void message(const std::string& text);

  /// Redraws the progress line (if enabled).
  void show(const progress& p);

  /// Removes the progress line for good.
  void end_progress();

private:
  void print(const job_result& res);
  void hide_bar();
  void redraw_bar();

  bool keep_order_;
  bool bar_;
  std::string bar_text_;
  bool bar_visible_ = false;
  size_t next_to_print_ = 0;
  std::map<size_t, std::optional<job_result>> held_;
  std::FILE* joblog_ = nullptr;
  bool joblog_is_stdout_ = false;
};

/// A duration for people: 850us, 12.3ms, 1.52s, 3m05s.
std::string human_duration(std::chrono::nanoseconds x);

} // namespace poolrun
