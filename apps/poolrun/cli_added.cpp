// Checks of the options issue 46's fourth round added (--group-by,
// --semaphore, --_parset, --wd), apart from cli.cpp's.
#include "cli_options.hpp"

#include "specs.hpp"

namespace poolrun {

std::string finish_added_options(run_options& o, const raw_values& raw) {
  if (!raw.group_by.empty()) {
    auto n = parse_count(raw.group_by, 1, 1000000);
    if (!n || !o.pipe || !o.pipe_file.empty())
      return "--group-by " + raw.group_by +
             ": poolrun groups --pipe input by a column number (--group-by "
             "2); column names, perl expressions and --pipepart are not "
             "supported";
    o.group_by = *n;
  }
  if (o.semaphore && !o.sources.empty())
    return "--semaphore runs one command: arguments (::: ...) are not "
           "supported with it";
  if (o.semaphore && o.command.empty() && !o.semaphore_wait)
    return "--semaphore needs a command (or --wait)";
  if ((o.semaphore_fg || o.semaphore_wait) && !o.semaphore)
    return "--fg and --wait go with --semaphore";
  if (o.semaphore && raw.jobs.empty())
    o.jobs = *parse_jobs("1"); // as GNU parallel's sem
  if (!raw.parset.empty())
    if (auto why = parse_parset(raw.parset, o); !why.empty())
      return why;
  if (!o.workdir.empty() && !o.sshlogins.empty())
    return "--wd is not supported with remote slots (-S): cd in the "
           "command ('cd DIR && ...')";
  if (o.workdir.find('{') != std::string::npos)
    return "--wd " + o.workdir +
           ": replacement strings in --wd are not supported by poolrun; "
           "cd in the command ('cd {//} && ...')";
  return {};
}

} // namespace poolrun
