// One command as a pool job: own process group, captured output, deadline.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/timespan.hpp>

namespace poolrun {

/// What one attempt of a command did. Serializable: a journal stores it.
struct job_result {
  /// The command as given to /bin/sh -c.
  std::string command;
  /// Exit status; -1 when it timed out; 0 when a signal ended it (as GNU
  /// parallel's joblog writes it).
  int32_t exit_code = 0;
  /// The signal that ended it (SIGKILL after a timeout), 0 for none.
  int32_t signal = 0;
  /// Killed at its deadline.
  bool timed_out = false;
  /// Wall-clock start, in nanoseconds since the Unix epoch.
  int64_t started_at = 0;
  /// From start to exit, in nanoseconds.
  int64_t runtime = 0;
  /// Everything it wrote to standard output and standard error.
  std::string out;
  std::string err;

  /// A non-zero exit status, a signal or a timeout.
  bool failed() const noexcept {
    return timed_out || exit_code != 0 || signal != 0;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_result& x) {
  return f(caf::meta::type_name("poolrun::job_result"), x.command, x.exit_code,
           x.signal, x.timed_out, x.started_at, x.runtime, x.out, x.err);
}

/// Why an attempt failed; the error's context is the attempt's
/// `job_result`. Numeric values are stored in journals: never renumber.
enum class poolrun_errc : uint8_t {
  /// Exited with a non-zero status or was ended by a signal.
  command_failed = 1,
  /// Killed because it ran past --timeout.
  timed_out = 2,
};

/// Renders errors of the "poolrun" category (for caf's error rendering).
std::string render_poolrun_error(uint8_t code, caf::atom_value category,
                                 const caf::message& context);

/// The job result an error carries: from a poolrun error's context, or from
/// the last attempt of a pool.operation_failed history. Nothing otherwise.
std::optional<job_result> result_of(const caf::error& err);

/// Runs `command` with `/bin/sh -c` in a new process group, its standard
/// input from /dev/null, and collects its output until it exits. When
/// `timeout` passes first, SIGKILLs the whole process group. Blocks the
/// calling thread (a dedicated worker); safe from several threads at once.
job_result run_command(const std::string& command,
                       std::optional<caf::timespan> timeout);

/// The pool's job: `run_command`, with a failed command as an error (so the
/// pool retries it) whose context carries the `job_result`.
caf::expected<job_result> run_job(const std::string& command,
                                  std::optional<caf::timespan> timeout);

/// Aborts: from now on no command starts and no attempt reports back (its
/// thread waits for the process to end), and every running command's
/// process group gets SIGKILL. Returns how many groups were killed. Call it
/// right before terminating the process; safe from any thread.
size_t kill_all_commands();

} // namespace poolrun

CAF_ERROR_CODE_ENUM(poolrun::poolrun_errc, "poolrun")
