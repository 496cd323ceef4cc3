#include "pool/jobs.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <utility>
#include <vector>

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
    case job_state::cancelled:
      return "cancelled";
    case job_state::stopped:
      return "stopped";
  }
  return "job_state(" + std::to_string(static_cast<int>(x)) + ")";
}

std::optional<job_state> job_state_from(const std::string& name) {
  for (auto x : {job_state::running, job_state::waiting, job_state::delayed,
                 job_state::retrying, job_state::failed, job_state::cancelled,
                 job_state::stopped})
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

namespace {

struct describers {
  std::mutex mtx;
  std::vector<std::pair<caf::rtti_pair, std::function<std::string(const void*)>>>
    fns;
  /// Whether `fns` has any: rendering without a describer takes no lock.
  std::atomic<bool> any{false};
};

describers& registry() {
  static describers x;
  return x;
}

} // namespace

void detail::register_describer(caf::rtti_pair type,
                                std::function<std::string(const void*)> f) {
  auto& reg = registry();
  std::lock_guard<std::mutex> guard{reg.mtx};
  for (auto& x : reg.fns) {
    if (x.first == type) {
      x.second = std::move(f);
      return;
    }
  }
  reg.fns.emplace_back(type, std::move(f));
  reg.any = true;
}

std::string describe_message(const caf::message& x) {
  auto& reg = registry();
  if (!reg.any || x.empty())
    return caf::to_string(x);
  // (A copy: a describer may itself render, or register, without a
  // deadlock.)
  decltype(reg.fns) fns;
  {
    std::lock_guard<std::mutex> guard{reg.mtx};
    fns = reg.fns;
  }
  std::string result = "(";
  for (size_t i = 0; i < x.size(); ++i) {
    if (i > 0)
      result += ", ";
    auto type = x.type(i);
    auto fn = std::find_if(fns.begin(), fns.end(),
                           [&](const auto& y) { return y.first == type; });
    if (fn == fns.end()) {
      result += x.stringify(i);
      continue;
    }
    try {
      result += fn->second(x.get(i));
    } catch (std::exception& ex) {
      result += std::string{"<describe failed: "} + ex.what() + ">";
    } catch (...) {
      result += "<describe failed>";
    }
  }
  return result + ")";
}

std::string job_payload_text(const caf::message& payload) {
  auto text = describe_message(payload);
  if (text.size() > 200)
    text = text.substr(0, 200) + "...";
  return text;
}

std::string check(const job_filter& x) {
  if (x.limit < 1 || x.limit > 1000)
    return "limit must be 1 to 1000";
  return {};
}

bool kept_when_ended(job_state x) noexcept {
  return x == job_state::failed || x == job_state::cancelled
         || x == job_state::stopped;
}

std::string check_dead(const job_filter& x) {
  if (x.state && !kept_when_ended(*x.state))
    return "retry and discard act on failed jobs only (and on the cancelled "
           "or stopped ones kept beside them): leave state out or set it to "
           "failed, cancelled or stopped";
  return {};
}

} // namespace pool
