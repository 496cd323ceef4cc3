// One output stream of a running command: kept in memory up to a limit,
// spooled to an unlinked temporary file beyond it, or passed on in lines.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "options.hpp"

namespace poolrun {

/// Collects what a command writes to one stream. Used by one thread.
class stream_capture {
public:
  using line_sink = std::function<void(int, std::string_view)>;

  /// `stream`: 1 (standard output) or 2 (standard error), for `sink`.
  stream_capture(int stream, output_mode mode, line_sink sink);
  ~stream_capture();

  stream_capture(const stream_capture&) = delete;
  stream_capture& operator=(const stream_capture&) = delete;

  /// The first line is a remote slot's "poolrun-pgid N": take it out.
  void strip_marker(bool on) {
    marker_pending_ = on;
  }

  /// Write everything (after the marker) straight to `fd` (`-u`).
  void pass_through(int fd) {
    pass_fd_ = fd;
  }

  /// Reads once from `fd`; false at end of file or on an error.
  bool read_from(int fd);

  /// Reads what `fd` has without waiting (it is made non-blocking).
  void read_rest(int fd);

  /// The command ended with its output in the file `fd` (whose owner this
  /// becomes), instead of `read_from`: kept in memory within the limits,
  /// else as the spool file.
  void take_file(int fd);

  /// The command ended: passes on a last unterminated line.
  void finish();

  uint64_t total() const noexcept {
    return total_;
  }

  long marker_pgid() const noexcept {
    return marker_pgid_;
  }

  /// The part kept in memory; `counted` receives the bytes of it that stay
  /// counted in the output budget until the result holding them is gone
  /// (`held_output`).
  std::string take_memory(size_t& counted);

  /// The spool file (positioned anywhere), or -1; the caller owns it.
  int take_spool();

private:
  void add(const char* data, size_t size);
  void keep(const char* data, size_t size);

  int stream_;
  output_mode mode_;
  line_sink sink_;
  int pass_fd_ = -1;
  bool marker_pending_ = false;
  std::string marker_;
  long marker_pgid_ = 0;
  std::string memory_;
  /// Budget bytes taken for `memory_`.
  size_t counted_ = 0;
  int spool_fd_ = -1;
  /// --line-buffer: the unterminated rest.
  std::string partial_;
  uint64_t total_ = 0;
};

/// Takes `n` bytes from the output budget if they fit; false otherwise.
bool take_budget(size_t n);

/// Gives `n` bytes back to the output budget.
void give_budget(size_t n);

/// An unlinked temporary file for spooled output, or -1 (errno set).
int open_spool_file();

} // namespace poolrun
