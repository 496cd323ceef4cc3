// The poolrun error category: failed attempts carrying their job result.
#include "job.hpp"

#include <cstring>

#include <pool/duration_text.hpp>
#include <pool/errors.hpp>
#include <pool/work_record.hpp>

namespace poolrun {

namespace {

/// The last non-empty line of `text`, at most `most` bytes of it.
std::string last_line(const std::string& text, size_t most) {
  auto end = text.find_last_not_of("\r\n");
  if (end == std::string::npos)
    return {};
  auto begin = text.rfind('\n', end);
  begin = begin == std::string::npos ? 0 : begin + 1;
  auto line = text.substr(begin, end + 1 - begin);
  if (line.size() > most)
    line = line.substr(0, most) + "...";
  return line;
}

} // namespace

std::string describe_result(const job_result& res) {
  auto took = pool::short_duration(caf::timespan{res.runtime});
  std::string command = res.command.size() > 80
                          ? res.command.substr(0, 80) + "..."
                          : res.command;
  std::string what;
  if (res.host_lost)
    what = "lost its host " + res.host + " after " + took + " (it may not have run)";
  else if (res.timed_out)
    what = "timed out after " + took + " (killed)";
  else if (res.signal != 0) {
    auto name = ::sigabbrev_np(res.signal);
    what = "killed by signal " + std::to_string(res.signal)
           + (name ? std::string{" (SIG"} + name + ")" : std::string{})
           + " after " + took;
  } else
    what = "exit " + std::to_string(res.exit_code) + " after " + took;
  auto said = last_line(res.err, 200);
  auto result = command + ": " + what;
  if (!said.empty())
    result += ": " + said;
  return result;
}

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
  if (context.match_elements<job_result>())
    result += ": " + describe_result(context.get_as<job_result>(0));
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
