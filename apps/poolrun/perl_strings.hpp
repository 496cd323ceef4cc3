// Finding perl replacement strings in a template: {= perl =}, {=N perl =}
// and the --rpl / --plus strings, as GNU parallel finds them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "perl_expr.hpp"

namespace poolrun {

/// A piece of a template: text, a built-in string left for the template
/// to parse, or a perl expression.
struct template_piece {
  enum class kind : uint8_t { text, kept, perl };
  kind what = kind::text;
  /// text and kept: the text; perl: the expression.
  std::string text;
  /// perl: the field it applies to (`{=2 ...=}`: 2; -1: the last); 0: each.
  int64_t position = 0;
};

/// Splits `text` into pieces: `{= ... =}` (the shortest, innermost pair,
/// as GNU parallel matches them) and each string of `rpls` (a tag with
/// `(regex)` groups passes them as `$$1`...; `{tag}` also as `{N tag}`)
/// become perl pieces; `kept` strings (the built-in ones and -I's) are
/// kept pieces. Longer strings are found first. `names` (--header): `{=name
/// ...=}` applies to that field.
std::vector<template_piece>
split_perl_strings(std::string_view text, const rpl_table& rpls,
                   const std::vector<std::string>& kept,
                   const std::vector<std::string>& names);

/// Whether `text` holds a `{=` (a template that needs perl).
bool has_perl_expression(std::string_view text);

} // namespace poolrun
