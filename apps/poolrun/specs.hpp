// Parsers for option values: durations, sizes, -j, --halt.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <caf/timespan.hpp>

#include "options.hpp"

namespace poolrun {

/// Parses a duration such as `500ms`, `2s`, `1.5s`, `1min`, `1m`, `1h`,
/// `1d`, `250us`; a plain number means seconds, as in GNU parallel.
/// Nothing for malformed or negative input.
std::optional<caf::timespan> parse_duration(std::string_view text);

/// Parses a size such as `1M`, `512k`, `10` (bytes), with GNU parallel's
/// binary multipliers k M G T (also lower-case m g t). Nothing for
/// malformed input or zero.
std::optional<size_t> parse_size(std::string_view text);

/// Parses `-j`: `N`, `N%`, `+N`, `-N`, `0`.
std::optional<jobs_spec> parse_jobs(std::string_view text);

/// Parses `--halt`: `never`, `soon,fail=N`, `now,success=N%`, `done=`, and
/// the old forms `0 1 2 -1 -2` and `N%`. On failure returns nothing and
/// sets `why`.
std::optional<halt_spec> parse_halt(std::string_view text, std::string& why);

/// Parses `--_parset`'s value ("var,a,b", "var,arr", "assoc,name"; ','
/// or ' ' between) into `o`; returns what is wrong, or "".
std::string parse_parset(std::string_view text, run_options& o);

/// --compress: the first of GNU parallel's compressors in $PATH (pzstd,
/// lbzip2, ..., gzip, ...) with "-c -1", else "cat".
std::string find_compress_program();

/// GNU parallel's own error for a --halt value it refuses ("Error: --halt
/// must have 'never', 'soon', or 'now'."), "" for one it takes: the
/// words poolrun prints when invoked as `parallel`.
std::string gnu_halt_error(std::string_view text);

/// Parses a whole number in [min, max].
std::optional<uint64_t> parse_count(std::string_view text, uint64_t min,
                                    uint64_t max);

} // namespace poolrun
