#include "pool/jobs.hpp"

#include <caf/message.hpp>

#include "pool/errors.hpp"
#include "pool/work_record.hpp"

namespace pool {

std::string to_string(job_state x) {
  switch (x) {
    case job_state::running:
      return "running";
    case job_state::waiting:
      return "waiting";
    case job_state::delayed:
      return "delayed";
    case job_state::retrying:
      return "retrying";
    case job_state::failed:
      return "failed";
  }
  return "job_state(" + std::to_string(static_cast<int>(x)) + ")";
}

std::optional<job_state> job_state_from(const std::string& name) {
  for (auto x : {job_state::running, job_state::waiting, job_state::delayed,
                 job_state::retrying, job_state::failed})
    if (to_string(x) == name)
      return x;
  return std::nullopt;
}

std::vector<job_attempt> job_history(const std::vector<attempt_failure>& xs) {
  std::vector<job_attempt> result;
  result.reserve(xs.size());
  for (auto& x : xs)
    result.push_back(
        job_attempt{x.attempt, x.after_submit, describe(x.reason)});
  return result;
}

std::string job_payload_text(const caf::message& payload) {
  auto text = caf::to_string(payload);
  if (text.size() > 200)
    text = text.substr(0, 200) + "...";
  return text;
}

std::string check(const job_filter& x) {
  if (x.limit < 1 || x.limit > 1000)
    return "limit must be 1 to 1000";
  return {};
}

std::string check_dead(const job_filter& x) {
  if (x.state && *x.state != job_state::failed)
    return "retry and discard act on failed jobs only: leave state out or "
           "set it to failed";
  return {};
}

} // namespace pool
