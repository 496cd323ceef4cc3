#include "http_jobs.hpp"

#include <chrono>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <optional>

#include <caf/scoped_actor.hpp>
#include <nlohmann/json.hpp>

#include "pool/errors.hpp"

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

void reply_error(httplib::Response& res, int status, const std::string& what) {
  res.status = status;
  res.set_content(json{{"error", what}}.dump() + "\n", "application/json");
}

void no_store(httplib::Response& res) {
  res.set_header("Cache-Control", "no-store");
  res.set_header("X-Content-Type-Options", "nosniff");
}

bool read_job_filter(const httplib::Request& req, job_filter& filter,
                     std::string& why) {
  if (req.has_param("state")) {
    auto state = job_state_from(req.get_param_value("state"));
    if (!state) {
      why = "state must be running, waiting, delayed, retrying, failed, "
            "cancelled or stopped";
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
    if (!x.history.empty()) {
      auto history = json::array();
      for (auto& h : x.history)
        history.push_back(json{{"attempt", h.attempt},
                               {"after_submit", seconds(h.after_submit)},
                               {"error", h.error}});
      one["history"] = std::move(history);
    }
    jobs.push_back(std::move(one));
  }
  return json{{"jobs", std::move(jobs)},
              {"next_after", page.next_after},
              {"scanned", page.scanned},
              {"total", page.total}}
           .dump(-1, ' ', false, json::error_handler_t::replace)
         + "\n";
}

std::string acted_json(const jobs_acted& x) {
  return json{{"ids", x.ids},
              {"new_ids", x.new_ids},
              {"kept", x.kept},
              {"note", x.note}}
             .dump(-1, ' ', false, json::error_handler_t::replace) +
         "\n";
}

void serve_jobs(caf::actor_system& sys, const caf::actor& pool,
                caf::timespan timeout, bool payloads,
                const httplib::Request& req, httplib::Response& res) {
  job_filter filter;
  std::string why;
  if (!read_job_filter(req, filter, why))
    return reply_error(res, 400, why);
  filter.payloads = payloads;
  caf::scoped_actor self{sys};
  self->request(pool, timeout, list_jobs_v, filter)
      .receive(
          [&](job_page& page) {
            no_store(res);
            res.set_content(jobs_json(page), "application/json");
          },
          [&](caf::error& err) {
            reply_error(res, is(err, pool_errc::invalid_option) ? 400 : 504,
                        describe(err));
          });
}

std::string act_on_jobs(caf::actor_system& sys, const caf::actor& pool,
                        caf::timespan timeout, const httplib::Request& req,
                        httplib::Response& res) {
  no_store(res);
  auto id = req.matches[2].str();
  auto verb = req.matches[3].str();
  job_filter filter;
  std::string why;
  if (!id.empty()) {
    auto x = number(id, 1, INT64_MAX);
    if (!x || !req.params.empty()) {
      why = !x ? "the job id must be an integer from 1"
               : "a job's own " + verb + " takes no filter";
      reply_error(res, 400, why);
      return verb + " of job " + id + ": " + why;
    }
    filter.id = static_cast<uint64_t>(*x);
  } else if (req.has_param("limit")) {
    // Acting on one page only would leave the rest behind unseen.
    why = verb + " acts on every job matching the filter, on every page: "
          "limit sizes a page of the listing only, leave it out (after is "
          "honoured: only the jobs after that id)";
    reply_error(res, 400, why);
    return verb + ": " + why;
  } else if (!read_job_filter(req, filter, why)) {
    reply_error(res, 400, why);
    return verb + ": " + why;
  }
  auto what = id.empty() ? verb + " of the dead set's jobs matching '" +
                               req.target.substr(req.path.size()) + "'"
                         : verb + " of job " + id;
  auto msg = verb == "retry" ? caf::make_message(retry_jobs_v, filter)
                             : caf::make_message(discard_jobs_v, filter);
  std::string outcome = "no answer within the action timeout";
  caf::scoped_actor self{sys};
  self->request(pool, timeout, std::move(msg))
      .receive(
          [&](jobs_acted& x) {
            if (!id.empty() && x.ids.empty()) {
              outcome = "no failed, cancelled or stopped job " + id +
                        " (it ran again, was discarded or aged out)";
              return reply_error(res, 404, outcome);
            }
            outcome = x.note;
            res.status = 200;
            res.set_content(acted_json(x), "application/json");
          },
          [&](caf::error& err) {
            outcome = describe(err);
            auto status = 504;
            if (is(err, pool_errc::invalid_option))
              status = 400;
            else if (err.category() == pool_error_category)
              status = 409;
            reply_error(res, status, outcome);
          });
  return what + ": " + outcome;
}

} // namespace pool::http_detail
