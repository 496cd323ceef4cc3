// What poolrun writes about finished jobs: their output (whole, in order
// with -k), --results files, and the joblog, in GNU parallel's forms.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "feeder.hpp"
#include "job.hpp"
#include "joblog.hpp"
#include "options.hpp"

namespace poolrun {

/// Used by one thread (the runner's).
class reporter {
public:
  explicit reporter(const run_options& opts);

  /// Opens the joblog (appending when resuming). Returns an error or "".
  std::string open_joblog(bool append);

  /// Job `job` finished with `res` (nothing: skipped, not started, or
  /// killed by --halt now; `log`: whether it gets a joblog line). Writes
  /// its --results files now, and its output and joblog line now or,
  /// with -k, once the jobs before it are done.
  void finished(const pending_job& job, std::optional<job_result> res,
                bool log = true, bool dry = false);

  /// --dry-run: prints the command of `job` (in order with -k).
  void dry_run(const pending_job& job, size_t slots);

  /// Prints what -k still holds back, in order, gaps skipped.
  void flush_held();

  /// Outputs that could not be kept where the options said (--results,
  /// --files, a failed --compress-program), each said on standard error:
  /// the run then ends with poolrun's own error status, as GNU parallel's
  /// does not end 0 either.
  size_t lost_outputs() const noexcept {
    return lost_outputs_;
  }

private:
  /// Says `why` an output was lost, and counts it.
  void lost(const std::string& why);

  struct held {
    std::optional<job_result> res;
    std::string tag;
    bool log = true;
    bool dry = false;
    std::vector<std::string> values;
  };

  void emit(uint64_t seq, const held& h);
  /// --_parset: the job's standard output as shell code (reporter_json.cpp).
  void write_parset(const held& h, const std::string& tag, bool command);
  void write_results(const pending_job& job, const job_result& res);
  /// --results --compress: the output through the compressor into the
  /// files (reporter_json.cpp).
  void write_compressed(const job_result& res, int out_fd, int err_fd);
  std::string compressor_;
  /// `--results X.json`: the job's line (reporter_json.cpp).
  void write_json(uint64_t seq, const held& h);

  const run_options& opts_;
  joblog_writer joblog_;
  uint64_t next_ = 1;
  std::map<uint64_t, held> held_;
  /// `--results X.json`: where the lines go (-1: not opened yet).
  int json_fd_ = -1;
  /// --_parset var,...: the next variable to set.
  size_t next_parset_ = 0;
  size_t lost_outputs_ = 0;
};

} // namespace poolrun
