// What a pool worker does with a job: take a slot, run the command there
// (locally, or over the slot's ssh connection), give the slot back.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <cstddef>
#include <memory>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/expected.hpp>
#include <caf/timespan.hpp>

#include "job.hpp"
#include "options.hpp"
#include "slots.hpp"

namespace poolrun {

/// Shared by all workers of a run. Thread-safe.
struct executor {
  std::shared_ptr<slot_table> slots;
  std::string shell;
  std::optional<caf::timespan> timeout;
  output_mode mode = output_mode::group;
  /// PARALLEL_PID.
  std::string pid_text;
  /// --cleanup: remove transferred and returned files on the host.
  bool cleanup = false;
  /// Hosts each job failed on (with several hosts), to retry elsewhere.
  std::mutex failed_mtx;
  std::unordered_map<uint64_t, std::vector<size_t>> failed_on;
  std::atomic<size_t> next_worker{0};
  /// -t: each command on standard error as it starts.
  bool trace = false;
  /// `$PARALLEL_ENV` (or the file it names): shell code run before every
  /// local command, as GNU parallel runs it (env_parallel's way in).
  std::string env_prelude;
  /// --pipepart and --tee: a command need not read its whole block (as
  /// GNU parallel's `tee --output-error=warn-nopipe`).
  bool pipepart = false;
  /// --timeout: running local commands by deadline (and seq), each with
  /// whether its warning is out (see run_local).
  std::mutex deadlines_mtx;
  std::map<std::pair<std::chrono::steady_clock::time_point, uint64_t>,
           std::pair<std::string, bool>>
      deadlines;
  /// `--wd` (see run_options::workdir).
  std::string workdir;
  /// `--process-slot-var NAME`: "NAME=" (empty: none).
  std::string slot_var;
  /// --delay: at least this between two starts; `next_start` under
  /// `delay_mtx`.
  caf::timespan delay{0};
  std::mutex delay_mtx;
  std::chrono::steady_clock::time_point next_start;
  /// --line-buffer: writes lines of a stream (1, 2) with a job's tag.
  std::function<void(int, const std::string&, std::string_view)> line_sink;
};

/// The whole of the file `path`; `ok` tells whether it could be read.
std::string read_whole(const std::string& path, bool& ok);

/// A worker's resource: the slot it prefers (its own).
struct slot_affinity {
  size_t preferred = 0;
};

/// Makes the resource of a new worker: the next slot number, round.
slot_affinity make_affinity(executor& ex);

/// Runs `spec` on a slot (preferably `me`'s) and reports the attempt: the
/// result, or an error of category "poolrun" carrying it (a failed
/// command, a timeout, a lost host, a start refused while stopping).
/// Blocks the worker's thread.
caf::expected<job_result> execute(executor& ex, slot_affinity& me,
                                  const job_spec& spec);

} // namespace poolrun
