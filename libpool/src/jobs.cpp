#include "pool/jobs.hpp"

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
  }
  return "job_state(" + std::to_string(static_cast<int>(x)) + ")";
}

std::optional<job_state> job_state_from(const std::string& name) {
  for (auto x : {job_state::running, job_state::waiting, job_state::delayed,
                 job_state::retrying})
    if (to_string(x) == name)
      return x;
  return std::nullopt;
}

std::string check(const job_filter& x) {
  if (x.limit < 1 || x.limit > 1000)
    return "limit must be 1 to 1000";
  return {};
}

} // namespace pool
