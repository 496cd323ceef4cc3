// Finds {= perl =} and the --rpl / --plus strings in a template.
#include "perl_strings.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <regex>

namespace poolrun {

namespace {

using piece = template_piece;

/// A perl piece from `expr` as written (`{=2 s/a/b/=}`: "2 s/a/b/"): a
/// leading number is the position; it and the blanks after it go.
piece perl_piece(std::string_view expr) {
  piece out;
  out.what = piece::kind::perl;
  size_t i = 0;
  if (i < expr.size() && expr[i] == '-')
    ++i;
  size_t digits = 0;
  while (i + digits < expr.size() &&
         std::isdigit(static_cast<unsigned char>(expr[i + digits])))
    ++digits;
  size_t start = 0;
  if (digits > 0 && digits < 10) {
    out.position = std::stol(std::string{expr.substr(0, i + digits)});
    start = i + digits;
  }
  while (start < expr.size() && expr[start] == ' ')
    ++start;
  out.text = std::string{expr.substr(start)};
  return out;
}

/// `{= ... =}`: from a `{=` to the first `=}` with no `{=` between.
std::vector<piece> split_expressions(std::string_view text,
                                     const std::vector<std::string>& names) {
  std::vector<piece> out;
  std::string literal;
  size_t i = 0;
  while (i < text.size()) {
    if (text.compare(i, 2, "{=") == 0) {
      auto close = text.find("=}", i + 2);
      auto open = text.find("{=", i + 2);
      if (close != std::string_view::npos &&
          (open == std::string_view::npos || close < open)) {
        if (!literal.empty())
          out.push_back(piece{piece::kind::text, std::move(literal), 0});
        literal.clear();
        std::string expr{text.substr(i + 2, close - i - 2)};
        // --header: {=name ...=} is {=N ...=}.
        for (size_t n = 0; n < names.size(); ++n)
          if (!names[n].empty() &&
              expr.compare(0, names[n].size(), names[n]) == 0)
            expr = std::to_string(n + 1) + expr.substr(names[n].size());
        out.push_back(perl_piece(expr));
        i = close + 2;
        continue;
      }
    }
    literal += text[i++];
  }
  if (!literal.empty())
    out.push_back(piece{piece::kind::text, std::move(literal), 0});
  return out;
}

std::string regex_escape(std::string_view text) {
  std::string out;
  for (auto c : text) {
    if (std::strchr("\\^$.|?*+()[]{}", c) != nullptr && c != '\0')
      out += '\\';
    out += c;
  }
  return out;
}

/// perl's "..." quoting of a group's text.
std::string perl_quote(const std::string& text) {
  std::string out;
  for (auto c : text) {
    if (c == '\\' || c == '"' || c == '$' || c == '@')
      out += '\\';
    out += c;
  }
  return out;
}

/// The expression of `value` for a match with `groups`: $$1 -> the first.
std::string with_groups(const std::string& value, const std::smatch& m,
                        size_t first_group) {
  std::string set_args;
  std::string expr;
  static const std::regex group_ref{R"(\$\$(\d+))"};
  expr = std::regex_replace(value, group_ref, "$$_pAr_gRp$1");
  for (size_t g = first_group, n = 1; g < m.size() && m[g].matched; ++g, ++n)
    set_args += "$_pAr_gRp" + std::to_string(n) + " = \"" +
                perl_quote(m[g].str()) + "\";";
  return set_args + expr;
}

struct string_rule {
  std::string tag;
  std::string value;
  bool kept = false;
};

/// Replaces every match of `re` in the text pieces of `pieces`.
template <class Make>
void replace_in(std::vector<piece>& pieces, const std::regex& re, Make make) {
  std::vector<piece> out;
  for (auto& p : pieces) {
    if (p.what != piece::kind::text) {
      out.push_back(std::move(p));
      continue;
    }
    std::string rest = std::move(p.text);
    std::smatch m;
    while (std::regex_search(rest, m, re)) {
      if (m.position(0) > 0)
        out.push_back(
            piece{piece::kind::text, rest.substr(0, m.position(0)), 0});
      out.push_back(make(m));
      rest = m.suffix().str();
    }
    if (!rest.empty())
      out.push_back(piece{piece::kind::text, std::move(rest), 0});
  }
  pieces = std::move(out);
}

} // namespace

bool has_perl_expression(std::string_view text) {
  return text.find("{=") != std::string_view::npos;
}

std::vector<template_piece>
split_perl_strings(std::string_view text, const rpl_table& rpls,
                   const std::vector<std::string>& kept,
                   const std::vector<std::string>& names) {
  auto pieces = split_expressions(text, names);
  // The strings, longest first (a short one may be part of a long one);
  // a later --rpl of a tag wins.
  std::vector<string_rule> rules;
  for (auto& [tag, value] : rpls) {
    auto same = std::find_if(rules.begin(), rules.end(),
                             [&](auto& r) { return r.tag == tag; });
    if (same != rules.end())
      same->value = value;
    else
      rules.push_back(string_rule{tag, value, false});
  }
  for (auto& tag : kept)
    if (std::none_of(rules.begin(), rules.end(),
                     [&](auto& r) { return r.tag == tag; }))
      rules.push_back(string_rule{tag, {}, true});
  std::stable_sort(rules.begin(), rules.end(), [](auto& a, auto& b) {
    return a.tag.size() > b.tag.size();
  });
  for (auto& rule : rules) {
    // TAG = prefix (group regex) postfix, as GNU parallel splits it.
    auto& tag = rule.tag;
    auto open = tag.find('(');
    auto close = tag.rfind(')');
    std::string prefix = tag;
    std::string group;
    std::string postfix;
    if (open != std::string::npos && close != std::string::npos &&
        close > open) {
      prefix = tag.substr(0, open);
      group = tag.substr(open, close - open + 1);
      postfix = tag.substr(close + 1);
    }
    std::regex plain;
    std::regex positional;
    try {
      plain = std::regex{regex_escape(prefix) + group + regex_escape(postfix)};
      if (!prefix.empty() && prefix[0] == '{')
        positional =
            std::regex{"\\{(-?\\d+)\\s*" + regex_escape(prefix.substr(1)) +
                       group + regex_escape(postfix)};
    } catch (const std::regex_error&) {
      continue; // a tag std::regex cannot read stays text
    }
    replace_in(pieces, plain, [&](const std::smatch& m) {
      if (rule.kept)
        return piece{piece::kind::kept, m.str(), 0};
      return perl_piece(with_groups(rule.value, m, 1));
    });
    if (prefix.empty() || prefix[0] != '{')
      continue;
    replace_in(pieces, positional, [&](const std::smatch& m) {
      if (rule.kept)
        return piece{piece::kind::kept, m.str(), 0};
      auto p = perl_piece(with_groups(rule.value, m, 2));
      p.position = std::stol(m[1].str());
      return p;
    });
  }
  return pieces;
}

} // namespace poolrun
