#include "render.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace pooltop {

namespace {

using json = nlohmann::json;

std::string duration(double s) {
  if (!(s > 0))
    return "0";
  if (s < 1e-3)
    return fmt::format("{:.3g}µs", s * 1e6);
  if (s < 1)
    return fmt::format("{:.3g}ms", s * 1e3);
  if (s < 120)
    return fmt::format("{:.3g}s", s);
  return fmt::format("{:.0f}min", s / 60);
}

// Cuts a line to `width` columns (multi-byte characters count as one).
std::string fit(const std::string& line, size_t width) {
  std::string out;
  size_t cols = 0;
  bool escape = false;
  for (auto c : line) {
    if (c == '\x1b')
      escape = true;
    if (!escape && (static_cast<unsigned char>(c) & 0xC0) != 0x80) {
      if (cols == width)
        break;
      ++cols;
    }
    if (escape && c == 'm')
      escape = false;
    out += c;
  }
  return out;
}

std::string bar(const json& s, size_t width, bool color) {
  auto workers = std::max<double>(1, s.value("workers", 0.0));
  auto part = [&](const char* key) {
    return static_cast<size_t>(
        std::lround(s.value(key, 0.0) / workers * static_cast<double>(width)));
  };
  auto busy = std::min(part("busy"), width);
  auto waiting = std::min(part("waiting"), width - busy);
  std::string out = "[";
  if (color)
    out += "\x1b[32m";
  out += std::string(busy, '#');
  if (color)
    out += "\x1b[33m";
  out += std::string(waiting, '+');
  if (color)
    out += "\x1b[0m";
  out += std::string(width - busy - waiting, '.');
  return out + "]";
}

} // namespace

std::string sparkline(const std::vector<double>& values, size_t width) {
  static const char* blocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  auto first = values.size() > width ? values.size() - width : 0;
  auto top = 0.0;
  for (auto i = first; i < values.size(); ++i)
    top = std::max(top, values[i]);
  std::string out;
  for (auto i = first; i < values.size(); ++i) {
    auto level = top > 0 ? static_cast<size_t>(values[i] / top * 7.0 + 0.5) : 0;
    out += blocks[std::min<size_t>(level, 7)];
  }
  return out;
}

std::vector<std::string> pool_names(const std::string& stats_json) {
  std::vector<std::string> result;
  auto doc = json::parse(stats_json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("pools")
      || !doc["pools"].is_array())
    return result;
  for (auto& p : doc["pools"])
    if (p.contains("name") && p["name"].is_string())
      result.push_back(p["name"].get<std::string>());
  return result;
}

