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
  std::string colsep_;
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

/// --header: how many lines of each source are its header (0: none).
size_t header_lines(const run_options& opts);

/// Cuts standard input into --pipe blocks: at most `block` bytes ending at
/// a record end (`recend`), or one record when a record is longer; with
/// `records` > 0, that many records per block instead.
class pipe_blocks {
public:
  pipe_blocks(record_reader& in, size_t block, std::string recend,
              std::string recstart, size_t records);

  /// The next block into `out`; false at the end.
  bool next(std::string& out);

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
  std::string recend_;
  /// `recend_ + recstart`: what a cut falls in (after `recend_`).
  std::string boundary_;

  /// Where a block may end: just after the first boundary at or after
  /// `from`, npos if none.
  size_t next_cut(size_t from) const;
  /// ... after the last boundary that ends a block of at most `limit`.
  size_t last_cut(size_t limit) const;
  size_t records_;
  std::string carry_;
  bool eof_ = false;
};

} // namespace poolrun
