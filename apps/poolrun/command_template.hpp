// A command template with GNU parallel's replacement strings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace poolrun {

class perl_evaluator;
struct template_piece;

/// One input record: a field per input source.
using record = std::vector<std::string>;

/// The records one command gets: one, or several with -n/-N/-X/-m.
using arguments = std::vector<record>;

/// Stands for the job slot (`{%}`) in an expanded command until a worker
/// knows it (`fill_slot`). Input can hold no NUL byte, so no clash.
constexpr char slot_mark = '\0';

/// A parsed template: literal text and replacement strings `{}` `{.}` `{/}`
/// `{//}` `{/.}` `{#}` `{%}` and positional `{n}` `{n.}` `{n/}` `{n//}`
/// `{n/.}` (`{-n}`: from the end). Anything else in braces is text. Immutable; safe to share.
class command_template {
public:
  enum class op : uint8_t {
    text,
    whole,           // {}
    no_extension,    // {.}
    basename,        // {/}
    dirname,         // {//}
    basename_no_ext, // {/.}
    seq,             // {#}
    slot,            // {%}
    perl,            // {= perl =}, --rpl, --plus (`expr`: its id)
  };

  struct part {
    op kind = op::text;
    /// The text (kind text).
    std::string text;
    /// 1-based index into the flattened fields, from the end when
    /// negative (`{-1}`: the last); 0: all of them.
    int64_t position = 0;
    /// op::perl: the expression's id in the evaluator.
    size_t expr = 0;
  };

  command_template() = default;

  /// Strings standing for standard ones: (string, spelling such as
  /// "{}" or "{//}"); the standard spelling is text then (-I, --dnr...).
  using custom_strings = std::vector<std::pair<std::string, std::string>>;

  /// Parses `text`. With `context_replace` (-X), each word holding an
  /// argument replacement repeats once per record. `names` (--header) are
  /// the fields' names: `{name}` is field n. With `perl`, `{= perl =}`
  /// and its --rpl/--plus strings are expressions it evaluates (the
  /// feeder calls its `begin_job` before `expand`).
  explicit command_template(std::string_view text,
                            bool context_replace = false,
                            const custom_strings& custom = {},
                            std::vector<std::string> names = {},
                            std::shared_ptr<perl_evaluator> perl = nullptr);

  /// The parsed parts (a replacement's `text`: its spelling).
  const std::vector<part>& parts() const noexcept {
    return parts_;
  }

  bool empty() const noexcept {
    return parts_.empty();
  }

  /// Whether any replacement string occurs (else arguments are appended).
  bool has_replacements() const noexcept {
    return has_replacements_;
  }

  /// What goes between the values of a replacement with several (a
  /// space; --tmpl's files: nothing, as GNU parallel writes them).
  void separate_values_with(std::string separator) {
    separator_ = std::move(separator);
  }

  bool uses_slot() const noexcept {
    return uses_slot_;
  }

  /// A replacement string is (part of) the command's first word, as in
  /// `{}` or `l{= s/p/s/ =}`: GNU parallel leaves the values unquoted then.
  bool starts_with_replacement() const noexcept;

  /// The command for `args` as job `seq`: replacements shell-quoted when
  /// `quote`, `{%}` as `slot_mark`. Without replacement strings, the
  /// arguments are appended (quoted), as GNU parallel does.
  std::string expand(const arguments& args, uint64_t seq,
                     bool quote = true) const;

private:
  void parse(std::string_view text);
  /// Appends the parts of `text` (no perl in it) to `parts_`.
  void scan(std::string_view text, std::string& literal);
  /// With perl: `{= =}` and the --rpl strings found, then parsed.
  void parse_perl(std::string_view text, const custom_strings& custom);
  /// With perl: the template as pieces, in words with -X.
  void parse_pieces(const std::vector<template_piece>& pieces);
  /// Positional parts take their field from `all`, the others from `args`
  /// (whose first field is field `first` of `all`, from 0).
  void expand_parts(const std::vector<part>& parts, const arguments& all,
                    const arguments& args, size_t first, uint64_t seq,
                    bool quote, std::string& out) const;
  void append_perl(const part& p, size_t index, std::string_view value,
                   bool quote, std::string& out) const;

  std::vector<part> parts_;
  /// With -X: the template cut into words, each parsed on its own.
  std::vector<std::vector<part>> words_;
  bool context_replace_ = false;
  /// The custom strings as parts (`text`: the string).
  std::vector<part> custom_;
  std::vector<std::string> names_;
  std::shared_ptr<perl_evaluator> perl_;
  std::string separator_ = " ";
  bool has_replacements_ = false;
  bool uses_slot_ = false;
};

/// Applies replacement `kind` (one of the argument ops) to `value`.
std::string apply_op(command_template::op kind, std::string_view value);

/// -q: `words` joined by spaces, each shell-quoted around its replacement
/// strings (`whole` as for `command_template`).
std::string quoted_template(const std::vector<std::string>& words,
                            const command_template::custom_strings& custom);

/// `value`, shell-quoted when `quote`, appended to `out`.
void append_value(std::string& out, std::string_view value, bool quote);

/// Replaces every `slot_mark` in `command` with `slot`.
std::string fill_slot(std::string command, size_t slot);

/// An input line as a command (no template): its fields and records
/// joined by spaces, unquoted.
std::string join_arguments(const arguments& args, char separator = ' ');

} // namespace poolrun
