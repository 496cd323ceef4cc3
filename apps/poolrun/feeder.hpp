// The feeder: a thread reading the input sources, building each job's
// command, and passing jobs on to the runner in batches as credit allows.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>
#include <caf/meta/type_name.hpp>

#include "command_template.hpp"
#include "inputs.hpp"
#include "job.hpp"
#include "options.hpp"
#include "perl_expr.hpp"
#include "results_dir.hpp"

namespace poolrun {

/// A job as the runner holds it.
struct pending_job {
  job_spec spec;
  /// --tag / --tagstring prefix of each output line, "" for none.
  std::string tag;
  /// --results: where its output goes ("" none); a directory
  /// (seq, stdout, stderr in it) or a file prefix (path, .err, .seq).
  std::string results;
  bool results_dir = false;
  /// Why it cannot run (a NUL byte, too long): it is reported, not started.
  std::string error;
  /// A perl expression called skip(): the job is not run (a failure).
  bool skip = false;
  /// `--results X.json`: the job's values (the line's "V").
  std::vector<std::string> values;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, pending_job& x) {
  return f(caf::meta::type_name("poolrun::pending_job"), x.spec, x.tag,
           x.results, x.results_dir, x.error, x.skip, x.values);
}

/// The longest command poolrun starts: the kernel's limit for one argument
/// (`sh -c COMMAND`), less room for a remote slot's wrapper.
constexpr size_t max_command_length = 131072 - 1 - 1024;

/// Turns input into jobs on a thread of its own. The runner receives
/// `(feed, std::vector<pending_job>)` batches and finally `(feed_end,
/// uint64_t total, std::string error)`, and gives credit back with
/// `consumed`. Thread-safe.
class feeder {
public:
  /// `window`: jobs the runner may hold unconsumed (0: no limit).
  /// `low_water`: below this many unconsumed jobs a batch goes at once.
  feeder(run_options opts, std::unique_ptr<job_inputs> inputs,
         size_t window, size_t low_water);
  ~feeder();

  feeder(const feeder&) = delete;
  feeder& operator=(const feeder&) = delete;

  /// Starts reading; jobs go to `runner`.
  void start(caf::actor runner);

  /// The runner took `n` jobs off its hands.
  void consumed(size_t n);

  /// Stops passing on jobs (the thread may still wait in a read; it is
  /// left behind).
  void stop();

  /// Whether the thread has passed on everything (and ended).
  bool finished() const noexcept {
    return done_;
  }

  /// The job for `args` as job `seq` (public for tests).
  pending_job make_job(const arguments& args, uint64_t seq, bool bad) const;

  /// Why a perl replacement string cannot be used ("" when none is or
  /// all is well): checked before the run starts.
  std::string perl_error() const;

private:
  void run();
  bool skip_block(const std::string& block) const;
  /// --tee: all of standard input (or the --pipepart file) into `all`.
  bool read_all_input(std::string& all, std::string& error) const;
  /// --rrs: `block` without its last record end and first record start.
  void remove_separators(std::string& block) const;
  void flush(bool wait_for_credit);

  run_options opts_;
  std::unique_ptr<job_inputs> inputs_;
  /// Only with {= =}, --rpl or --plus (else no perl starts).
  std::shared_ptr<perl_evaluator> perl_;
  command_template command_;
  /// The command's values go in unquoted (`{}` as its first word).
  bool quote_values_ = true;
  command_template tagstring_;
  command_template results_;
  command_template retries_;
  bool results_templated_ = false;
  std::vector<command_template> transfers_;
  std::vector<command_template> returns_;
  /// --tmpl: each file's name and content.
  std::vector<command_template> template_names_;
  std::vector<command_template> template_contents_;
  size_t window_;
  size_t low_water_;
  /// Weak: a feeder left behind must not keep the runner alive.
  caf::actor_addr runner_;
  std::vector<pending_job> batch_;
  std::mutex mtx_;
  std::condition_variable cv_;
  size_t outstanding_ = 0;
  /// The size of the batch a flush waits to pass on (0: none waits).
  size_t waiting_for_ = 0;
  std::atomic<bool> stopped_{false};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

/// The command template's text: the words joined by spaces, or with -q
/// each word quoted around its replacement strings.
std::string template_text(const run_options& opts);


} // namespace poolrun
