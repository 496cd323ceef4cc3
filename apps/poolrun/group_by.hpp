// --group-by COLUMN with --pipe: consecutive lines with the same value in
// a column form one record, as GNU parallel groups them.
#pragma once

#include <cstddef>
#include <regex>
#include <string>

#include "inputs.hpp"

namespace poolrun {

/// Cuts --pipe input into blocks of whole groups: `per_block` groups a
/// block (-N), or as many as fit in `block_size` bytes (a longer group is
/// a block of its own).
class group_blocks {
public:
  /// `column` counts from 1; fields are separated by `colsep`.
  group_blocks(pipe_blocks& lines, size_t column, const std::string& colsep,
               size_t per_block, size_t block_size);

  /// The next block into `out`; false at the end.
  bool next(std::string& out);

private:
  /// The next group of lines into `out`; false at the end.
  bool next_group(std::string& out);
  std::string key_of(const std::string& line) const;

  pipe_blocks& lines_;
  size_t column_;
  std::regex colsep_;
  size_t per_block_;
  size_t block_size_;
  /// The first line of the next group, read already.
  std::string next_line_;
  bool has_next_line_ = false;
  /// A group read already that did not fit the block before.
  std::string next_group_;
  bool has_next_group_ = false;
};

} // namespace poolrun
