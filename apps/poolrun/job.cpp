// The poolrun error category: failed attempts carrying their job result.
#include "job.hpp"

#include <pool/errors.hpp>
#include <pool/work_record.hpp>

namespace poolrun {

std::string render_poolrun_error(uint8_t code, caf::atom_value,
                                 const caf::message& context) {
  std::string result = "poolrun.";
  switch (static_cast<poolrun_errc>(code)) {
    case poolrun_errc::command_failed:
      result += "command_failed";
      break;
    case poolrun_errc::timed_out:
      result += "timed_out";
      break;
    case poolrun_errc::host_lost:
      result += "host_lost";
      break;
    case poolrun_errc::not_started:
      result += "not_started";
      break;
    default:
      result += "unknown_error";
  }
  if (context.match_elements<job_result>()) {
    auto& res = context.get_as<job_result>(0);
    if (res.timed_out)
      result += ": killed at its deadline";
    else if (res.signal != 0)
      result += ": signal " + std::to_string(res.signal);
    else
      result += ": exit status " + std::to_string(res.exit_code);
  }
  return result;
}

std::optional<job_result> result_of(const caf::error& err) {
  if (!err)
    return std::nullopt;
  if (err.category() == caf::atom("poolrun")) {
    if (err.context().match_elements<job_result>())
      return err.context().get_as<job_result>(0);
    return std::nullopt;
  }
  auto history = pool::attempt_history(err);
  if (history.empty())
    return std::nullopt;
  return result_of(history.back().reason);
}

caf::error failure_of(job_result res) {
  auto code = res.host_lost   ? poolrun_errc::host_lost
              : res.timed_out ? poolrun_errc::timed_out
                              : poolrun_errc::command_failed;
  return caf::make_error(code, std::move(res));
}

} // namespace poolrun
