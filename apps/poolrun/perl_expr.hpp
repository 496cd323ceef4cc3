// Perl replacement strings ({= perl =}, --rpl, --plus): evaluated by one
// perl co-process per run, started only when a template has one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <sys/types.h>

namespace poolrun {

/// `--rpl 'TAG PERL'` and `--plus`: (tag, perl expression) pairs, the
/// later ones winning.
using rpl_table = std::vector<std::pair<std::string, std::string>>;

/// GNU parallel's `--plus` strings ({+/}, {..}, {%suffix}, {uniq}...).
const rpl_table& plus_strings();

/// A perl interpreter evaluating replacement expressions as GNU parallel
/// does: `$_` is the argument, the value becomes the replacement (shell
/// quoted unless the expression called `uq()`); `@arg` holds the job's
/// arguments, `$job->seq()`, `seq()`, `skip()`, `Q()`, `pQ()`, `hash()`,
/// `yyyy_mm_dd()` and the other time functions work. Each expression is
/// evaluated once per argument and job (`begin_job`). Requests and replies
/// travel over two pipes of their own (never a shell command line); the
/// expressions' own output goes to poolrun's standard output and error.
/// Used by one thread at a time (the feeder's); not thread-safe.
class perl_evaluator {
public:
  struct value {
    std::string text;
    /// `uq()` was called: the value goes in unquoted.
    bool unquoted = false;
  };

  /// `rpls`: the --rpl and --plus strings templates are parsed with.
  explicit perl_evaluator(rpl_table rpls);
  ~perl_evaluator();

  perl_evaluator(const perl_evaluator&) = delete;
  perl_evaluator& operator=(const perl_evaluator&) = delete;

  const rpl_table& rpls() const noexcept {
    return rpls_;
  }

  /// Compiles `expr` (perl starts with the first); its id for `evaluate`.
  /// A failure is kept in `error()`.
  size_t compile(const std::string& expr);

  /// An expression asks for `total_jobs()`: the whole input is read
  /// first, and `set_total` says how many jobs there are.
  bool wants_total() const noexcept {
    return wants_total_;
  }
  void set_total(uint64_t total);

  /// A new job: `seq` and its arguments (`@arg`); forgets cached values.
  void begin_job(uint64_t seq, const std::vector<std::string>& args);

  /// Expression `id` with `$_` = `arg`, the job's argument number
  /// `index` (cached per job and index).
  const value& evaluate(size_t id, size_t index, std::string_view arg);

  /// An expression of this job called `skip()`.
  bool skipped() const noexcept {
    return skipped_;
  }

  /// Why an expression cannot be used (it did not compile, perl is
  /// missing or ended); "" while all is well.
  const std::string& error() const noexcept {
    return error_;
  }

private:
  bool start();
  bool send(const std::string& data);
  bool read_line(std::string& line);
  bool read_bytes(size_t n, std::string& out);
  /// Appends what one read from perl gives to `buffer_`; false (and the
  /// error set) when perl has gone.
  bool read_more();
  void fail(std::string why);

  rpl_table rpls_;
  std::vector<std::string> sources_;
  bool wants_args_ = false;
  bool wants_total_ = false;
  pid_t pid_ = -1;
  int to_perl_ = -1;
  int from_perl_ = -1;
  std::string buffer_;
  std::string error_;
  uint64_t seq_ = 0;
  bool skipped_ = false;
  std::map<std::pair<size_t, size_t>, value> cache_;
};

} // namespace poolrun
