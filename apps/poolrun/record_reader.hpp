// Reads delimited records (lines, NUL-ended with -0, -d) from a file
// descriptor as they arrive, in constant memory.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace poolrun {

/// Streams records from one file descriptor. Used by one thread.
class record_reader {
public:
  /// Reads from `fd` (not closed unless `owns`); `delimiter` is one or
  /// more bytes ("\n" when empty). `name` is for messages ("standard input",
  /// "'file'").
  record_reader(int fd, bool owns, std::string delimiter, std::string name);
  ~record_reader();

  record_reader(const record_reader&) = delete;
  record_reader& operator=(const record_reader&) = delete;

  /// Opens `path` ("-": standard input). On failure returns nullptr and
  /// sets `error` to a message naming the file and the cause.
  static std::unique_ptr<record_reader>
  open(const std::string& path, const std::string& delimiter,
       std::string& error);

  /// The next record into `out`, without its delimiter; false at the end
  /// (or after a read error: see `error`). `had_nul` tells whether it held
  /// a NUL byte (which no command can carry) while NUL is not the
  /// delimiter.
  bool next(std::string& out, bool& had_nul);

  /// Reads up to `size` bytes of raw input into `out` (for --pipe); false
  /// at the end.
  bool read_raw(std::string& out, size_t size);

  /// Called right before a read that may block (the buffer is empty):
  /// lets a consumer pass on what it has first.
  void before_blocking(std::function<void()> hook) {
    before_blocking_ = std::move(hook);
  }

  /// What went wrong reading, or "".
  const std::string& error() const noexcept {
    return error_;
  }

private:
  bool fill();

  int fd_;
  bool owns_;
  char delimiter_;
  /// The whole delimiter when it is longer than one byte (-d '\n\n').
  std::string long_delimiter_;
  std::string name_;
  std::string buffer_;
  size_t pos_ = 0;
  bool eof_ = false;
  std::string error_;
  std::function<void()> before_blocking_;
};

} // namespace poolrun
