// Input sources combined and grouped into the arguments of each command.
#include "inputs.hpp"

#include <algorithm>
#include <cmath>

#include "console.hpp"
#include "user_regex.hpp"

namespace poolrun {

namespace {

/// `:::` values are records too, as in GNU parallel: one holding the
/// delimiter (a newline, or -d's) is several (`-d " " ::: "1 done"`: 1
/// and done; `-d , ::: a,` : a and "").
std::vector<std::string> split_values(const std::vector<std::string>& values,
                                      const std::string& delimiter) {
  std::vector<std::string> result;
  result.reserve(values.size());
  for (auto& value : values) {
    size_t begin = 0;
    for (auto at = value.find(delimiter); at != std::string::npos;
         at = value.find(delimiter, begin)) {
      result.push_back(value.substr(begin, at - begin));
      begin = at + delimiter.size();
    }
    result.push_back(begin == 0 ? value : value.substr(begin));
  }
  return result;
}

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/// --trim: `value` without white space at the ends the filter says.
void trim(std::string& value, bool left, bool right) {
  if (right)
    while (!value.empty() && is_blank(value.back()))
      value.pop_back();
  if (left) {
    size_t n = 0;
    while (n < value.size() && is_blank(value[n]))
      ++n;
    value.erase(0, n);
  }
}

} // namespace

std::unique_ptr<job_inputs> job_inputs::open(const run_options& opts,
                                             grouping group,
                                             std::string& error) {
  auto sources = opts.sources;
  if (sources.empty()) {
    input_source in;
    in.is_file = true;
    in.path = "-";
    sources.push_back(in);
  }
  std::unique_ptr<job_inputs> result{new job_inputs};
  result->group_ = std::move(group);
  auto& filter = result->filter_;
  filter.eof = opts.eof_str;
  if (!opts.colsep.empty())
    filter.colsep.emplace(user_regex(opts.colsep)); // checked by the CLI
  filter.trim_left = opts.trim.find('l') != std::string::npos;
  filter.trim_right = opts.trim.find('r') != std::string::npos;
  filter.skip_empty = opts.skip_empty;
  // Which sources sit side by side: --link joins all, `:::+` one pair.
  std::vector<std::vector<const input_source*>> layout;
  for (auto& src : sources) {
    if (layout.empty() || !(opts.link || src.linked))
      layout.emplace_back();
    layout.back().push_back(&src);
  }
  bool stream_first = layout[0].size() == 1 && layout[0][0]->is_file;
  result->groups_.resize(layout.size());
  for (size_t g = 0; g < layout.size(); ++g) {
    auto& grp = result->groups_[g];
    for (auto src : layout[g]) {
      source_data data;
      if (!src->is_file) {
        data.values = split_values(src->values, opts.delimiter);
        data.bad.assign(data.values.size(), false);
      } else {
        auto reader = record_reader::open(src->path, opts.delimiter, error);
        if (!reader)
          return nullptr;
        if (g == 0 && stream_first) {
          // --header: its lines are read now, the rest as it comes.
          std::string value;
          bool bad = false;
          if (opts.skip_first_line && src->path == "-")
            reader->next(value, bad);
          for (size_t i = 0; i < header_lines(opts); ++i)
            if (reader->next(value, bad))
              result->add_header_names(value, i == 0);
          result->stream_ = std::move(reader);
          continue;
        }
        std::string value;
        bool bad = false;
        while (reader->next(value, bad)) {
          data.values.push_back(value);
          data.bad.push_back(bad);
        }
        if (!reader->error().empty()) {
          error = reader->error();
          return nullptr;
        }
      }
      for (size_t i = 0; i < header_lines(opts) && !data.values.empty();
           ++i) {
        result->add_header_names(data.values.front(), i == 0);
        data.values.erase(data.values.begin());
        data.bad.erase(data.bad.begin());
      }
      // -E: each source ends at the value STR, as in GNU parallel.
      if (!opts.eof_str.empty()) {
        auto end = std::find(data.values.begin(), data.values.end(),
                             opts.eof_str);
        auto n = static_cast<size_t>(end - data.values.begin());
        // (As GNU parallel: a source cut to nothing is one empty value.)
        data.values.resize(std::max<size_t>(n, 1));
        data.bad.resize(std::max<size_t>(n, 1));
        if (n == 0) {
          data.values.front().clear();
          ++result->cut_sources_;
        }
      }
      if (data.values.empty())
        result->empty_ = true; // nothing to combine with
      // --link wraps the shorter sources; `:::+` cuts to the shortest.
      if (grp.sources.empty())
        grp.size = data.values.size();
      else if (opts.link)
        grp.size = std::max(grp.size, data.values.size());
      else
        grp.size = std::min(grp.size, data.values.size());
      grp.sources.push_back(std::move(data));
    }
  }
  result->source_count_ = sources.size();
  if (result->cut_sources_ == sources.size())
    result->empty_ = true; // -E cut every source to nothing
  result->index_.assign(layout.size(), 0);
  return result;
}

size_t header_lines(const run_options& opts) {
  if (opts.header.empty() || is_header_pattern(opts.header))
    return 0;
  return opts.header == ":" ? 1 : std::stoul(opts.header); // checked by the CLI
}

bool is_header_pattern(const std::string& header) {
  return header != ":" &&
         (header.empty() || header.size() > 6 ||
          header.find_first_not_of("0123456789") != std::string::npos);
}

void job_inputs::add_header_names(const std::string& line, bool first) {
  if (!first)
    return; // further header lines are skipped
  // Names are trimmed as values are (a "\r\n" line end: GNU parallel).
  auto& f = filter_;
  if (!f.colsep) {
    header_names_.push_back(line);
    trim(header_names_.back(), f.trim_left, f.trim_right);
    return;
  }
  std::sregex_token_iterator i{line.begin(), line.end(), *f.colsep, -1};
  for (; i != std::sregex_token_iterator{}; ++i) {
    header_names_.push_back(*i);
    trim(header_names_.back(), f.trim_left, f.trim_right);
  }
}

void job_inputs::before_blocking(std::function<void()> hook) {
  if (stream_)
    stream_->before_blocking(std::move(hook));
}

std::string job_inputs::error() const {
  return stream_ ? stream_->error() : std::string{};
}

void job_inputs::append_group(size_t g, size_t index, record& out,
                              bool& bad) const {
  for (auto& src : groups_[g].sources) {
    auto i = index % src.values.size();
    out.push_back(src.values[i]);
    bad = bad || src.bad[i];
  }
}

bool job_inputs::next_first(record& out, bool& bad) {
  out.clear();
  bad = false;
  if (stream_) {
    out.emplace_back();
    // -E: this source ends at the value STR.
    if (stream_ended_ || !stream_->next(out.back(), bad))
      return false;
    if (!filter_.eof.empty() && out.back() == filter_.eof) {
      stream_ended_ = true;
      // (As GNU parallel: a source cut to nothing is one empty value.)
      out.back().clear();
      // ... unless every source is: then there is nothing to run.
      return !stream_read_ && cut_sources_ + 1 < source_count_;
    }
    stream_read_ = true;
    return true;
  }
  if (first_index_ >= groups_[0].size)
    return false;
  append_group(0, first_index_++, out, bad);
  return true;
}

namespace {

bool all_blank(const std::string& value) {
  return std::all_of(value.begin(), value.end(), is_blank);
}

} // namespace

bool job_inputs::next_record(record& out, bool& bad) {
  auto& f = filter_;
  for (;;) {
    if (!next_raw_record(out, bad))
      return false;
    if (f.colsep) {
      record columns;
      for (auto& value : out) {
        std::sregex_token_iterator i{value.begin(), value.end(), *f.colsep,
                                     -1};
        for (; i != std::sregex_token_iterator{}; ++i)
          columns.push_back(*i);
        if (value.empty())
          columns.emplace_back();
      }
      out = std::move(columns);
    }
    for (auto& value : out)
      trim(value, f.trim_left, f.trim_right);
    if (f.skip_empty && std::all_of(out.begin(), out.end(), all_blank))
      continue; // -r
    return true;
  }
}

bool job_inputs::next_raw_record(record& out, bool& bad) {
  if (empty_)
    return false;
  if (!have_first_) {
    if (!next_first(first_, first_bad_))
      return false;
    have_first_ = true;
    std::fill(index_.begin(), index_.end(), 0);
  }
  out = first_;
  bad = first_bad_;
  for (size_t g = 1; g < groups_.size(); ++g)
    append_group(g, index_[g], out, bad);
  // The last source varies fastest.
  size_t g = groups_.size();
  while (g > 1) {
    --g;
    if (++index_[g] < groups_[g].size)
      return true;
    index_[g] = 0;
  }
  have_first_ = false;
  return true;
}

bool job_inputs::next(arguments& out, bool& bad) {
  out.clear();
  bad = false;
  record rec;
  bool rec_bad = false;
  if (!group_.fill) {
    auto want = group_.drop ? 1 : std::max<size_t>(group_.per_command, 1);
    bool goes_on = false;
    for (size_t lines = 0; lines < want && next_record(rec, rec_bad);) {
      bad = bad || rec_bad;
      if (goes_on && rec.size() == 1)
        out.back()[0] += rec[0]; // "ole " and "bar": one "ole bar"
      else
        out.push_back(std::move(rec));
      auto& last = out.back();
      goes_on = group_.continued_lines && last.size() == 1 &&
                !last[0].empty() &&
                (last[0].back() == ' ' || last[0].back() == '\t');
      if (!goes_on)
        ++lines;
    }
    if (out.empty())
      return false;
    if (group_.drop)
      out.clear();
    return true;
  }
  // -X/-m: read ahead as far as `slots` full commands.
  if (spread_ == 0 && !ended_) {
    size_t ahead_cost = 0;
    for (auto& x : ahead_)
      ahead_cost += group_.cost(x.first);
    auto limit = group_.budget * std::max<size_t>(group_.slots, 1);
    while (ahead_cost <= limit) {
      if (!next_record(rec, rec_bad)) {
        ended_ = true;
        break;
      }
      ahead_cost += group_.cost(rec);
      ahead_.emplace_back(std::move(rec), rec_bad);
    }
    if (ended_ && !ahead_.empty()) {
      auto slots = std::max<size_t>(group_.slots, 1);
      spread_ = (ahead_.size() + slots - 1) / slots;
    }
  }
  if (ahead_.empty())
    return false;
  size_t used = 0;
  while (!ahead_.empty()) {
    if (spread_ > 0 ? out.size() >= spread_
                    : (!out.empty() &&
                       used + group_.cost(ahead_.front().first) >
                           group_.budget))
      break;
    used += group_.cost(ahead_.front().first);
    bad = bad || ahead_.front().second;
    out.push_back(std::move(ahead_.front().first));
    ahead_.pop_front();
  }
  return true;
}

// -- --pipe --------------------------------------------------------------------

pipe_blocks::pipe_blocks(record_reader& in, pipe_cut how)
    : in_(in),
      block_(std::max<size_t>(how.block, 1)),
      lines_per_record_(how.lines_per_record),
      recend_(std::move(how.recend)),
      boundary_(recend_ + how.recstart),
      recstart_size_(how.regexp ? 1 : how.recstart.size()),
      records_(how.records),
      in_place_(how.in_place) {
  if (how.regexp) // checked by the CLI
    boundary_re_ = user_regex("(?:" + recend_ + ")(?=" + how.recstart + ")");
}

size_t pipe_blocks::next_cut(size_t from) const {
  if (lines_per_record_ > 0) {
    // Records of N lines, counted from the block's start.
    size_t lines = 0;
    for (size_t at = carry_.find('\n'); at != std::string::npos;
         at = carry_.find('\n', at + 1))
      if (++lines % lines_per_record_ == 0 && at + 1 > from)
        return at + 1;
    return std::string::npos;
  }
  if (boundary_re_) {
    // A block is never empty: a match ending where it starts is no cut.
    std::smatch m;
    auto flags = std::regex_constants::match_default;
    for (auto at = from; at <= carry_.size(); ++at) {
      if (at > 0)
        flags |= std::regex_constants::match_prev_avail;
      if (!std::regex_search(carry_.begin() + static_cast<std::ptrdiff_t>(at),
                             carry_.end(), m, *boundary_re_, flags))
        return std::string::npos;
      auto end = at + static_cast<size_t>(m.position(0) + m.length(0));
      if (end > from)
        return end;
    }
    return std::string::npos;
  }
  // A record end of nothing (only --recstart, or --recend ''): the next
  // cut lies after `from`, so every block holds something.
  if (recend_.empty())
    from += 1;
  auto hit = carry_.find(boundary_, from);
  return hit == std::string::npos ? hit : hit + recend_.size();
}

size_t pipe_blocks::last_cut(size_t limit) const {
  if (lines_per_record_ > 0) {
    size_t last = std::string::npos;
    size_t lines = 0;
    for (size_t at = carry_.find('\n'); at != std::string::npos && at < limit;
         at = carry_.find('\n', at + 1))
      if (++lines % lines_per_record_ == 0)
        last = at + 1;
    return last;
  }
  if (boundary_re_) {
    size_t last = std::string::npos;
    for (size_t at = 0;
         (at = next_cut(at)) != std::string::npos && at <= limit;)
      last = at;
    return last;
  }
  if (limit < recend_.size() + (recend_.empty() ? 1 : 0))
    return std::string::npos;
  auto hit = carry_.rfind(boundary_, limit - recend_.size());
  if (hit == std::string::npos || hit + recend_.size() == 0)
    return std::string::npos;
  return hit + recend_.size();
}

bool pipe_blocks::next_matching(const std::regex& pattern, std::string& out) {
  std::string more;
  while (!eof_ && carry_.size() < block_) {
    if (!in_.read_raw(more, block_ - carry_.size()))
      eof_ = true;
    carry_ += more;
  }
  std::smatch m;
  out.clear();
  if (!std::regex_search(carry_, m, pattern,
                         std::regex_constants::match_continuous))
    return false;
  out.assign(carry_, 0, static_cast<size_t>(m.length(0)));
  carry_.erase(0, out.size());
  return true;
}

void pipe_blocks::grow_block(size_t needed) {
  constexpr size_t two_gb = (size_t{1} << 31) - 1; // GNU parallel's cap
  for (auto old = block_; block_ < needed && block_ < two_gb; old = block_) {
    block_ = std::min(two_gb, static_cast<size_t>(std::ceil(1.3 * old + 1)));
    auto sizes = std::to_string(old) + ". Increasing to --blocksize ";
    console::message("Warning: A record was longer than " + sizes +
                     std::to_string(block_) + ".");
  }
}

bool pipe_blocks::next(std::string& out) {
  std::string more;
  for (;;) {
    size_t cut = std::string::npos;
    if (records_ > 0) {
      // N records: up to the N-th record end.
      size_t pos = 0;
      size_t found = 0;
      while (found < records_) {
        auto next = next_cut(pos);
        if (next == std::string::npos)
          break;
        pos = next;
        ++found;
      }
      if (found == records_)
        cut = pos;
    } else if (in_place_) {
      // --pipepart: at least the block, up to the next record end.
      if (carry_.size() > block_)
        cut = next_cut(block_);
    } else if (carry_.size() >= block_ || eof_) {
      // The last record end within the block; else (a record longer than
      // the block) the first one after.
      cut = last_cut(std::min(block_, carry_.size()));
      if (cut == std::string::npos) {
        // A record longer than the block: it grows as GNU parallel's does
        // (for good), and is cut as if it had been that big.
        auto first = next_cut(0);
        grow_block(first != std::string::npos ? first + recstart_size_
                                              : carry_.size() + 1);
        if (first != std::string::npos && (carry_.size() >= block_ || eof_)) {
          auto last = last_cut(std::min(block_, carry_.size()));
          cut = last == std::string::npos ? first : last;
        }
      }
    }
    if (cut == std::string::npos && eof_) {
      if (carry_.empty())
        return false;
      cut = carry_.size();
    }
    if (cut != std::string::npos) {
      out.assign(carry_, 0, cut);
      carry_.erase(0, cut);
      return true;
    }
    auto want = carry_.size() < block_ ? block_ - carry_.size() : 65536;
    if (!in_.read_raw(more, want))
      eof_ = true;
    carry_ += more;
  }
}

} // namespace poolrun
