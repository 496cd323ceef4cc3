// Delimited records from a file descriptor, 64 KiB at a time.
#include "record_reader.hpp"

#include <cerrno>
#include <cstring>
#include <memory>

#include <fcntl.h>
#include <unistd.h>

namespace poolrun {

namespace {

constexpr size_t chunk = 65536;

} // namespace

record_reader::record_reader(int fd, bool owns, std::string delimiter,
                             std::string name)
    : fd_(fd), owns_(owns), delimiter_(delimiter.empty() ? '\n' : delimiter[0]),
      long_delimiter_(delimiter.size() > 1 ? delimiter : std::string{}),
      name_(std::move(name)) {
  // Nothing else.
}

record_reader::~record_reader() {
  if (owns_ && fd_ >= 0)
    ::close(fd_);
}

std::unique_ptr<record_reader>
record_reader::open(const std::string& path, const std::string& delimiter,
                    std::string& error) {
  if (path == "-")
    return std::make_unique<record_reader>(STDIN_FILENO, false, delimiter,
                                           "standard input");
  auto fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot read input file '" + path + "': " + std::strerror(errno);
    return nullptr;
  }
  return std::make_unique<record_reader>(fd, true, delimiter,
                                         "'" + path + "'");
}

bool record_reader::fill() {
  if (eof_)
    return false;
  if (pos_ > 0) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
  if (before_blocking_)
    before_blocking_();
  auto old = buffer_.size();
  buffer_.resize(old + chunk);
  for (;;) {
    auto n = ::read(fd_, buffer_.data() + old, chunk);
    if (n > 0) {
      buffer_.resize(old + static_cast<size_t>(n));
      return true;
    }
    if (n < 0 && errno == EINTR)
      continue;
    buffer_.resize(old);
    eof_ = true;
    if (n < 0)
      error_ = "cannot read " + name_ + ": " + std::strerror(errno);
    return false;
  }
}

bool record_reader::next(std::string& out, bool& had_nul) {
  size_t scanned = pos_;
  size_t width = long_delimiter_.empty() ? 1 : long_delimiter_.size();
  for (;;) {
    auto begin = buffer_.data() + scanned;
    auto end = buffer_.data() + buffer_.size();
    const char* hit = nullptr;
    if (width == 1) {
      hit = static_cast<const char*>(
          std::memchr(begin, delimiter_, static_cast<size_t>(end - begin)));
    } else if (auto at = buffer_.find(long_delimiter_, scanned);
               at != std::string::npos) {
      hit = buffer_.data() + at;
    }
    if (hit != nullptr) {
      auto len = static_cast<size_t>(hit - (buffer_.data() + pos_));
      out.assign(buffer_, pos_, len);
      pos_ += len + width;
      break;
    }
    auto before = buffer_.size() - pos_;
    if (!fill()) {
      if (pos_ >= buffer_.size())
        return false;
      // The last record has no delimiter.
      out.assign(buffer_, pos_, std::string::npos);
      pos_ = buffer_.size();
      break;
    }
    // fill() moved the unread part to the front; a long delimiter may
    // straddle the old end.
    scanned = pos_ + before - std::min(before, width - 1);
  }
  had_nul = delimiter_ != '\0' && out.find('\0') != std::string::npos;
  return true;
}

bool record_reader::read_raw(std::string& out, size_t size) {
  out.clear();
  while (out.size() < size) {
    if (pos_ >= buffer_.size() && !fill())
      break;
    auto take = std::min(size - out.size(), buffer_.size() - pos_);
    out.append(buffer_, pos_, take);
    pos_ += take;
  }
  return !out.empty();
}

} // namespace poolrun
