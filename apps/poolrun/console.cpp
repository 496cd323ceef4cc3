// One lock over poolrun's standard output and error.
#include "console.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <mutex>

#include <unistd.h>

#include "process.hpp"

namespace poolrun::console {

namespace {

std::mutex mtx;
std::string bar_text;
bool bar_visible = false;
bool bar_ended = false;
std::atomic<bool> failed{false};

int fd_of(int stream) {
  return stream == 2 ? STDERR_FILENO : STDOUT_FILENO;
}

void hide_bar_locked() {
  if (!bar_visible)
    return;
  write_all(STDERR_FILENO, "\r\033[K");
  bar_visible = false;
}

void redraw_bar_locked() {
  if (bar_text.empty() || bar_ended)
    return;
  write_all(STDERR_FILENO, "\r\033[K" + bar_text);
  bar_visible = true;
}

void note(bool ok, int stream) {
  if (ok || stream == 2)
    return;
  if (errno == EPIPE) {
    // Whoever read standard output is gone: end as SIGPIPE would have
    // ended poolrun before it ignored the signal (for --pipe's sake).
    std::signal(SIGPIPE, SIG_DFL);
    std::raise(SIGPIPE);
  }
  failed = true;
}

} // namespace

void write(int stream, std::string_view text) {
  std::lock_guard<std::mutex> guard{mtx};
  hide_bar_locked();
  note(write_all(fd_of(stream), text), stream);
  redraw_bar_locked();
}

void write_lines(int stream, const std::string& tag, std::string_view lines) {
  std::lock_guard<std::mutex> guard{mtx};
  hide_bar_locked();
  if (tag.empty()) {
    note(write_all(fd_of(stream), lines), stream);
  } else {
    std::string buf;
    size_t begin = 0;
    while (begin < lines.size()) {
      auto end = lines.find('\n', begin);
      end = end == std::string_view::npos ? lines.size() : end + 1;
      buf += tag;
      buf.append(lines.data() + begin, end - begin);
      begin = end;
    }
    note(write_all(fd_of(stream), buf), stream);
  }
  redraw_bar_locked();
}

void write_result(const job_result& res, const std::string& tag) {
  std::lock_guard<std::mutex> guard{mtx};
  hide_bar_locked();
  note(write_output(res, STDOUT_FILENO, STDERR_FILENO, tag), 1);
  redraw_bar_locked();
}

namespace {

std::string program_prefix = "poolrun: ";

} // namespace

void name_program(std::string_view argv0) {
  auto slash = argv0.rfind('/');
  auto name = slash == std::string_view::npos ? argv0 : argv0.substr(slash + 1);
  if (name == "parallel")
    program_prefix = "parallel: ";
}

void timed_out(const std::string& command) {
  if (gnu_words()) // as GNU parallel words it, in two lines
    message("Warning: This job was killed because it timed out:\n" +
            program_prefix + "Warning: " + command);
  else
    message("warning: killed at its deadline (--timeout): " + command);
}

bool gnu_words() {
  return program_prefix == "parallel: ";
}

const std::string& prefix() {
  return program_prefix;
}

void message(const std::string& text) {
  write(2, program_prefix + text + "\n");
}

void show_bar(const std::string& text) {
  std::lock_guard<std::mutex> guard{mtx};
  bar_text = text;
  redraw_bar_locked();
}

void end_bar() {
  std::lock_guard<std::mutex> guard{mtx};
  hide_bar_locked();
  bar_ended = true;
}

bool output_failed() {
  return failed.load();
}

} // namespace poolrun::console
