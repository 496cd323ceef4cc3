#include "store_owner.hpp"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>

#include "pool/errors.hpp"

namespace pool::detail {

namespace {

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0)
    return "unknown";
  return buf;
}

std::string utc_now() {
  auto t = std::time(nullptr);
  std::tm tm{};
  char buf[32] = {};
  if (::gmtime_r(&t, &tm) == nullptr ||
      std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    return "an unknown time";
  return buf;
}

// The sidecar's text: one line naming its owner; empty if unreadable.
std::string read_owner(int fd) {
  std::string result;
  char buf[512];
  ssize_t n;
  off_t offset = 0;
  while ((n = ::pread(fd, buf, sizeof(buf), offset)) > 0 &&
         result.size() < 4096) {
    result.append(buf, static_cast<size_t>(n));
    offset += n;
  }
  while (!result.empty() && (result.back() == '\n' || result.back() == '\r' ||
                             result.back() == ' '))
    result.pop_back();
  return result;
}

} // namespace

std::string store_owner::file_of(const std::string& store_path) {
  // The file SQLite opens: it follows symbolic links as well.
  std::error_code ec;
  auto canonical = std::filesystem::weakly_canonical(store_path, ec);
  return (ec ? store_path : canonical.string()) + "-owner";
}

store_owner::~store_owner() {
  if (fd_ < 0)
    return;
  // A clean close leaves an empty sidecar: no owner. The lock goes with
  // the descriptor. Failing to truncate only leaves a stale name behind,
  // which the next owner reports as taken over.
  static_cast<void>(::ftruncate(fd_, 0));
  ::close(fd_);
}

caf::error store_owner::acquire(const std::string& store_path) {
  auto name = file_of(store_path);
  auto fd = ::open(name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    auto code = errno;
    return caf::make_error(
        pool_errc::store_failed, store_path,
        fmt::format("cannot create or open the owner file {}: {}; check "
                    "that the file's directory exists and is writable",
                    name, std::strerror(code)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    auto code = errno;
    auto owner = code == EWOULDBLOCK ? read_owner(fd) : std::string{};
    ::close(fd);
    if (code != EWOULDBLOCK)
      return caf::make_error(
          pool_errc::store_failed, store_path,
          fmt::format("cannot lock the owner file {}: {}; put the store on "
                      "a local file system",
                      name, std::strerror(code)));
    if (owner.empty())
      owner = "a pool that is still opening it";
    return caf::make_error(
        pool_errc::store_in_use, store_path,
        fmt::format("the store is in use by {} (lock held on {}); a store "
                    "file has one owner: stop that pool first, or give this "
                    "pool a file of its own (several pools share one queue "
                    "only through the PostgreSQL store)",
                    owner, name));
  }
  fd_ = fd;
  previous_ = read_owner(fd);
  auto text = fmt::format("pid {}, host {}, since {}\n", ::getpid(),
                          host_name(), utc_now());
  // The text only serves error messages: a failure to write it (a full
  // disk) does not stop the owner, whose lock is what counts.
  if (::ftruncate(fd, 0) == 0)
    static_cast<void>(::pwrite(fd, text.data(), text.size(), 0));
  return caf::none;
}

} // namespace pool::detail
