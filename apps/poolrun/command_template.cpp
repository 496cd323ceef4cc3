// Parses and expands command templates the way GNU parallel does.
#include "command_template.hpp"

#include <algorithm>
#include <cctype>

#include "perl_expr.hpp"
#include "perl_strings.hpp"
#include "shell.hpp"

namespace poolrun {

namespace {

using op = command_template::op;

bool is_argument_op(op kind) {
  return kind != op::text && kind != op::seq && kind != op::slot;
}

/// The operation a brace group's inside names ("", ".", "/", "//", "/.").
bool op_of(std::string_view suffix, op& kind) {
  if (suffix.empty())
    kind = op::whole;
  else if (suffix == ".")
    kind = op::no_extension;
  else if (suffix == "/")
    kind = op::basename;
  else if (suffix == "//")
    kind = op::dirname;
  else if (suffix == "/.")
    kind = op::basename_no_ext;
  else
    return false;
  return true;
}

/// Recognizes the replacement string in `inner` (between braces).
bool replacement(std::string_view inner, command_template::part& out) {
  if (inner == "#") {
    out.kind = op::seq;
    return true;
  }
  if (inner == "%") {
    out.kind = op::slot;
    return true;
  }
  // {-n}: the n-th field from the end.
  bool negative = !inner.empty() && inner[0] == '-';
  size_t sign = negative ? 1 : 0;
  size_t digits = 0;
  while (sign + digits < inner.size() &&
         std::isdigit(static_cast<unsigned char>(inner[sign + digits])))
    ++digits;
  int64_t position = 0;
  if (digits > 0) {
    if (digits > 6 || inner[sign] == '0')
      return false;
    position = std::stol(std::string{inner.substr(sign, digits)});
  } else if (negative) {
    return false;
  }
  auto rest = inner.substr(sign + digits);
  // As GNU parallel: white space may follow the number ({1 }, {1 .}, and
  // `{1` newline `}`).
  while (digits > 0 && !rest.empty() &&
         std::isspace(static_cast<unsigned char>(rest.front())))
    rest.remove_prefix(1);
  if (!op_of(rest, out.kind))
    return false;
  out.position = negative ? -position : position;
  return true;
}

std::string_view strip_extension(std::string_view value) {
  // s:\.[^/.]*$::
  auto dot = value.rfind('.');
  if (dot == std::string_view::npos)
    return value;
  if (value.find('/', dot) != std::string_view::npos)
    return value;
  return value.substr(0, dot);
}

std::string_view basename_of(std::string_view value) {
  // s:.*/::
  auto slash = value.rfind('/');
  return slash == std::string_view::npos ? value : value.substr(slash + 1);
}

std::string dirname_of(std::string_view value) {
  // Perl's File::Basename::dirname on Unix.
  while (value.size() > 1 && value.back() == '/')
    value.remove_suffix(1);
  auto slash = value.rfind('/');
  if (slash == std::string_view::npos)
    return ".";
  value = value.substr(0, slash);
  while (value.size() > 1 && value.back() == '/')
    value.remove_suffix(1);
  return value.empty() ? "/" : std::string{value};
}

size_t field_count(const arguments& args) {
  size_t n = 0;
  for (auto& rec : args)
    n += rec.size();
  return n;
}

const std::string* field_at(const arguments& args, int64_t signed_position) {
  auto count = static_cast<int64_t>(field_count(args));
  if (signed_position < 0)
    signed_position += count + 1; // {-1}: the last one
  if (signed_position <= 0 || signed_position > count)
    return nullptr;
  auto position = static_cast<size_t>(signed_position);
  for (auto& rec : args) {
    if (position <= rec.size())
      return &rec[position - 1];
    position -= rec.size();
  }
  return nullptr;
}

} // namespace

void append_value(std::string& out, std::string_view value, bool quote) {
  if (quote)
    out += shell_quote(value);
  else
    out.append(value.data(), value.size());
}

namespace {

/// GNU parallel gives a job without arguments one empty argument.
const arguments& or_one_empty(const arguments& args) {
  static const arguments one_empty{record{std::string{}}};
  return field_count(args) == 0 ? one_empty : args;
}

} // namespace

std::string apply_op(op kind, std::string_view value) {
  switch (kind) {
    case op::no_extension:
      return std::string{strip_extension(value)};
    case op::basename:
      return std::string{basename_of(value)};
    case op::dirname:
      return dirname_of(value);
    case op::basename_no_ext:
      return std::string{strip_extension(basename_of(value))};
    default:
      return std::string{value};
  }
}

command_template::command_template(std::string_view text, bool context_replace,
                                   const custom_strings& custom,
                                   std::vector<std::string> names,
                                   std::shared_ptr<perl_evaluator> perl)
    : context_replace_(context_replace),
      names_(std::move(names)),
      perl_(std::move(perl)) {
  for (auto& [str, spelling] : custom) {
    part p;
    if (str.empty() || spelling.size() < 2 ||
        !replacement(std::string_view{spelling}.substr(1, spelling.size() - 2),
                     p))
      continue;
    p.text = str;
    custom_.push_back(std::move(p));
  }
  if (perl_ && (has_perl_expression(text) || !perl_->rpls().empty())) {
    parse_perl(text, custom);
    return;
  }
  parse(text);
  if (!context_replace_)
    return;
  // -X: each word (between spaces) on its own.
  size_t i = 0;
  while (i <= text.size()) {
    auto end = text.find(' ', i);
    if (end == std::string_view::npos)
      end = text.size();
    command_template word;
    word.custom_ = custom_;
    word.names_ = names_;
    word.parse(text.substr(i, end - i));
    words_.push_back(std::move(word.parts_));
    i = end + 1;
  }
}

void command_template::parse(std::string_view text) {
  std::string literal;
  scan(text, literal);
  if (!literal.empty())
    parts_.push_back(part{op::text, std::move(literal), 0});
}


bool command_template::starts_with_replacement() const noexcept {
  for (auto& p : parts_) {
    if (p.kind != op::text)
      return true;
    if (p.text.find_first_of(" \t\n=") != std::string::npos)
      return false;
  }
  return false;
}

void command_template::scan(std::string_view text, std::string& literal) {
  size_t i = 0;
  auto flush = [&] {
    if (!literal.empty())
      parts_.push_back(part{op::text, std::move(literal), 0});
    literal.clear();
  };
  auto overridden = [this](const part& rep) {
    return rep.position == 0 &&
           std::any_of(custom_.begin(), custom_.end(),
                       [&](const part& c) { return c.kind == rep.kind; });
  };
  while (i < text.size()) {
    auto custom = std::find_if(custom_.begin(), custom_.end(), [&](auto& c) {
      return text.compare(i, c.text.size(), c.text) == 0;
    });
    if (custom != custom_.end()) {
      // -I STR and the like: STR is the replacement.
      flush();
      has_replacements_ = true;
      uses_slot_ = uses_slot_ || custom->kind == op::slot;
      parts_.push_back(*custom);
      i += custom->text.size();
      continue;
    }
    if (text[i] == '{') {
      auto close = text.find('}', i + 1);
      part rep;
      auto inner = close == std::string_view::npos
                       ? std::string_view{}
                       : text.substr(i + 1, close - i - 1);
      if (close != std::string_view::npos && !inner.empty() &&
          !replacement(inner, rep)) {
        // --header: {name} is the named field ({name.}, {name/}...
        // too, as GNU parallel reads them).
        auto name = std::find_if(names_.begin(), names_.end(), [&](auto& n) {
          return !n.empty() && inner.compare(0, n.size(), n) == 0 &&
                 op_of(inner.substr(n.size()), rep.kind);
        });
        if (name != names_.end()) {
          rep.position = name - names_.begin() + 1;
          rep.text.clear();
          flush();
          has_replacements_ = true;
          rep.text = std::string{text.substr(i, close - i + 1)};
          parts_.push_back(std::move(rep));
          i = close + 1;
          continue;
        }
      }
      if (close != std::string_view::npos && replacement(inner, rep) &&
          !overridden(rep)) {
        flush();
        has_replacements_ = true;
        uses_slot_ = uses_slot_ || rep.kind == op::slot;
        rep.text = std::string{text.substr(i, close - i + 1)};
        parts_.push_back(std::move(rep));
        i = close + 1;
        continue;
      }
    }
    literal += text[i++];
  }
}


void command_template::expand_parts(const std::vector<part>& parts,
                                    const arguments& all,
                                    const arguments& args, size_t first,
                                    uint64_t seq, bool quote,
                                    std::string& out) const {
  for (auto& p : parts) {
    switch (p.kind) {
      case op::text:
        out += p.text;
        break;
      case op::seq:
        out += std::to_string(seq);
        break;
      case op::slot:
        out += slot_mark;
        break;
      case op::perl: {
        if (p.position != 0) {
          auto& fields = or_one_empty(all);
          auto count = static_cast<int64_t>(field_count(fields));
          auto position = p.position < 0 ? p.position + count + 1 : p.position;
          if (auto value = field_at(fields, p.position))
            append_perl(p, static_cast<size_t>(position - 1), *value, quote,
                        out);
          break;
        }
        auto index = first;
        for (auto& rec : or_one_empty(args))
          for (auto& value : rec) {
            if (index != first)
              out += separator_;
            append_perl(p, index++, value, quote, out);
          }
        break;
      }
      default:
        if (p.position != 0) {
          // Positional: of all the command's fields, also in a word that
          // repeats per record (-X, -N), as GNU parallel has it.
          if (auto value = field_at(all, p.position))
            append_value(out, apply_op(p.kind, *value), quote);
          break;
        }
        bool first = true;
        for (auto& rec : args)
          for (auto& value : rec) {
            if (!first)
              out += separator_;
            first = false;
            append_value(out, apply_op(p.kind, value), quote);
          }
    }
  }
}

std::string command_template::expand(const arguments& args, uint64_t seq,
                                     bool quote) const {
  std::string out;
  if (!has_replacements_) {
    expand_parts(parts_, args, args, 0, seq, quote, out);
    for (auto& rec : args)
      for (auto& value : rec) {
        out += ' ';
        append_value(out, value, quote);
      }
    return out;
  }
  if (!context_replace_ || field_count(args) == 0) {
    expand_parts(parts_, args, args, 0, seq, quote, out);
    return out;
  }
  // -X: a word with an argument replacement once per record.
  bool first_word = true;
  for (auto& word : words_) {
    if (!first_word)
      out += ' ';
    first_word = false;
    bool per_record = false;
    for (auto& p : word)
      per_record = per_record || (is_argument_op(p.kind) && p.position == 0);
    if (!per_record) {
      expand_parts(word, args, args, 0, seq, quote, out);
      continue;
    }
    bool first_rec = true;
    size_t first = 0;
    for (auto& rec : args) {
      if (!first_rec)
        out += ' ';
      first_rec = false;
      expand_parts(word, args, arguments{rec}, first, seq, quote, out);
      first += rec.size();
    }
  }
  return out;
}

std::string quoted_template(const std::vector<std::string>& words,
                            const command_template::custom_strings& custom) {
  std::string out;
  bool first = true;
  for (auto& word : words) {
    if (!first)
      out += ' ';
    first = false;
    if (word.empty()) {
      out += "''";
      continue;
    }
    command_template parsed{word, false, custom};
    for (auto& p : parsed.parts())
      out += p.kind == op::text ? shell_quote(p.text) : p.text;
  }
  return out;
}

std::string fill_slot(std::string command, size_t slot) {
  auto pos = command.find(slot_mark);
  if (pos == std::string::npos)
    return command;
  auto text = std::to_string(slot);
  std::string out;
  out.reserve(command.size() + 8);
  size_t from = 0;
  for (; pos != std::string::npos; pos = command.find(slot_mark, from)) {
    out.append(command, from, pos - from);
    out += text;
    from = pos + 1;
  }
  out.append(command, from, std::string::npos);
  return out;
}

std::string join_arguments(const arguments& args, char separator) {
  std::string out;
  bool first = true;
  for (auto& rec : args)
    for (auto& value : rec) {
      if (!first)
        out += separator;
      first = false;
      out += value;
    }
  return out;
}

} // namespace poolrun
