// Quoting as GNU parallel quotes, its choice of shell, and direct starts.
#include "shell.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>
#include <string>

#include <unistd.h>

namespace poolrun {

namespace {

bool plain_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
         c == '+' || c == '/';
}

/// Every shell GNU parallel knows by name.
constexpr std::array<std::string_view, 23> known_shells = {
    "ash",  "bash", "bsd-csh", "csh",  "dash",     "fdsh", "fish", "fizsh",
    "ksh",  "ksh93", "lksh",   "mksh", "pdksh",    "posh", "rbash", "rc",
    "rush", "rzsh", "sash",    "sh",   "static-sh", "tcsh", "zsh"};

bool is_shell_name(std::string_view name) {
  if (!name.empty() && name.front() == '-') // a login shell: "-bash"
    name.remove_prefix(1);
  return std::find(known_shells.begin(), known_shells.end(), name) !=
         known_shells.end();
}

/// The parent pid and the executable of process `pid`, from /proc.
bool process_info(long pid, long& ppid, std::string& exe) {
  std::ifstream stat{"/proc/" + std::to_string(pid) + "/stat"};
  std::string content;
  if (!std::getline(stat, content))
    return false;
  auto paren = content.rfind(')');
  if (paren == std::string::npos || paren + 4 > content.size())
    return false;
  // After ") S ": the parent pid.
  ppid = std::strtol(content.c_str() + paren + 4, nullptr, 10);
  char buf[4096];
  auto n = ::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), buf,
                      sizeof(buf) - 1);
  exe = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string{};
  return true;
}

/// Shell builtins and keywords (bash's, which cover dash's and most of
/// zsh's): a command naming one goes through the shell.
constexpr std::array<std::string_view, 75> builtins = {
    ".",        ":",       "[",       "[[",       "alias",    "bg",
    "bind",     "break",   "builtin", "caller",   "case",     "cd",
    "command",  "compgen", "complete", "compopt", "continue", "coproc",
    "declare",  "dirs",    "disown",  "do",       "done",     "echo",
    "elif",     "else",    "enable",  "esac",     "eval",     "exec",
    "exit",     "export",  "fc",      "fg",       "fi",       "for",
    "function", "getopts", "hash",    "help",     "history",  "if",
    "in",       "jobs",    "kill",    "let",      "local",    "logout",
    "mapfile",  "popd",    "printf",  "pushd",    "pwd",      "read",
    "readarray", "readonly", "return", "select",  "set",      "shift",
    "shopt",    "source",  "suspend", "test",     "then",     "time",
    "times",    "trap",    "type",    "typeset",  "ulimit",   "umask",
    "unalias",  "unset",   "until"};

bool is_builtin(std::string_view word) {
  return word == "wait" || word == "while" || word == "{" || word == "}" ||
         word == "!" ||
         std::find(builtins.begin(), builtins.end(), word) != builtins.end();
}

/// Characters with no meaning to any Bourne shell inside a word.
bool inert_char(char c) {
  return plain_char(c) || c == ',' || c == ':' || c == '@' || c == '%';
}

} // namespace

std::string shell_quote(std::string_view text) {
  if (text.empty())
    return "''";
  if (std::all_of(text.begin(), text.end(), plain_char))
    return std::string{text};
  std::string result;
  result.reserve(text.size() + 8);
  result += '\'';
  for (auto c : text) {
    if (c == '\'')
      result += "'\"'\"'";
    else
      result += c;
  }
  result += '\'';
  // As GNU parallel: drop the empty '' a leading or trailing quote left.
  if (result.compare(0, 2, "''") == 0)
    result.erase(0, 2);
  if (result.size() >= 2 && result.compare(result.size() - 2, 2, "''") == 0)
    result.erase(result.size() - 2);
  return result;
}

std::string parent_shell() {
  long pid = static_cast<long>(::getppid());
  // Up the ancestry, as GNU parallel does, stopping at init.
  for (int depth = 0; pid > 1 && depth < 64; ++depth) {
    long ppid = 0;
    std::string exe;
    if (!process_info(pid, ppid, exe))
      return {};
    auto slash = exe.rfind('/');
    auto name = slash == std::string::npos ? exe : exe.substr(slash + 1);
    if (is_shell_name(name))
      return exe;
    pid = ppid;
  }
  return {};
}

std::string choose_shell(const std::string& option) {
  if (!option.empty())
    return option;
  if (auto env = std::getenv("PARALLEL_SHELL"); env != nullptr && *env)
    return env;
  if (auto parent = parent_shell(); !parent.empty())
    return parent;
  if (auto env = std::getenv("SHELL"); env != nullptr && *env)
    return env;
  return "/bin/sh";
}

std::optional<std::vector<std::string>>
simple_command(std::string_view command) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < command.size()) {
    auto c = command[i];
    if (c == ' ' || c == '\t') {
      ++i;
      continue;
    }
    auto begin = i;
    while (i < command.size() && command[i] != ' ' && command[i] != '\t') {
      if (!inert_char(command[i]))
        return std::nullopt;
      ++i;
    }
    // zsh expands a word that starts with `=`.
    if (command[begin] == '=')
      return std::nullopt;
    words.emplace_back(command.substr(begin, i - begin));
  }
  if (words.empty())
    return std::nullopt;
  auto& first = words.front();
  // An assignment (`A=b cmd`) or a builtin: the shell's business. An
  // exported bash function of that name would also win over a program.
  if (first.find('=') != std::string::npos || is_builtin(first))
    return std::nullopt;
  if (first == "true" || first == "false") {
    if (words.size() == 2 && (words[1] == "--help" || words[1] == "--version"))
      return std::nullopt;
  }
  auto function = "BASH_FUNC_" + first + "%%";
  if (std::getenv(function.c_str()) != nullptr)
    return std::nullopt;
  return words;
}

} // namespace poolrun
