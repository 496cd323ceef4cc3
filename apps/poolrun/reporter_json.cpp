// --results X.json: one JSON line per job, as GNU parallel writes them.
#include "reporter.hpp"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "console.hpp"
#include "process.hpp"
#include "shell.hpp"
#include "specs.hpp"

namespace poolrun {

namespace {

/// GNU parallel's JSON string: `"` and `\` escaped, control bytes as
/// \u00XX.
std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (auto c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", byte);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

/// The whole of `fd`'s contents, from the start.
std::string read_back(int fd) {
  std::string out;
  ::lseek(fd, 0, SEEK_SET);
  char chunk[65536];
  ssize_t n;
  while ((n = ::read(fd, chunk, sizeof chunk)) > 0)
    out.append(chunk, static_cast<size_t>(n));
  return out;
}

} // namespace

void reporter::write_json(uint64_t seq, const held& h) {
  auto& res = *h.res;
  if (json_fd_ < 0) {
    auto& path = opts_.results;
    json_fd_ = path == "-.json"
                   ? STDOUT_FILENO
                   : ::open(path.c_str(),
                            O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (json_fd_ < 0) {
      lost("cannot write --results file '" + path +
           "': " + std::strerror(errno));
      return;
    }
  }
  // The output, spooled parts too, read back from memory files.
  auto out_fd = ::memfd_create("poolrun-json-out", MFD_CLOEXEC);
  auto err_fd = ::memfd_create("poolrun-json-err", MFD_CLOEXEC);
  std::string out;
  std::string err;
  if (out_fd >= 0 && err_fd >= 0 && write_output(res, out_fd, err_fd, "")) {
    out = read_back(out_fd);
    err = read_back(err_fd);
  }
  for (auto fd : {out_fd, err_fd})
    if (fd >= 0)
      ::close(fd);
  char numbers[256];
  std::snprintf(numbers, sizeof numbers,
                "{ \"Seq\": %" PRIu64 ", \"Host\": %s, \"Starttime\": %.3f, "
                "\"JobRuntime\": %.3f, \"Send\": %" PRIu64
                ", \"Receive\": %" PRIu64 ", \"Exitval\": %" PRId32
                ", \"Signal\": %" PRId32 ", ",
                seq, json_string(res.host).c_str(),
                static_cast<double>(res.started_at) / 1e9,
                static_cast<double>(res.runtime) / 1e9, res.sent,
                res.received, res.exit_code, res.signal);
  std::string line = numbers;
  line += "\"Command\": " + json_string(res.command) + ", \"V\": [ ";
  for (size_t i = 0; i < h.values.size(); ++i)
    line += (i > 0 ? "," : "") + json_string(h.values[i]);
  line += " ], \"Stdout\": " + json_string(out) +
          ", \"Stderr\": " + json_string(err) + " }\n";
  write_all(json_fd_, line);
}

void reporter::write_parset(const held& h, const std::string& tag,
                            bool command) {
  // As GNU parallel: the standard output (with -v's line) less its last
  // newline, quoted; standard error as usual.
  auto& res = *h.res;
  auto out_fd = ::memfd_create("poolrun-parset", MFD_CLOEXEC);
  std::string out = command ? tag + res.command + "\n" : std::string{};
  if (out_fd >= 0 && write_output(res, out_fd, STDERR_FILENO, tag))
    out += read_back(out_fd);
  if (out_fd >= 0)
    ::close(out_fd);
  if (!out.empty() && out.back() == '\n')
    out.pop_back();
  std::string code;
  if (opts_.parset == run_options::parset_mode::vars) {
    if (next_parset_ == opts_.parset_names.size()) {
      console::message("--_parset: more jobs than variables; the output "
                       "of the job '" + res.command + "' is left out");
      return;
    }
    code = opts_.parset_names[next_parset_++] + "=";
  } else if (opts_.parset == run_options::parset_mode::assoc) {
    std::string key;
    for (auto& v : h.values)
      key += (key.empty() ? "" : " ") + v;
    code = "[" + shell_quote(key) + "]=";
  }
  console::write(1, code + shell_quote(out) + "\n");
}

void reporter::write_compressed(const job_result& res, int out_fd,
                                int err_fd) {
  if (compressor_.empty())
    compressor_ = opts_.compress_program.empty() ? find_compress_program()
                                                 : opts_.compress_program;
  // One compressor per file, each reading its pipe (so neither blocks).
  int pipes[2][2];
  pid_t pids[2] = {-1, -1};
  int files[2] = {out_fd, err_fd};
  for (int i = 0; i < 2; ++i) {
    if (::pipe2(pipes[i], O_CLOEXEC) != 0)
      return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipes[i][0], 0);
    posix_spawn_file_actions_adddup2(&actions, files[i], 1);
    const char* argv[] = {"/bin/sh", "-c", compressor_.c_str(), nullptr};
    if (::posix_spawn(&pids[i], "/bin/sh", &actions, nullptr,
                      const_cast<char* const*>(argv), environ) != 0)
      pids[i] = -1;
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipes[i][0]);
  }
  write_output(res, pipes[0][1], pipes[1][1], "");
  for (int i = 0; i < 2; ++i) {
    ::close(pipes[i][1]);
    int status = 0;
    if (pids[i] > 0 && ::waitpid(pids[i], &status, 0) > 0 &&
        !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
      lost("--compress: '" + compressor_ + "' failed");
  }
}

} // namespace poolrun
