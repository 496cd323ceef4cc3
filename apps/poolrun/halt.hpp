// --halt and the exit status, as GNU parallel decides them.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "options.hpp"

namespace poolrun {

/// Counts outcomes and decides when to halt and with which exit status.
/// Plain value; used by one thread.
class halt_policy {
public:
  enum class action { none, soon, now };

  explicit halt_policy(halt_spec spec = {}) : spec_(spec) {
    // Nothing else.
  }

  /// A job finished: `failed` (non-zero exit, signal, timeout), its exit
  /// status and signal. `total` is the number of jobs, when known (needed
  /// for percentages). Returns what to do now; `soon` or `now` once, on the
  /// job that meets the condition.
  action finished(bool failed, int exit_code, int signal, size_t total);

  /// Whether a job that `failed` (or not) is of the kind --halt counts.
  bool matches(bool failed) const noexcept {
    return spec_.on != halt_spec::when::never &&
           (spec_.cause == halt_spec::why::done ||
            failed == (spec_.cause == halt_spec::why::fail));
  }

  /// GNU parallel's words for such a job: "This job failed" (succeeded,
  /// finished).
  std::string reason(bool failed) const {
    if (spec_.cause == halt_spec::why::done)
      return "This job finished";
    return failed ? "This job failed" : "This job succeeded";
  }

  /// Whether the condition was met.
  bool halted() const noexcept {
    return halted_;
  }

  size_t failed() const noexcept {
    return failed_;
  }

  size_t finished_count() const noexcept {
    return finished_;
  }

  /// The exit status of the run: the failed jobs (at most 101), or what
  /// --halt makes of it. `started` counts the jobs that ran.
  int exit_status(size_t started) const;

private:
  halt_spec spec_;
  size_t failed_ = 0;
  size_t finished_ = 0;
  bool halted_ = false;
  std::optional<int> status_;
};

} // namespace poolrun
