// command_template's perl part: {= perl =}, --rpl and --plus strings.
#include "command_template.hpp"

#include <algorithm>

#include "perl_expr.hpp"
#include "perl_strings.hpp"

namespace poolrun {

namespace {

/// The strings a perl template leaves to the built-in parsing: the
/// standard ones, less those -I and the like rename, and theirs.
std::vector<std::string>
kept_strings(const command_template::custom_strings& custom) {
  std::vector<std::string> kept{"{}",   "{.}", "{/}", "{//}",
                                "{/.}", "{#}", "{%}"};
  for (auto& [str, spelling] : custom) {
    kept.erase(std::remove(kept.begin(), kept.end(), spelling), kept.end());
    if (!str.empty())
      kept.push_back(str);
  }
  return kept;
}

} // namespace

void command_template::parse_perl(std::string_view text,
                                  const custom_strings& custom) {
  parse_pieces(
      split_perl_strings(text, perl_->rpls(), kept_strings(custom), names_));
}

void command_template::parse_pieces(const std::vector<template_piece>& pieces) {
  using kind = template_piece::kind;
  auto add = [this](command_template& into,
                    const std::vector<template_piece>& ps) {
    std::string literal;
    for (auto& p : ps) {
      if (p.what != kind::perl) {
        into.scan(p.text, literal);
        continue;
      }
      if (!literal.empty())
        into.parts_.push_back(part{op::text, std::move(literal), 0});
      literal.clear();
      part rep{op::perl, "{=" + p.text + "=}", p.position};
      rep.expr = perl_->compile(p.text);
      into.parts_.push_back(std::move(rep));
      into.has_replacements_ = true;
    }
    if (!literal.empty())
      into.parts_.push_back(part{op::text, std::move(literal), 0});
  };
  add(*this, pieces);
  if (!context_replace_)
    return;
  // -X: words split at the spaces outside expressions.
  std::vector<std::vector<template_piece>> words(1);
  for (auto& p : pieces) {
    if (p.what != kind::text) {
      words.back().push_back(p);
      continue;
    }
    for (size_t i = 0;;) {
      auto end = p.text.find(' ', i);
      words.back().push_back(
          template_piece{kind::text, p.text.substr(i, end - i), 0});
      if (end == std::string::npos)
        break;
      words.emplace_back();
      i = end + 1;
    }
  }
  for (auto& w : words) {
    command_template word;
    word.custom_ = custom_;
    word.names_ = names_;
    word.perl_ = perl_;
    add(word, w);
    words_.push_back(std::move(word.parts_));
  }
}

void command_template::append_perl(const part& p, size_t index,
                                   std::string_view value, bool quote,
                                   std::string& out) const {
  if (!perl_) {
    append_value(out, value, quote);
    return;
  }
  auto& v = perl_->evaluate(p.expr, index, value);
  append_value(out, v.text, quote && !v.unquoted);
}

} // namespace poolrun
