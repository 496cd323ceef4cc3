#include "keys.hpp"

#include <poll.h>
#include <unistd.h>

namespace pooltop {

raw_keys::raw_keys(int fd) : fd_(fd) {
  if (::isatty(fd_) == 0 || ::tcgetattr(fd_, &saved_) != 0)
    return;
  auto raw = saved_;
  raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));
  raw.c_cc[VMIN] = 0;
  raw.c_cc[VTIME] = 0;
  active_ = ::tcsetattr(fd_, TCSANOW, &raw) == 0;
}

raw_keys::~raw_keys() {
  if (active_)
    ::tcsetattr(fd_, TCSANOW, &saved_);
}

bool quit_key(int fd, int timeout_ms, bool end_quits) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0)
    return false;
  if ((p.revents & (POLLIN | POLLHUP)) == 0)
    return false;
  char buf[64];
  auto n = ::read(fd, buf, sizeof buf);
  if (n == 0)
    return end_quits;
  for (ssize_t i = 0; i < n; ++i)
    if (buf[i] == 'q' || buf[i] == 'Q')
      return true;
  return false;
}

} // namespace pooltop
