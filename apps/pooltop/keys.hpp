#pragma once

// pooltop's keyboard: `q` quits. On a terminal the keys come one at a time
// (no Enter, no echo) while pooltop runs; the terminal is restored when
// pooltop ends.

#include <termios.h>

namespace pooltop {

/// Puts the terminal on `fd` into single-key mode for the object's
/// lifetime; does nothing if `fd` is not a terminal.
class raw_keys {
public:
  explicit raw_keys(int fd);
  ~raw_keys();
  raw_keys(const raw_keys&) = delete;
  raw_keys& operator=(const raw_keys&) = delete;

private:
  int fd_;
  bool active_ = false;
  termios saved_{};
};

/// Waits up to `timeout_ms` for input on `fd` and reads what is there:
/// true when it holds `q` or `Q` (quit), or `fd` reached its end with
/// `end_quits`.
bool quit_key(int fd, int timeout_ms, bool end_quits = false);

} // namespace pooltop
