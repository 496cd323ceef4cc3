#include "http_jobs.hpp"

#include <chrono>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <optional>

#include <nlohmann/json.hpp>

namespace pool::http_detail {

namespace {

using json = nlohmann::json;

double seconds(caf::timespan x) {
  return std::chrono::duration<double>(x).count();
}

// A decimal integer in [lo, hi], or none.
std::optional<long long> number(const std::string& text, long long lo,
                                long long hi) {
  if (text.empty() || text.size() > 20)
    return std::nullopt;
  char* end = nullptr;
  errno = 0;
  auto x = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || x < lo || x > hi)
    return std::nullopt;
  return x;
}

} // namespace

bool read_job_filter(const httplib::Request& req, job_filter& filter,
                     std::string& why) {
  if (req.has_param("state")) {
    auto state = job_state_from(req.get_param_value("state"));
    if (!state) {
      why = "state must be running, waiting, delayed or retrying";
      return false;
    }
    filter.state = state;
  }
  if (req.has_param("key"))
    filter.key = req.get_param_value("key");
  struct field {
    const char* name;
    long long lo;
    long long hi;
  };
  for (auto f : {field{"priority", INT32_MIN, INT32_MAX},
                 field{"id", 1, INT64_MAX}, field{"after", 0, INT64_MAX},
                 field{"limit", 1, 1000}}) {
    if (!req.has_param(f.name))
      continue;
    auto x = number(req.get_param_value(f.name), f.lo, f.hi);
    if (!x) {
      why = std::string{f.name} + " must be an integer from "
            + std::to_string(f.lo) + " to " + std::to_string(f.hi);
      return false;
    }
    auto name = std::string{f.name};
    if (name == "priority")
      filter.priority = static_cast<int32_t>(*x);
    else if (name == "id")
      filter.id = static_cast<uint64_t>(*x);
    else if (name == "after")
      filter.after = static_cast<uint64_t>(*x);
    else
      filter.limit = static_cast<uint32_t>(*x);
  }
  return true;
}

std::string jobs_json(const job_page& page) {
  auto jobs = json::array();
  for (auto& x : page.jobs) {
    json one{{"id", x.id},
             {"state", to_string(x.state)},
             {"attempt", x.attempt},
             {"priority", x.priority},
             {"age", seconds(x.age)},
             {"since", seconds(x.since)}};
    if (!x.key.empty())
      one["key"] = x.key;
    if (!x.concurrency_key.empty())
      one["concurrency_key"] = x.concurrency_key;
    if (!x.holder.empty())
      one["holder"] = x.holder;
    if (!x.payload.empty())
      one["payload"] = x.payload;
    if (!x.last_error.empty())
      one["last_error"] = x.last_error;
    jobs.push_back(std::move(one));
  }
  return json{{"jobs", std::move(jobs)},
              {"next_after", page.next_after},
              {"scanned", page.scanned},
              {"total", page.total}}
           .dump(-1, ' ', false, json::error_handler_t::replace)
         + "\n";
}

} // namespace pool::http_detail
