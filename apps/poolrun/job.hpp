// One command as a pool operation: what a worker gets and what it returns.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <caf/binary_deserializer.hpp>
#include <caf/deserializer.hpp>
#include <caf/error.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>
#include <caf/meta/type_name.hpp>

namespace poolrun {

/// What a worker runs: the pool's operation. Serializable: a journal
/// stores it.
struct job_spec {
  /// The job's sequence number (`{#}`, joblog `Seq`), from 1.
  uint64_t seq = 0;
  /// The command for the shell, `{%}` still as `slot_mark`s.
  std::string command;
  /// `--pipe`: the block fed to the command's standard input.
  std::string input;
  /// `--transferfile` / `--return` paths, expanded (remote slots only).
  std::vector<std::string> transfer;
  std::vector<std::string> returns;
  /// `--line-buffer` with `--tag`/`--tagstring`: each line's prefix.
  std::string tag;
  /// `--tmpl`: files written before a local command starts (`{%}` still
  /// as `slot_mark`s in names and contents), and their contents.
  std::vector<std::string> template_names;
  std::vector<std::string> template_contents;
  /// `--retries` with replacement strings: attempts for this job, run by
  /// its worker (0: the run's --retries, run by the pool).
  uint32_t attempts = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_spec& x) {
  auto fields = [&](auto&... more) {
    return f(caf::meta::type_name("poolrun::job_spec"), x.seq, x.command,
             x.input, x.transfer, x.returns, x.tag, x.template_names,
             x.template_contents, more...);
  };
  if constexpr (std::is_base_of<caf::deserializer, Inspector>::value) {
    // A job written before `attempts` existed (a --journal or --queue of
    // an older poolrun) ends after its templates: it reads with the
    // run's --retries (attempts 0), so an upgrade loses no accepted job.
    if (auto err = fields())
      return err;
    auto bin = dynamic_cast<caf::binary_deserializer*>(&f);
    if (bin != nullptr && bin->remaining() == 0) {
      x.attempts = 0;
      return caf::error{};
    }
    return f(x.attempts);
  } else {
    return fields(x.attempts);
  }
}

/// A result's hold on memory and spool files: the bytes of output it keeps
/// in memory count against poolrun's output budget, and output beyond is
/// in unlinked temporary files; both are released with the last copy of
/// the result.
struct held_output {
  size_t bytes = 0;
  int out_fd = -1;
  int err_fd = -1;
  held_output() = default;
  held_output(const held_output&) = delete;
  held_output& operator=(const held_output&) = delete;
  ~held_output();
};

/// What one attempt of a command did. Serializable (the spooled part of
/// the output stays out of a journal).
struct job_result {
  /// The command as run (slot filled in).
  std::string command;
  /// Where it ran: ":" locally, else the sshlogin (joblog `Host`).
  std::string host = ":";
  /// Its job slot (`{%}`, PARALLEL_JOBSLOT), from 1.
  uint32_t slot = 0;
  /// Exit status; -1 when it timed out (GNU parallel's joblog); 0 when a
  /// signal ended it.
  int32_t exit_code = 0;
  /// The signal that ended it (SIGKILL after a timeout), 0 for none.
  int32_t signal = 0;
  bool timed_out = false;
  /// Wall-clock start, in nanoseconds since the Unix epoch.
  int64_t started_at = 0;
  /// From start to exit, in nanoseconds.
  int64_t runtime = 0;
  /// Bytes fed to its standard input (joblog `Send`) and written to its
  /// standard output (joblog `Receive`), spooled ones included.
  uint64_t sent = 0;
  uint64_t received = 0;
  /// Standard output and error kept in memory; the rest, if any, in the
  /// spool files of `held` (after these).
  std::string out;
  std::string err;
  std::shared_ptr<held_output> held;
  /// The connection to its host broke (remote slots): the command may not
  /// have run at all.
  bool host_lost = false;

  /// A non-zero exit status, a signal or a timeout.
  bool failed() const noexcept {
    return timed_out || exit_code != 0 || signal != 0;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_result& x) {
  return f(caf::meta::type_name("poolrun::job_result"), x.command, x.host,
           x.slot, x.exit_code, x.signal, x.timed_out, x.started_at, x.runtime,
           x.sent, x.received, x.out, x.err, x.host_lost);
}

/// Why an attempt failed; the error's context is the attempt's
/// `job_result`. Numeric values are stored in journals: never renumber.
enum class poolrun_errc : uint8_t {
  /// Exited with a non-zero status or was ended by a signal.
  command_failed = 1,
  /// Killed because it ran past --timeout.
  timed_out = 2,
  /// Its host could not be reached or the connection broke.
  host_lost = 3,
  /// Not started: poolrun is stopping (Ctrl-C, --halt).
  not_started = 4,
};

/// Renders errors of the "poolrun" category (for caf's error rendering).
/// A job's outcome for humans: `./job.sh 86: exit 3 after 1.2s: disk quota
/// exceeded` (the command, what ended it, how long it ran, the last line
/// of its standard error), `...: timed out after 2s (killed)`.
std::string describe_result(const job_result& res);

std::string render_poolrun_error(uint8_t code, caf::atom_value category,
                                 const caf::message& context);

/// The job result an error carries: from a poolrun error's context, or from
/// the last attempt of a pool.operation_failed history. Nothing otherwise.
std::optional<job_result> result_of(const caf::error& err);

/// A failed attempt as the pool's error: category "poolrun", the result as
/// context.
caf::error failure_of(job_result res);

} // namespace poolrun

CAF_ERROR_CODE_ENUM(poolrun::poolrun_errc, "poolrun")
