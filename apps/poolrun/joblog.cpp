// The joblog, tab-separated as GNU parallel writes it.
#include "joblog.hpp"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace poolrun {

joblog_writer::~joblog_writer() {
  if (file_ != nullptr && !is_stdout_)
    std::fclose(file_);
}

std::string joblog_writer::open(const std::string& path, bool append) {
  if (path == "-") {
    file_ = stdout;
    is_stdout_ = true;
  } else {
    file_ = std::fopen(path.c_str(), append ? "a" : "w");
    if (file_ == nullptr)
      return "cannot open joblog '" + path + "': " + std::strerror(errno);
  }
  if (!append || is_stdout_ || std::ftell(file_) == 0) {
    std::fputs("Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\t"
               "Signal\tCommand\n",
               file_);
    std::fflush(file_);
  }
  return {};
}

void joblog_writer::write(uint64_t seq, const job_result& res) {
  if (file_ == nullptr)
    return;
  std::fprintf(file_,
               "%" PRIu64 "\t%s\t%.3f\t%10.3f\t%" PRIu64 "\t%" PRIu64
               "\t%" PRId32 "\t%" PRId32 "\t",
               seq, res.host.c_str(), static_cast<double>(res.started_at) / 1e9,
               static_cast<double>(res.runtime) / 1e9, res.sent, res.received,
               res.exit_code, res.signal);
  // A newline in the command is a NUL, so a line stays one (GNU parallel).
  auto command = res.command;
  std::replace(command.begin(), command.end(), '\n', '\0');
  command += '\n';
  std::fwrite(command.data(), 1, command.size(), file_);
  std::fflush(file_);
}

std::string joblog_record::read(const std::string& path) {
  std::ifstream in{path};
  if (!in) {
    if (errno == ENOENT)
      return {};
    return "cannot read joblog '" + path + "': " + std::strerror(errno);
  }
  found_ = true;
  std::string line;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line.rfind("Seq\t", 0) == 0)
      continue;
    // Seq Host Starttime JobRuntime Send Receive Exitval Signal Command
    std::vector<std::string> fields;
    size_t begin = 0;
    while (fields.size() < 8) {
      auto tab = line.find('\t', begin);
      if (tab == std::string::npos)
        break;
      fields.push_back(line.substr(begin, tab - begin));
      begin = tab + 1;
    }
    char* end = nullptr;
    auto seq = fields.size() == 8
                   ? std::strtoull(fields[0].c_str(), &end, 10)
                   : 0;
    if (fields.size() < 8 || end == fields[0].c_str() || *end != '\0') {
      // A command with a newline continues on the next line: skip it.
      continue;
    }
    auto exit_code = std::strtol(fields[6].c_str(), nullptr, 10);
    auto signal = std::strtol(fields[7].c_str(), nullptr, 10);
    if (seq > 1'000'000'000ull)
      return "joblog '" + path + "' line " + std::to_string(number) +
             ": Seq " + fields[0] + " is too large";
    if (seq >= states_.size())
      states_.resize(seq + 1, unknown);
    states_[seq] = exit_code == 0 && signal == 0 ? succeeded : failed;
    if (seq >= commands_.size())
      commands_.resize(seq + 1);
    commands_[seq] = line.substr(begin);
    std::replace(commands_[seq].begin(), commands_[seq].end(), '\0', '\n');
  }
  return {};
}

} // namespace poolrun
