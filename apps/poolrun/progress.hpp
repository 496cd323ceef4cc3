// --eta, --bar, --progress: the progress line on a terminal, a periodic
// status line elsewhere.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "options.hpp"

namespace poolrun {

/// Figures for progress.
struct progress_figures {
  /// Jobs in all; 0 while unknown.
  size_t total = 0;
  size_t done = 0;
  size_t failed = 0;
  size_t running = 0;
  std::chrono::steady_clock::duration elapsed{};
};

/// The progress line (or status line) for `f` with the options asked for.
std::string progress_text(const run_options& opts, const progress_figures& f);

/// Draws progress: on a terminal redrawn in place at every `tick`; off one,
/// a line every `status_interval`. Used by one thread.
class progress_display {
public:
  explicit progress_display(const run_options& opts);

  /// Whether any progress was asked for.
  bool enabled() const noexcept {
    return enabled_;
  }

  /// Shows `f` (rate-limited off a terminal).
  void tick(const progress_figures& f);

  /// The last figures, then the line is gone for good.
  void end(const progress_figures& f);

private:
  const run_options& opts_;
  bool enabled_ = false;
  bool terminal_ = false;
  std::chrono::steady_clock::time_point last_line_{};
};

/// A duration for people: 850us, 12.3ms, 1.52s, 3m05s.
std::string human_duration(std::chrono::nanoseconds x);

} // namespace poolrun
