// Output, --results and joblog for finished jobs.
#include "reporter.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "command_template.hpp"
#include "console.hpp"
#include "process.hpp"

namespace poolrun {

namespace {

/// mkdir -p.
bool make_dirs(const std::string& path) {
  if (path.empty())
    return true;
  std::string prefix;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    prefix = path.substr(0, pos);
    if (!prefix.empty() && ::mkdir(prefix.c_str(), 0777) != 0 &&
        errno != EEXIST)
      return false;
  }
  return true;
}

int create_file(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
}

} // namespace

reporter::reporter(const run_options& opts) : opts_(opts) {
  // Nothing else.
}

std::string reporter::open_joblog(bool append) {
  if (opts_.joblog.empty() || opts_.dry_run) // GNU: --dry-run logs nothing
    return {};
  return joblog_.open(opts_.joblog, append);
}

void reporter::lost(const std::string& why) {
  console::message(why);
  ++lost_outputs_;
}

void reporter::write_results(const pending_job& job, const job_result& res) {
  // {%} in the --results path: the slot the job ran in.
  auto results = job.results.find(slot_mark) == std::string::npos
                     ? job.results
                     : fill_slot(job.results, res.slot);
  std::string out_path;
  std::string err_path;
  std::string seq_path;
  if (job.results_dir) {
    out_path = results + "stdout";
    err_path = results + "stderr";
    seq_path = results + "seq";
    if (!make_dirs(results.substr(0, results.size() - 1))) {
      lost("cannot create --results directory '" + results +
           "': " + std::strerror(errno));
      return;
    }
  } else {
    out_path = results;
    err_path = results + ".err";
    seq_path = results + ".seq";
    auto slash = results.rfind('/');
    if (slash != std::string::npos && slash > 0)
      make_dirs(results.substr(0, slash));
  }
  auto out_fd = create_file(out_path);
  auto err_fd = create_file(err_path);
  auto seq_fd = create_file(seq_path);
  if (out_fd < 0 || err_fd < 0 || seq_fd < 0) {
    lost("cannot write --results file '" + out_path +
         "': " + std::strerror(errno));
  } else {
    if (opts_.compress)
      write_compressed(res, out_fd, err_fd);
    else
      write_output(res, out_fd, err_fd, "");
    write_all(seq_fd, std::to_string(job.spec.seq));
  }
  for (auto fd : {out_fd, err_fd, seq_fd})
    if (fd >= 0)
      ::close(fd);
}

void reporter::emit(uint64_t seq, const held& h) {
  if (!h.res)
    return;
  auto& res = *h.res;
  if (results_json(opts_) && !h.dry) {
    write_json(seq, h); // its output is in the line, not printed
    if (h.log)
      joblog_.write(seq, res);
    return;
  }
  auto tag = h.dry ? std::string{} : fill_slot(h.tag, res.slot); // {%}
  // -v: the command is the first line of the job's standard output,
  // tagged as it is, in the file with --files (as GNU parallel).
  bool print_command = opts_.print_command && !h.dry;
  if (opts_.parset != run_options::parset_mode::none && !h.dry) {
    write_parset(h, tag, print_command);
    if (h.log)
      joblog_.write(seq, res);
    return;
  }
  if (print_command && !opts_.files)
    console::write_lines(1, tag, res.command + "\n");
  if (opts_.files && !h.dry) {
    // --files: standard output into a file of its own, its name printed.
    auto dir = std::getenv("TMPDIR");
    std::string path = std::string{dir != nullptr && *dir ? dir : "/tmp"} +
                       "/parXXXXXX.par";
    auto fd = ::mkstemps(path.data(), 4);
    if (fd < 0) {
      lost("--files: cannot create " + path + ": " + std::strerror(errno));
    } else {
      if (print_command)
        write_all(fd, res.command + "\n");
      write_output(res, fd, STDERR_FILENO, {}); // standard error as usual
      ::close(fd);
      console::write_lines(1, tag, path + "\n");
    }
  } else if (opts_.output == output_mode::group || h.dry)
    console::write_result(res, tag);
  if (h.log)
    joblog_.write(seq, res);
}

void reporter::finished(const pending_job& job, std::optional<job_result> res,
                        bool log, bool dry) {
  if (res && !job.results.empty())
    write_results(job, *res);
  held h{std::nullopt, job.tag, log, dry, job.values};
  if (job.results.empty())
    h.res = std::move(res);
  else if (res && log) // saved with --results: as GNU parallel, not printed
    joblog_.write(job.spec.seq, *res);
  // --line-buffer with -k: outputs whole, in order (see docs/poolrun.md).
  if (!opts_.keep_order) {
    emit(job.spec.seq, h);
    return;
  }
  held_.emplace(job.spec.seq, std::move(h));
  for (auto i = held_.begin(); i != held_.end() && i->first == next_;
       i = held_.erase(i), ++next_)
    emit(i->first, i->second);
}

void reporter::dry_run(const pending_job& job, size_t slots) {
  job_result res;
  auto slot = (job.spec.seq - 1) % std::max<size_t>(slots, 1) + 1;
  res.out = fill_slot(job.spec.command, slot) + "\n";
  pending_job shown = job;
  shown.results.clear();
  finished(shown, std::move(res), false, true);
}

void reporter::flush_held() {
  for (auto& kvp : held_)
    emit(kvp.first, kvp.second);
  held_.clear();
}

} // namespace poolrun
