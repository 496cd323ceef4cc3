// --group-by: lines grouped by a column's value.
#include "group_by.hpp"

#include "user_regex.hpp"

namespace poolrun {

group_blocks::group_blocks(pipe_blocks& lines, size_t column,
                           const std::string& colsep, size_t per_block,
                           size_t block_size)
    : lines_(lines),
      column_(column),
      colsep_(user_regex(colsep)),
      per_block_(per_block),
      block_size_(block_size) {
  // Nothing else.
}

std::string group_blocks::key_of(const std::string& line) const {
  // As perl -a -F: the line's fields; a missing one is empty.
  auto end = line.end() - (!line.empty() && line.back() == '\n');
  std::sregex_token_iterator field{line.begin(), end, colsep_, -1};
  for (size_t i = 1; field != std::sregex_token_iterator{}; ++field, ++i)
    if (i == column_)
      return field->str();
  return {};
}

bool group_blocks::next_group(std::string& out) {
  if (has_next_line_) {
    out = std::move(next_line_);
    has_next_line_ = false;
  } else if (!lines_.next_records(1, out)) {
    return false;
  }
  auto key = key_of(out);
  std::string line;
  while (lines_.next_records(1, line)) {
    if (key_of(line) != key) {
      next_line_ = std::move(line);
      has_next_line_ = true;
      break;
    }
    out += line;
  }
  return true;
}

bool group_blocks::next(std::string& out) {
  out.clear();
  std::string group;
  for (size_t n = 0; per_block_ == 0 || n < per_block_; ++n) {
    if (has_next_group_) {
      group = std::move(next_group_);
      has_next_group_ = false;
    } else if (!next_group(group)) {
      break;
    }
    if (per_block_ == 0 && !out.empty() &&
        out.size() + group.size() > block_size_) {
      next_group_ = std::move(group);
      has_next_group_ = true;
      break;
    }
    out += group;
  }
  return !out.empty();
}

} // namespace poolrun
