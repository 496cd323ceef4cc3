#pragma once

// pooltop's one screen, from the JSON of /api/stats: plain text (with ANSI
// colours when asked), so that it is tested without a terminal.

#include <string>
#include <utility>
#include <vector>

namespace pooltop {

struct render_options {
  /// Columns available; lines are cut to fit.
  size_t width = 100;
  /// ANSI colours and bold.
  bool color = false;
  /// Failures shown per pool.
  size_t failures = 5;
  /// Running jobs shown per pool (from `running`).
  size_t running = 5;
};

/// The bodies of `GET /api/pools/<name>/jobs?state=running`, by pool name:
/// the running jobs pooltop shows under each pool.
using running_jobs = std::vector<std::pair<std::string, std::string>>;

/// Renders the body of `/api/stats`; a body that is not that JSON renders
/// as one line saying so.
std::string render(const std::string& stats_json, const render_options& opts,
                   const running_jobs& running = {});

/// The pool names in the body of `/api/stats` (to ask for their jobs).
std::vector<std::string> pool_names(const std::string& stats_json);

/// A sparkline of `values` in Unicode blocks, scaled to their maximum.
std::string sparkline(const std::vector<double>& values, size_t width);

} // namespace pooltop
