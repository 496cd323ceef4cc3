// Progress text and where it goes.
#include "progress.hpp"

#include <cinttypes>
#include <cstdio>

#include <unistd.h>

#include "console.hpp"

namespace poolrun {

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

std::string progress_text(const run_options& opts, const progress_figures& f) {
  using namespace std::chrono;
  std::string text;
  auto elapsed = duration_cast<nanoseconds>(f.elapsed);
  auto average =
      f.done > 0 ? elapsed / static_cast<int64_t>(f.done) : nanoseconds{0};
  std::string left = "?";
  if (f.total > 0 && f.done > 0)
    left = human_duration(average * static_cast<int64_t>(f.total - f.done));
  if (opts.bar && f.total > 0) {
    constexpr size_t width = 20;
    auto filled = f.done * width / f.total;
    text += "[" + std::string(filled, '#') + std::string(width - filled, ' ') +
            "] " + std::to_string(f.done * 100 / f.total) + "% ";
  }
  text += std::to_string(f.done) + "/" +
          (f.total > 0 ? std::to_string(f.total) : std::string{"?"}) +
          " done, " + std::to_string(f.failed) + " failed, " +
          std::to_string(f.running) + " running";
  if (opts.eta || opts.bar)
    text += ", ETA " + left;
  if (opts.progress || opts.eta)
    text += ", AVG " + human_duration(average);
  return text;
}

progress_display::progress_display(const run_options& opts)
    : opts_(opts),
      enabled_(opts.eta || opts.bar || opts.progress),
      terminal_(::isatty(STDERR_FILENO) == 1) {
  last_line_ = std::chrono::steady_clock::now();
}

void progress_display::tick(const progress_figures& f) {
  if (!enabled_)
    return;
  if (terminal_) {
    console::show_bar(console::prefix() + progress_text(opts_, f));
    return;
  }
  auto now = std::chrono::steady_clock::now();
  if (now - last_line_ < opts_.status_interval)
    return;
  last_line_ = now;
  console::message("status: " + progress_text(opts_, f));
}

void progress_display::end(const progress_figures& f) {
  if (!enabled_)
    return;
  if (terminal_)
    console::end_bar();
  else
    console::message("status: " + progress_text(opts_, f));
}

} // namespace poolrun
