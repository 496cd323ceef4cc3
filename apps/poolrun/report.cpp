// Writes command outputs whole, GNU parallel's joblog and the progress line.
#include "report.hpp"

#include <cerrno>
#include <cinttypes>
#include <cstring>

#include <unistd.h>

namespace poolrun {

namespace {

void write_all(std::FILE* f, const std::string& text) {
  if (!text.empty())
    std::fwrite(text.data(), 1, text.size(), f);
}

} // namespace

report::report(bool keep_order, bool bar)
    : keep_order_(keep_order), bar_(bar && ::isatty(STDERR_FILENO) == 1) {
  // Nothing here.
}

report::~report() {
  if (joblog_ != nullptr && !joblog_is_stdout_)
    std::fclose(joblog_);
}

std::optional<std::string> report::open_joblog(const std::string& path,
                                               bool append) {
  if (path == "-") {
    joblog_ = stdout;
    joblog_is_stdout_ = true;
  } else {
    joblog_ = std::fopen(path.c_str(), append ? "a" : "w");
    if (joblog_ == nullptr)
      return "cannot open joblog '" + path + "': " + std::strerror(errno);
  }
  // A resumed run adds to the joblog of the runs before it.
  if (!append || joblog_is_stdout_ || std::ftell(joblog_) == 0) {
    std::fputs("Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\t"
               "Signal\tCommand\n",
               joblog_);
    std::fflush(joblog_);
  }
  return std::nullopt;
}

void report::finished(size_t seq, std::optional<job_result> res) {
  if (!keep_order_) {
    if (res)
      print(*res);
    return;
  }
  held_.emplace(seq, std::move(res));
  for (auto i = held_.begin(); i != held_.end() && i->first == next_to_print_;
       i = held_.erase(i), ++next_to_print_)
    if (i->second)
      print(*i->second);
}

void report::flush_held() {
  for (auto& kvp : held_)
    if (kvp.second)
      print(*kvp.second);
  held_.clear();
}

void report::print(const job_result& res) {
  hide_bar();
  // Standard output first, then standard error, each flushed whole.
  write_all(stdout, res.out);
  std::fflush(stdout);
  write_all(stderr, res.err);
  if (res.timed_out)
    std::fprintf(stderr,
                 "poolrun: warning: killed at its deadline (timeout): %s\n",
                 res.command.c_str());
  std::fflush(stderr);
  redraw_bar();
}

void report::joblog(size_t seq, const job_result& res) {
  if (joblog_ == nullptr)
    return;
  // GNU parallel's format; Receive counts standard output bytes, as it does.
  std::fprintf(joblog_,
               "%zu\t:\t%.3f\t%10.3f\t0\t%zu\t%" PRId32 "\t%" PRId32 "\t%s\n",
               seq + 1, static_cast<double>(res.started_at) / 1e9,
               static_cast<double>(res.runtime) / 1e9, res.out.size(),
               res.exit_code, res.signal, res.command.c_str());
  std::fflush(joblog_);
}

void report::message(const std::string& text) {
  hide_bar();
  std::fprintf(stderr, "poolrun: %s\n", text.c_str());
  std::fflush(stderr);
  redraw_bar();
}

void report::show(const progress& p) {
  if (!bar_)
    return;
  auto text = std::to_string(p.finished) + "/" + std::to_string(p.total) +
              " done, " + std::to_string(p.failed) + " failed, " +
              std::to_string(p.running) + " running";
  if (p.finished > 0 && p.finished < p.total) {
    auto per_job = p.elapsed / p.finished;
    auto left = per_job * (p.total - p.finished);
    text += ", ETA " + human_duration(left);
  }
  bar_text_ = "poolrun: " + text;
  redraw_bar();
}

void report::end_progress() {
  hide_bar();
  bar_ = false;
}

void report::hide_bar() {
  if (!bar_visible_)
    return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  bar_visible_ = false;
}

void report::redraw_bar() {
  if (!bar_ || bar_text_.empty())
    return;
  std::fprintf(stderr, "\r\033[K%s", bar_text_.c_str());
  std::fflush(stderr);
  bar_visible_ = true;
}

std::string human_duration(std::chrono::nanoseconds x) {
  using namespace std::chrono;
  char buf[32];
  auto ns = x.count();
  if (ns < 1000000) {
    std::snprintf(buf, sizeof(buf), "%" PRId64 "us",
                  static_cast<int64_t>(ns / 1000));
  } else if (ns < 1000000000) {
    std::snprintf(buf, sizeof(buf), "%.1fms", static_cast<double>(ns) / 1e6);
  } else if (ns < 60 * int64_t{1000000000}) {
    std::snprintf(buf, sizeof(buf), "%.2fs", static_cast<double>(ns) / 1e9);
  } else {
    auto s = duration_cast<seconds>(x).count();
    std::snprintf(buf, sizeof(buf), "%" PRId64 "m%02" PRId64 "s",
                  static_cast<int64_t>(s / 60), static_cast<int64_t>(s % 60));
  }
  return buf;
}

} // namespace poolrun
