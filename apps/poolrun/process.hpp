// Starting and watching one process: own process group, output captured
// (memory, then a spool file) or streamed, standard input fed, deadline.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include <caf/timespan.hpp>

#include "job.hpp"
#include "options.hpp"

namespace poolrun {

/// How to start a process and treat its output.
struct launch_spec {
  /// Program and arguments; a program without '/' is looked up on PATH.
  std::vector<std::string> argv;
  /// Added to poolrun's environment ("NAME=value").
  std::vector<std::string> env;
  /// Fed to standard input (then closed); null: /dev/null.
  const std::string* input = nullptr;
  /// Whether a command that exits before reading all of `input` failed
  /// (by SIGPIPE: --pipe, as GNU parallel; not --pipepart, whose blocks
  /// GNU parallel feeds through a helper of their own).
  bool unread_input_fails = true;
  std::optional<caf::timespan> timeout;
  output_mode mode = output_mode::group;
  /// `line_buffer`: receives whole lines (stream 1 or 2) as they come.
  std::function<void(int, std::string_view)> on_lines;
  /// Called once at the deadline, after the local group got SIGKILL, with
  /// the remote process group from the marker (0 if none came): a remote
  /// slot kills the remote group here.
  std::function<void(long)> on_timeout;
  /// Called once when the marker names the remote process group.
  std::function<void(long)> on_marker;
  /// Remote slots: standard error starts with "poolrun-pgid N\n", which is
  /// taken out (see `remote_pgid`).
  bool strip_marker = false;
};

/// What `run_process` observed beyond the job result.
struct launch_outcome {
  job_result result;
  /// Errno of a failed start (the program was not found...), else 0.
  int spawn_error = 0;
  /// The remote process group from the marker, or 0.
  long remote_pgid = 0;
};

/// Starts `spec.argv` in a new process group and waits for it, capturing or
/// streaming its output; at the deadline SIGKILLs the whole group. Blocks
/// the calling thread; safe from several threads at once.
launch_outcome run_process(const launch_spec& spec);

/// Output kept in memory beyond this many bytes per stream goes to a spool
/// file; so does all output while poolrun holds more than `output_budget`
/// bytes of unprinted output in memory.
constexpr size_t spool_threshold = 1024 * 1024;
constexpr size_t output_budget = 64 * 1024 * 1024;

/// Spawns `argv` in a new process group with the given standard streams
/// (-1: /dev/null for input, inherited for output) and `env` added;
/// returns its pid, or -errno.
pid_t spawn_process(const std::vector<std::string>& argv,
                    const std::vector<std::string>& env, int in_fd,
                    int out_fd, int err_fd);

/// Bytes of unprinted command output held in memory now.
size_t held_output_bytes();

/// Writes a result's output: memory part, then the spooled rest, of
/// stream 1 to `out_fd` and stream 2 to `err_fd`, each line prefixed with
/// `tag` when it is not empty. Returns false when a write failed.
bool write_output(const job_result& res, int out_fd, int err_fd,
                  const std::string& tag);

/// Writes `text` whole to `fd` (retrying short writes). False on error.
bool write_all(int fd, std::string_view text);

// -- stopping -----------------------------------------------------------------

/// An attempt of a job is about to start its command. Returns true when
/// it may; then `attempt_done` must follow when it has ended. While poolrun
/// stops starting (`stop_starting`) it waits (parked) until
/// `release_parked`, and returns false. Thread-safe.
bool attempt_begins();

/// The attempt that `attempt_begins` let start has ended. Thread-safe.
void attempt_done();

/// Attempts started and not ended now; attempts ended so far.
size_t attempts_running();
uint64_t attempts_ended();

/// From now on an attempt about to start waits (parked) instead, until
/// `release_parked`. Safe from any thread.
void stop_starting();

/// Parked and future attempts do not start. Safe from any thread.
void release_parked();

/// Sends `sig` to every running command's process group; returns how many.
size_t signal_all_commands(int sig);

/// As `signal_all_commands(SIGKILL)`, and nothing starts or reports again
/// (threads wait for the process to end). Right before terminating.
size_t kill_all_commands();

} // namespace poolrun
