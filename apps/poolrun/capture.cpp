// Output capture: memory within the budget, then an unlinked spool file.
#include "capture.hpp"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process.hpp"

namespace poolrun {

namespace {

std::atomic<size_t> budget_used{0};

constexpr std::string_view marker_prefix = "poolrun-pgid ";

} // namespace

bool take_budget(size_t n) {
  auto used = budget_used.load();
  do {
    if (used + n > output_budget)
      return false;
  } while (!budget_used.compare_exchange_weak(used, used + n));
  return true;
}

void give_budget(size_t n) {
  budget_used -= n;
}

size_t held_output_bytes() {
  return budget_used.load();
}

int open_spool_file() {
  const char* dir = std::getenv("TMPDIR");
  if (dir == nullptr || *dir == '\0')
    dir = "/tmp";
  auto fd = ::open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0)
    return fd;
  // A file system without O_TMPFILE: create, then unlink at once.
  std::string path = std::string{dir} + "/poolrun-spool-XXXXXX";
  fd = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd >= 0)
    ::unlink(path.c_str());
  return fd;
}

held_output::~held_output() {
  if (bytes > 0)
    give_budget(bytes);
  if (out_fd >= 0)
    ::close(out_fd);
  if (err_fd >= 0)
    ::close(err_fd);
}

stream_capture::stream_capture(int stream, output_mode mode, line_sink sink)
    : stream_(stream), mode_(mode), sink_(std::move(sink)) {
  // Nothing else.
}

stream_capture::~stream_capture() {
  if (counted_ > 0)
    give_budget(counted_);
  if (spool_fd_ >= 0)
    ::close(spool_fd_);
}

bool stream_capture::read_from(int fd) {
  char buf[65536];
  auto n = ::read(fd, buf, sizeof(buf));
  if (n > 0) {
    add(buf, static_cast<size_t>(n));
    return true;
  }
  return n < 0 && (errno == EINTR || errno == EAGAIN);
}

void stream_capture::read_rest(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  char buf[65536];
  for (;;) {
    auto n = ::read(fd, buf, sizeof(buf));
    if (n > 0)
      add(buf, static_cast<size_t>(n));
    else if (!(n < 0 && errno == EINTR))
      return;
  }
}

void stream_capture::add(const char* data, size_t size) {
  if (marker_pending_) {
    // "poolrun-pgid N\n" comes first, written by the remote wrapper.
    while (size > 0 && marker_pending_) {
      auto c = *data++;
      --size;
      if (c == '\n') {
        marker_pending_ = false;
        if (marker_.rfind(marker_prefix, 0) == 0)
          marker_pgid_ = std::strtol(marker_.c_str() + marker_prefix.size(),
                                     nullptr, 10);
        else // not ours after all: the command's own output
          keep((marker_ + "\n").data(), marker_.size() + 1);
        marker_.clear();
      } else {
        marker_ += c;
        if (marker_.size() > 64) { // too long to be the marker
          marker_pending_ = false;
          keep(marker_.data(), marker_.size());
          marker_.clear();
        }
      }
    }
    if (size == 0)
      return;
  }
  keep(data, size);
}

void stream_capture::keep(const char* data, size_t size) {
  total_ += size;
  if (pass_fd_ >= 0) {
    write_all(pass_fd_, std::string_view{data, size});
    return;
  }
  if (mode_ == output_mode::line_buffer) {
    partial_.append(data, size);
    auto last = partial_.rfind('\n');
    if (last == std::string::npos)
      return;
    sink_(stream_, std::string_view{partial_}.substr(0, last + 1));
    partial_.erase(0, last + 1);
    return;
  }
  if (spool_fd_ < 0 && memory_.size() + size <= spool_threshold &&
      take_budget(size)) {
    counted_ += size;
    memory_.append(data, size);
    return;
  }
  if (spool_fd_ < 0) {
    spool_fd_ = open_spool_file();
    if (spool_fd_ < 0) {
      // No spool file: keep it in memory after all rather than lose it.
      memory_.append(data, size);
      return;
    }
  }
  write_all(spool_fd_, std::string_view{data, size});
}

void stream_capture::take_file(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_size <= 0) {
    ::close(fd); // (the common case: the command wrote nothing)
    return;
  }
  auto size = static_cast<size_t>(st.st_size);
  if (size > spool_threshold || !take_budget(size)) {
    // Printed from the file (what a background process of the command
    // writes there until then goes with it).
    total_ += size;
    spool_fd_ = fd;
    return;
  }
  std::string data(size, '\0');
  size_t got = 0;
  while (got < size) {
    auto n = ::pread(fd, data.data() + got, size - got,
                     static_cast<off_t>(got));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  if (got < size)
    give_budget(size - got);
  data.resize(got);
  total_ += got;
  counted_ += got;
  memory_ = std::move(data);
}

void stream_capture::finish() {
  if (marker_pending_ && !marker_.empty()) {
    marker_pending_ = false;
    keep(marker_.data(), marker_.size());
  }
  if (mode_ == output_mode::line_buffer && !partial_.empty()) {
    sink_(stream_, partial_);
    partial_.clear();
  }
}

std::string stream_capture::take_memory(size_t& counted) {
  counted += counted_;
  counted_ = 0; // now the result's (held_output)
  return std::move(memory_);
}

int stream_capture::take_spool() {
  auto fd = spool_fd_;
  spool_fd_ = -1;
  return fd;
}

bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    auto n = ::write(fd, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    text.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

namespace {

/// Writes `text` to `fd`, each line prefixed with `tag`; `at_line_start`
/// carries over between calls.
bool write_tagged(int fd, std::string_view text, const std::string& tag,
                  bool& at_line_start) {
  if (tag.empty())
    return write_all(fd, text);
  std::string buf;
  buf.reserve(text.size() + tag.size() * 4);
  for (auto c : text) {
    if (at_line_start)
      buf += tag;
    buf += c;
    at_line_start = c == '\n';
  }
  return write_all(fd, buf);
}

bool write_stream(int fd, const std::string& memory, int spool_fd,
                  const std::string& tag) {
  bool at_line_start = true;
  bool ok = write_tagged(fd, memory, tag, at_line_start);
  if (spool_fd < 0)
    return ok;
  char buf[65536];
  for (off_t offset = 0;;) {
    auto n = ::pread(spool_fd, buf, sizeof(buf), offset);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    offset += n;
    ok = write_tagged(fd, std::string_view{buf, static_cast<size_t>(n)}, tag,
                      at_line_start) &&
         ok;
  }
  return ok;
}

} // namespace

bool write_output(const job_result& res, int out_fd, int err_fd,
                  const std::string& tag) {
  auto out_spool = res.held ? res.held->out_fd : -1;
  auto err_spool = res.held ? res.held->err_fd : -1;
  bool ok = write_stream(out_fd, res.out, out_spool, tag);
  return write_stream(err_fd, res.err, err_spool, tag) && ok;
}

} // namespace poolrun
