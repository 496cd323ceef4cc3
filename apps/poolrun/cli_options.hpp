// The option table of poolrun's command line (CLI11), shared by parsing
// and --help.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "options.hpp"

namespace poolrun {

/// The values of options that CLI11 stores as text, checked here.
struct raw_values {
  std::string jobs;
  std::string delimiter;
  std::string block;
  std::string retries;
  std::string retry_delay;
  std::string timeout;
  std::string halt;
  std::string status_interval;
  std::string queue_outage;
  std::vector<std::string> arg_files;
  std::vector<std::string> trc;
  bool transfer = false;
  bool null = false;
  bool ungroup = false;
  bool group = false;
  bool line_buffer = false;
  std::optional<size_t> exact_args;
  std::optional<size_t> max_args;
  std::optional<size_t> max_lines;
  std::string delay;
  std::string replace_i;
  bool replace_default = false;
  bool one_line = false;
  /// -I, --er, --bnr, --dnr, --bner, --seqreplace, --slotreplace.
  std::string replace_whole;
  std::string replace_ext;
  std::string replace_base;
  std::string replace_dir;
  std::string replace_base_ext;
  std::string replace_seq;
  std::string replace_slot;
  /// --tmpl FILE=NAME (repeatable).
  std::vector<std::string> tmpl;
  /// --rpl 'TAG PERL' (repeatable), --plus.
  std::vector<std::string> rpl;
  bool plus = false;
  std::optional<std::string> recend;
  bool ignored = false;
  bool pipepart = false;
  bool compress = false;
  /// --compress-program, --decompress-program: accepted, unused.
  std::string compress_program;
  std::string decompress_program;
  /// -J, --profile: read before the parse (see expand_profiles).
  std::vector<std::string> profiles;
  /// --_parset (see run_options::parset).
  std::string parset;
  std::string group_by;
  bool nonall = false;
};

/// Whether an empty value of `option` (its first long name, as CLI11's
/// `get_name` gives it) is an error rather than its default.
bool needs_value(const std::string& option);

/// For a GNU parallel option poolrun has not: that it is not supported
/// and what to use instead; "" for any other word.
std::string refused_option_advice(std::string_view option);

/// Rewrites GNU parallel's options with optional values among the
/// options at the front of `head` into -L N and -I STR: -l0, -l2, -l N
/// (a count), -i STR, -iSTR, --replace STR, --replace=STR (the next word
/// is the value unless it is an option, as in GNU parallel).
void spell_optional_values(std::vector<std::string>& head);

/// -I and the like, --rpl, --plus and --tmpl into `o`; returns what is
/// wrong, or "".
std::string finish_replacement_strings(run_options& o, raw_values& raw);

/// --group-by, --_parset and --wd checked into `o`; returns what is
/// wrong, or "".
std::string finish_added_options(run_options& o, const raw_values& raw);

/// Declares every option of `app`, storing into `o` and `raw`.
void define_options(CLI::App& app, run_options& o, raw_values& raw);

} // namespace poolrun
