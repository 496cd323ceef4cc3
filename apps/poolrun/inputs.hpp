// The arguments of each command, from the input sources as GNU parallel
// combines them: every combination of the sources (the last varying
// fastest), linked sources side by side, grouped with -n/-N/-X/-m.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "command_template.hpp"
#include "options.hpp"
#include "record_reader.hpp"

namespace poolrun {

/// How records are grouped into commands.
struct grouping {
  /// Records per command (-n/-N); 0 with `fill`.
  size_t per_command = 1;
  /// -N0: one record read per command, none passed.
  bool drop = false;
  /// -L: `per_command` counts lines; a record ending in a blank goes on
  /// in the next (the two are one argument, as in GNU parallel).
  bool continued_lines = false;
  /// -X/-m: as many records as fit `budget` by `cost`; when the input ends
  /// within `slots` full commands, spread it evenly over `slots` commands.
  bool fill = false;
  size_t slots = 1;
  size_t budget = 0;
  std::function<size_t(const record&)> cost;
};

/// Yields the arguments of each command in order. Streams a single file
/// source (such as standard input); every other source is read whole
/// first. Used by one thread.
class job_inputs {
public:
  /// Opens `opts.sources` (standard input when there are none). Returns
  /// nullptr with `error` naming the file and cause when one cannot be
  /// read.
  static std::unique_ptr<job_inputs> open(const run_options& opts,
                                          grouping group, std::string& error);

  /// The next command's arguments into `out`; false at the end. `bad` is
  /// set when a record in it held a NUL byte (GNU parallel would run it
  /// with `\0`; poolrun refuses it).
  bool next(arguments& out, bool& bad);

  /// Called before a read that may block (see `record_reader`).
  void before_blocking(std::function<void()> hook);

  /// What went wrong reading, or "".
  std::string error() const;

  /// --header: the names of the fields, in order ({name} in a template).
  const std::vector<std::string>& header_names() const noexcept {
    return header_names_;
  }

private:
  struct source_data {
    std::vector<std::string> values;
    std::vector<bool> bad;
  };
  /// Sources side by side: record i takes value i (wrapping) of each.
  struct linked_group {
    std::vector<source_data> sources;
    size_t size = 0;
  };

  /// The next record after -E, --colsep, --trim and -r.
  bool next_record(record& out, bool& bad);
  bool next_raw_record(record& out, bool& bad);
  void add_header_names(const std::string& line, bool first);
  bool next_first(record& out, bool& bad);
  void append_group(size_t g, size_t index, record& out, bool& bad) const;

  /// What -E, --colsep, --trim and -r make of each record.
  struct record_filter {
    std::string eof;
    std::optional<std::regex> colsep;
    bool trim_left = false;
    bool trim_right = false;
    bool skip_empty = false;
  };

  grouping group_;
  record_filter filter_;
  std::vector<std::string> header_names_;
  /// The first group, streamed from `stream_` when it is one file.
  std::unique_ptr<record_reader> stream_;
  std::vector<linked_group> groups_;
  /// Position in the product: the first group's current record, and an
  /// index per later group.
  record first_;
  bool first_bad_ = false;
  bool have_first_ = false;
  size_t first_index_ = 0;
  std::vector<size_t> index_;
  bool empty_ = false;
  /// -E met in the streamed source.
  bool stream_ended_ = false;
  bool stream_read_ = false;
  /// -E: sources cut to nothing (one empty value), of all sources.
  size_t cut_sources_ = 0;
  size_t source_count_ = 0;
  /// -X/-m: records read ahead.
  std::deque<std::pair<record, bool>> ahead_;
  bool ended_ = false;
  /// -X/-m at the end: records per command to spread the rest evenly.
  size_t spread_ = 0;
};

/// --header: how many lines of each source are its header (0: none, or
/// a pattern).
size_t header_lines(const run_options& opts);

/// Whether --header's value is a regular expression (with --pipe: the
/// header is what it matches at the start), not ':' or a count.
bool is_header_pattern(const std::string& header);

/// How --pipe cuts its input into blocks.
struct pipe_cut {
  /// At most this many bytes a block (a longer record is one block).
  size_t block = 1024 * 1024;
  std::string recend = "\n";
  std::string recstart;
  /// -N: this many records a block instead (0: by size).
  size_t records = 0;
  /// -L N: a record is N lines (0: recend/recstart say).
  size_t lines_per_record = 0;
  /// --pipepart: each block runs from `block` bytes on to the next record
  /// end (as GNU parallel splits a file).
  bool in_place = false;
  /// --regexp: `recend` and `recstart` are regular expressions.
  bool regexp = false;
};

/// Cuts standard input into --pipe blocks: at most `block` bytes ending at
/// a record end (`recend`), or one record when a record is longer; with
/// `records` > 0, that many records per block instead.
class pipe_blocks {
public:
  pipe_blocks(record_reader& in, pipe_cut how);

  /// The next block into `out`; false at the end.
  bool next(std::string& out);

  /// What `pattern` matches at the start of the input into `out`
  /// (--header REGEX), taken off it; false if it matches nothing there.
  bool next_matching(const std::regex& pattern, std::string& out);

  /// Takes the first line off the input, whatever ends a record
  /// (--skip-first-line).
  void skip_line() {
    std::string more;
    while (!eof_ && carry_.find('\n') == std::string::npos) {
      if (!in_.read_raw(more, block_))
        eof_ = true;
      carry_ += more;
    }
    auto end = carry_.find('\n');
    carry_.erase(0, end == std::string::npos ? end : end + 1);
  }

  /// The next `n` records into `out` (--header); false at the end.
  bool next_records(size_t n, std::string& out) {
    auto saved = records_;
    records_ = n;
    auto more = next(out);
    records_ = saved;
    return more;
  }

private:
  record_reader& in_;
  size_t block_;
  size_t lines_per_record_;
  std::string recend_;
  /// `recend_ + recstart`: what a cut falls in (after `recend_`).
  std::string boundary_;
  size_t recstart_size_;
  /// --regexp: matches a record end followed by a record start; the cut
  /// is at the end of the match (the start is a lookahead).
  std::optional<std::regex> boundary_re_;

  /// Where a block may end: just after the first boundary at or after
  /// `from`, npos if none.
  size_t next_cut(size_t from) const;
  /// ... after the last boundary that ends a block of at most `limit`.
  size_t last_cut(size_t limit) const;
  /// Grows the block as GNU parallel does (by 1.3 and one, a warning
  /// each time) until it holds `needed` bytes.
  void grow_block(size_t needed);
  size_t records_;
  bool in_place_;
  std::string carry_;
  bool eof_ = false;
};

} // namespace poolrun
