// GNU parallel's joblog: writing it, and reading it back for --resume.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "job.hpp"

namespace poolrun {

/// Appends joblog lines. Used by one thread (the runner's).
class joblog_writer {
public:
  joblog_writer() = default;
  ~joblog_writer();

  joblog_writer(const joblog_writer&) = delete;
  joblog_writer& operator=(const joblog_writer&) = delete;

  /// Opens `path` ("-": standard output); appends when `append` (and
  /// writes the header only into an empty file), else truncates. Returns
  /// what went wrong, or "".
  std::string open(const std::string& path, bool append);

  bool is_open() const noexcept {
    return file_ != nullptr;
  }

  /// One line for job `seq`.
  void write(uint64_t seq, const job_result& res);

private:
  std::FILE* file_ = nullptr;
  bool is_stdout_ = false;
};

/// What a joblog says about each job, by Seq: `unknown`, `succeeded`, or
/// `failed` (the last line for a Seq wins, as a --resume-failed run adds
/// lines).
class joblog_record {
public:
  enum state : uint8_t { unknown = 0, succeeded = 1, failed = 2 };

  /// Reads `path`; a missing file is an empty record. Returns what went
  /// wrong (an unreadable file, a line that is not a joblog's), or "".
  std::string read(const std::string& path);

  state of(uint64_t seq) const {
    return seq < states_.size() ? static_cast<state>(states_[seq]) : unknown;
  }

  /// Whether `read` found the file.
  bool found() const noexcept {
    return found_;
  }

  /// The commands by Seq (index 0 unused; "" where none), newlines back.
  const std::vector<std::string>& commands() const noexcept {
    return commands_;
  }

private:
  std::vector<uint8_t> states_;
  std::vector<std::string> commands_;
  bool found_ = false;
};

} // namespace poolrun
