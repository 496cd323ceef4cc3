// Profiles (-J): their files found and split into option words.
#include "profiles.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <fstream>
#include <sys/stat.h>

namespace poolrun {

std::vector<std::string> shell_words(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote == '\'') {
      if (c == '\'')
        quote = 0;
      else
        word += c;
    } else if (quote == '"') {
      if (c == '"')
        quote = 0;
      else if (c == '\\' && i + 1 < line.size() &&
               std::string_view{"\"\\$`"}.find(line[i + 1]) !=
                   std::string_view::npos)
        word += line[++i];
      else
        word += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < line.size()) {
      word += line[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word)
        words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word)
    words.push_back(std::move(word));
  return words;
}

namespace {

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

/// GNU parallel's folders for profiles, the ones that exist.
std::vector<std::string> config_dirs() {
  std::vector<std::string> candidates;
  auto env = [](const char* name) {
    auto value = std::getenv(name);
    return std::string{value != nullptr ? value : ""};
  };
  if (!env("PARALLEL_HOME").empty())
    candidates.push_back(env("PARALLEL_HOME"));
  if (!env("XDG_CONFIG_HOME").empty())
    candidates.push_back(env("XDG_CONFIG_HOME") + "/parallel");
  auto dirs = env("XDG_CONFIG_DIRS");
  for (size_t at = 0; !dirs.empty() && at <= dirs.size();) {
    auto end = std::min(dirs.find(':', at), dirs.size());
    if (end > at)
      candidates.push_back(dirs.substr(at, end - at) + "/parallel");
    at = end + 1;
  }
  candidates.push_back(env("HOME") + "/.parallel");
  std::vector<std::string> result;
  for (auto& dir : candidates)
    if (is_dir(dir))
      result.push_back(dir);
  return result;
}

} // namespace

std::vector<std::string> profile_words(const std::vector<std::string>& names,
                                       std::string& error) {
  std::vector<std::string> files;
  for (auto& name : names) {
    auto before = files.size();
    if (name.rfind("./", 0) == 0 || name.rfind('/', 0) == 0) {
      if (::access(name.c_str(), R_OK) == 0)
        files.push_back(name);
    } else if (!name.empty()) {
      for (auto& dir : config_dirs())
        if (::access((dir + "/" + name).c_str(), R_OK) == 0)
          files.push_back(dir + "/" + name);
    }
    if (files.size() == before) {
      // GNU parallel goes on without it; a misspelt profile should not
      // run the commands without the options it was meant to add.
      error = "-J " + name + ": no readable profile of that name (a file " +
              "in ~/.parallel or $PARALLEL_HOME, or ./NAME or /PATH)";
      return {};
    }
  }
  std::vector<std::string> words;
  for (auto& file : files) {
    std::ifstream in{file};
    for (std::string line; std::getline(in, line);) {
      if (line.find_first_not_of(" \t") != std::string::npos &&
          line[line.find_first_not_of(" \t")] == '#')
        continue;
      for (auto& word : shell_words(line))
        words.push_back(std::move(word));
    }
  }
  return words;
}

} // namespace poolrun
