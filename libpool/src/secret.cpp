#include "pool/secret.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pool/errors.hpp"

namespace pool {

namespace {

caf::error refuse(const std::string& what, std::string why) {
  return caf::make_error(pool_errc::invalid_option, what, std::move(why));
}

// Closes a descriptor at scope exit.
struct fd_guard {
  int fd;
  ~fd_guard() {
    if (fd >= 0)
      ::close(fd);
  }
};

std::string mode_text(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

} // namespace

caf::expected<std::string> read_secret_file(const std::string& path,
                                            const std::string& what) {
  if (path.empty())
    return refuse(what, "names no file: give the path of a file that holds "
                        "the secret");
  // Non-blocking: a FIFO must not stall the open; it is refused below.
  auto fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0)
    return refuse(what, "cannot open " + path + ": " + std::strerror(errno));
  fd_guard guard{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return refuse(what, "cannot stat " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return refuse(what, path + " is not a regular file");
  if ((st.st_mode & 077) != 0)
    return refuse(
        what, path + " is accessible by group or others (mode " +
                  mode_text(st.st_mode) +
                  "), so other users may read the secret: chmod 600 " + path);
  std::string text;
  char buf[512];
  for (;;) {
    auto n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return refuse(what, "cannot read " + path + ": " + std::strerror(errno));
    if (n == 0)
      break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > max_secret_file_size)
      return refuse(what, path + " is larger than " +
                              std::to_string(max_secret_file_size) +
                              " bytes: it should hold the secret alone");
  }
  if (!text.empty() && text.back() == '\n')
    text.pop_back();
  if (!text.empty() && text.back() == '\r')
    text.pop_back();
  if (text.empty())
    return refuse(what, path + " is empty: write the secret into it");
  if (text.find_first_of("\r\n") != std::string::npos)
    return refuse(what, path + " holds more than one line: it should hold "
                               "the secret alone");
  return text;
}

caf::expected<std::string> load_secret(const secret_source& src) {
  if (!src.file.empty())
    return read_secret_file(src.file, src.file_option.empty()
                                          ? std::string{"secret file"}
                                          : src.file_option);
  if (!src.file_variable.empty())
    if (auto path = std::getenv(src.file_variable.c_str())) {
      if (*path == '\0')
        return refuse(src.file_variable, "is set but empty: name a file that "
                                         "holds the secret, or unset it");
      return read_secret_file(path, src.file_variable);
    }
  if (!src.variable.empty())
    if (auto value = std::getenv(src.variable.c_str())) {
      if (*value == '\0')
        return refuse(src.variable, "is set but empty: set it to the secret, "
                                    "or unset it");
      return std::string{value};
    }
  return std::string{};
}

} // namespace pool