std::string render(const std::string& stats_json, const render_options& opts,
                   const running_jobs& running) {
  auto doc = json::parse(stats_json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("pools") ||
      !doc["pools"].is_array())
    return "not the JSON of /api/stats (is this a pool's HTTP endpoint?)\n";
  std::ostringstream out;
  auto bold = [&](const std::string& x) {
    return opts.color ? "\x1b[1m" + x + "\x1b[0m" : x;
  };
  auto spark_width = opts.width > 40 ? std::min<size_t>(opts.width - 24, 60) : 16;
  for (auto& p : doc["pools"]) {
    auto name = p.value("name", std::string{"?"});
    auto line = [&](const std::string& x) { out << fit(x, opts.width) << '\n'; };
    if (!p.value("sampled", false)) {
      line(bold(name) + "  (no figures yet)");
      continue;
    }
    auto& s = p["stats"];
    auto& w = p["window"];
    std::string flags;
    if (s.value("backlog_alarm", false))
      flags += "  BACKLOG ALARM";
    if (s.value("paused", false))
      flags += "  PAUSED";
    if (p.value("down", false))
      flags += "  TERMINATED";
    line(bold(name) + fmt::format("  {}/{} busy, {} waiting, {} sleeping  "
                                  "utilization {:.0f}%{}",
                                  s.value("busy", 0), s.value("workers", 0),
                                  s.value("waiting", 0), s.value("sleeping", 0),
                                  100 * p.value("utilization", 0.0), flags));
    line("  " + bar(s, std::min<size_t>(opts.width > 8 ? opts.width - 4 : 4, 60),
                    opts.color));
    line(fmt::format("  queue {} due (+{} delayed), oldest due {}   parked {}",
                     s.value("available", 0), s.value("delayed", 0),
                     duration(p.value("oldest_due_age", 0.0)),
                     s.value("parked", 0)));
    line(fmt::format("  done {}  failed {} (dead set {})  retried {}  "
                     "timed out {}  cancelled {}  rejected {}",
                     s.value("completed", 0), s.value("failed", 0),
                     s.value("dead", 0),
                     s.value("retried", 0), s.value("timed_out", 0),
                     s.value("cancelled", 0), s.value("rejected", 0)));
    if (auto total = s.value("expected_total", uint64_t{0}); total > 0) {
      auto ended = s.value("completed", uint64_t{0})
                   + s.value("failed", uint64_t{0})
                   + s.value("cancelled", uint64_t{0});
      auto left = ended < total ? total - ended : 0;
      auto rate = w.value("throughput", 0.0);
      auto eta = left == 0  ? std::string{"all ended"}
                 : rate > 0 ? "ETA " + duration(static_cast<double>(left) / rate)
                            : std::string{"ETA ?"};
      line(fmt::format("  progress {} of {} ({:.0f}%), {}", ended, total,
                       100.0 * static_cast<double>(ended)
                           / static_cast<double>(total),
                       eta));
    }
    auto q = [&](const json& x) {
      return fmt::format("p50 {} p95 {} p99 {}", duration(x.value("p50", 0.0)),
                         duration(x.value("p95", 0.0)),
                         duration(x.value("p99", 0.0)));
    };
    line(fmt::format("  last {:.0f}s: {:.1f} ops/s   wait {}   run {}",
                     w.value("seconds", 0.0), w.value("throughput", 0.0),
                     q(w["wait"]), q(w["run"])));
    auto& r = p["restarts"];
    line(fmt::format("  high water: busy {} due {} waiting {}   restarts {} of "
                     "{} in {}",
                     s.value("busy_high", 0), s.value("available_high", 0),
                     s.value("waiting_high", 0), r.value("in_window", 0),
                     r.value("max", 0) < 0 ? std::string{"unlimited"}
                                           : std::to_string(r.value("max", 0)),
                     duration(r.value("window", 0.0))));
    std::vector<double> tp, wait99, run99;
    for (auto& pt : p["series"]) {
      tp.push_back(pt.value("throughput", 0.0));
      wait99.push_back(pt["wait"].value("p99", 0.0));
      run99.push_back(pt["run"].value("p99", 0.0));
    }
    line("  ops/s    " + sparkline(tp, spark_width));
    line("  wait p99 " + sparkline(wait99, spark_width));
    line("  run p99  " + sparkline(run99, spark_width));
    for (auto& [pool, body] : running) {
      if (pool != name)
        continue;
      auto jobs = json::parse(body, nullptr, false);
      if (jobs.is_discarded() || !jobs.contains("jobs"))
        continue;
      size_t n = 0;
      for (auto& j : jobs["jobs"]) {
        if (n++ == opts.running)
          break;
        auto attempt = j.value("attempt", 1);
        line(fmt::format("  running op#{} on {} for {}{}{}", j.value("id", 0),
                         j.value("holder", std::string{"?"}),
                         duration(j.value("since", 0.0)),
                         attempt > 1 ? " (attempt " + std::to_string(attempt) + ")"
                                     : std::string{},
                         j.contains("payload")
                           ? ": " + j["payload"].get<std::string>()
                           : std::string{}));
      }
    }
    size_t shown = 0;
    for (auto& f : p["failures"]) {
      if (shown++ == opts.failures)
        break;
      line(fmt::format("  failed op#{}: {}", f.value("operation", 0),
                       f.value("error", std::string{})));
      size_t n = 0;
      for (auto& a : f["attempts"])
        line(fmt::format("    attempt {}: {}", ++n, a.get<std::string>()));
    }
    out << '\n';
  }
  return out.str();
}

} // namespace pooltop
