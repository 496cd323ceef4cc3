// Runs a job on a slot: local processes directly, remote ones over ssh.
#include "executor.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include <sys/stat.h>
#include <unistd.h>

#include "command_template.hpp"
#include "console.hpp"
#include "process.hpp"
#include "shell.hpp"

namespace poolrun {

namespace {

constexpr auto helper_timeout = std::chrono::seconds(60);

/// A result for a command poolrun could not start.
job_result cannot_start(job_result res, const std::string& why) {
  res.exit_code = 127;
  res.err += console::prefix() + why + "\n";
  return res;
}

std::vector<std::string> job_environment(const executor& ex,
                                         const job_spec& spec, size_t slot) {
  std::vector<std::string> env{"PARALLEL_SEQ=" + std::to_string(spec.seq),
                               "PARALLEL_JOBSLOT=" + std::to_string(slot),
                               "PARALLEL_PID=" + ex.pid_text};
  if (!ex.slot_var.empty())
    env.push_back(ex.slot_var + std::to_string(slot - 1));
  return env;
}

launch_spec base_launch(executor& ex, const job_spec& spec, size_t slot) {
  launch_spec launch;
  launch.timeout = ex.timeout;
  launch.unread_input_fails = !ex.pipepart;
  launch.mode = ex.mode;
  if (!spec.input.empty())
    launch.input = &spec.input;
  if (ex.mode == output_mode::line_buffer) {
    auto tag = fill_slot(spec.tag, slot); // {%} in --tagstring
    auto sink = ex.line_sink;
    launch.on_lines = [sink, tag](int stream, std::string_view lines) {
      sink(stream, tag, lines);
    };
  }
  return launch;
}

/// --wd: `command` run in the job's folder (made first) as GNU parallel
/// runs it ("cd DIR || exit 255; COMMAND"); "..." is removed after, the
/// command's exit status kept. On a folder that cannot be made, `why`.
std::string in_workdir(const executor& ex, uint64_t seq,
                       const std::string& command, std::string& why) {
  auto dir = ex.workdir;
  if (dir == ".") {
    std::error_code ec;
    dir = std::filesystem::current_path(ec).string();
  } else if (dir == "...") {
    char host[256] = "";
    ::gethostname(host, sizeof host - 1);
    auto home = std::getenv("HOME");
    dir = std::string{home != nullptr ? home : ""} + "/.parallel/tmp/" + host +
          "-" + ex.pid_text + "-" + std::to_string(seq);
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    why = "--wd: cannot make the folder '" + dir + "': " + ec.message();
    return {};
  }
  auto wrapped = "cd " + shell_quote(dir) + " || exit 255; " + command;
  if (ex.workdir == "...")
    wrapped += "\n_poolrun_status=$?; rm -rf " + shell_quote(dir) +
               "; exit $_poolrun_status";
  return wrapped;
}

job_result run_local(executor& ex, const job_spec& spec,
                     const std::string& plain_command, size_t slot) {
  auto command = plain_command;
  // --tmpl: the job's files, written first (removed with --cleanup).
  std::vector<std::string> written;
  for (size_t i = 0; i < spec.template_names.size(); ++i) {
    auto name = fill_slot(spec.template_names[i], slot);
    std::ofstream out{name, std::ios::binary | std::ios::trunc};
    out << fill_slot(spec.template_contents[i], slot);
    if (!out.flush()) {
      job_result res;
      return cannot_start(std::move(res), "--tmpl: cannot write '" + name +
                                              "': " + std::strerror(errno));
    }
    written.push_back(std::move(name));
  }
  auto remove_written = [&] {
    if (ex.cleanup)
      for (auto& name : written)
        ::unlink(name.c_str());
  };
  auto launch = base_launch(ex, spec, slot);
  launch.env = job_environment(ex, spec, slot);
  // Warned as it is killed, and after every earlier deadline's command
  // (as GNU parallel: in start order, whichever worker wakes first).
  std::pair<std::chrono::steady_clock::time_point, uint64_t> key{
      std::chrono::steady_clock::now() + ex.timeout.value_or(caf::timespan{}),
      spec.seq};
  if (ex.timeout) {
    std::lock_guard<std::mutex> guard{ex.deadlines_mtx};
    ex.deadlines[key] = {plain_command, false};
  }
  launch.on_timeout = [&ex, &key](long) {
    std::lock_guard<std::mutex> guard{ex.deadlines_mtx};
    for (auto i = ex.deadlines.begin();
         i != ex.deadlines.end() && i->first <= key; ++i)
      if (!std::exchange(i->second.second, true))
        console::timed_out(i->second.first);
  };
  if (!ex.workdir.empty()) {
    std::string why;
    command = in_workdir(ex, spec.seq, command, why);
    if (!why.empty())
      return cannot_start(job_result{}, why);
  }
  // $PARALLEL_ENV's code runs first, so the shell always runs then.
  auto words = ex.env_prelude.empty() ? simple_command(command) : std::nullopt;
  if (words)
    launch.argv = std::move(*words);
  else if (ex.env_prelude.empty())
    launch.argv = {ex.shell, "-c", command};
  else
    launch.argv = {ex.shell, "-c", ex.env_prelude + "\n" + command};
  auto outcome = run_process(launch);
  if (ex.timeout) {
    std::lock_guard<std::mutex> guard{ex.deadlines_mtx};
    ex.deadlines.erase(key);
  }
  if (words && (outcome.spawn_error == ENOENT ||
                outcome.spawn_error == EACCES)) {
    // Not found: the shell says so in its own words.
    launch.argv = {ex.shell, "-c", command};
    outcome = run_process(launch);
  }
  remove_written();
  if (outcome.spawn_error != 0)
    return cannot_start(std::move(outcome.result),
                        "cannot start '" + launch.argv[0] +
                            "': " + std::strerror(outcome.spawn_error));
  return std::move(outcome.result);
}

} // namespace

std::string read_whole(const std::string& path, bool& ok) {
  std::ifstream in{path, std::ios::binary};
  std::ostringstream buf;
  buf << in.rdbuf();
  ok = static_cast<bool>(in);
  return buf.str();
}

namespace {

std::string parent_dir(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? std::string{}
                                                  : path.substr(0, slash);
}

/// Copies each of `files` to the host. Returns what failed, or "".
std::string transfer(ssh_master& master, const std::vector<std::string>& files) {
  for (auto& file : files) {
    bool ok = false;
    auto content = read_whole(file, ok);
    if (!ok)
      return "cannot read '" + file + "' to transfer";
    auto target = remote_path(file);
    auto dir = parent_dir(target);
    std::string script = dir.empty() ? std::string{}
                                     : "mkdir -p " + shell_quote(dir) + "&&";
    script += "cat >" + shell_quote(target);
    std::string out;
    if (!master.run(script, out, helper_timeout, &content))
      return "cannot transfer '" + file + "'";
  }
  return {};
}

/// Copies each of `files` back from the host. Returns what failed, or "".
std::string fetch_back(ssh_master& master,
                       const std::vector<std::string>& files) {
  std::string failures;
  for (auto& file : files) {
    std::string content;
    if (!master.run("cat " + shell_quote(remote_path(file)), content,
                    helper_timeout)) {
      failures += (failures.empty() ? "" : ", ") + file;
      continue;
    }
    auto local = file;
    if (auto dot = local.find("/./"); dot != std::string::npos)
      local.erase(dot, 2);
    auto dir = parent_dir(local);
    if (!dir.empty()) {
      std::string mk = "mkdir -p " + shell_quote(dir);
      [[maybe_unused]] auto rc = std::system(mk.c_str());
    }
    std::ofstream out{local, std::ios::binary | std::ios::trunc};
    out << content;
    if (!out)
      failures += (failures.empty() ? "" : ", ") + file;
  }
  return failures.empty() ? std::string{}
                          : "cannot return " + failures;
}

void clean_up(ssh_master& master, const job_spec& spec) {
  std::string script;
  for (auto* list : {&spec.transfer, &spec.returns})
    for (auto& file : *list) {
      auto target = remote_path(file);
      script += "rm -f " + shell_quote(target) + ";";
      auto dir = parent_dir(target);
      if (!dir.empty())
        script += "rmdir -p " + shell_quote(dir) + " 2>/dev/null;";
    }
  if (script.empty())
    return;
  std::string out;
  master.run(script + "true", out, helper_timeout);
}

/// Whether `master` ends within a moment: a session that failed with 255
/// while its connection broke sees the failure a little before the master.
bool master_ends(ssh_master& master) {
  for (int i = 0; i < 50; ++i) {
    if (!master.alive())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

/// Runs on a remote slot. `lost` is set when the host's connection broke.
job_result run_remote(executor& ex, slot& s, const job_spec& spec,
                      const std::string& command, bool& lost) {
  auto& master = *s.master;
  job_result res;
  if (!master.alive()) {
    auto why = master.connect(std::chrono::seconds(15));
    if (!why.empty()) {
      lost = true;
      res.exit_code = 255;
      res.err = console::prefix() + "cannot reconnect: " + why + "\n";
      return res;
    }
  }
  if (auto why = transfer(master, spec.transfer); !why.empty()) {
    res.exit_code = 255;
    res.err = console::prefix() + why + "\n";
    lost = !master.alive();
    return res;
  }
  auto launch = base_launch(ex, spec, s.number);
  launch.argv = master.session(remote_wrapper(command, spec.seq, s.number));
  launch.strip_marker = true;
  auto* m = &master;
  launch.on_timeout = [m, &command](long pgid) {
    console::timed_out(command);
    if (pgid <= 1)
      return;
    std::string out;
    m->run("kill -KILL -- -" + std::to_string(pgid), out,
           std::chrono::seconds(10));
  };
  auto table = ex.slots.get();
  auto* me = &s;
  launch.on_marker = [table, me](long pgid) {
    table->running_remotely(me, pgid);
  };
  auto outcome = run_process(launch);
  if (outcome.spawn_error != 0)
    return cannot_start(std::move(outcome.result),
                        "cannot start '" + launch.argv[0] +
                            "': " + std::strerror(outcome.spawn_error));
  res = std::move(outcome.result);
  // ssh's own failure is 255 (so may the command's be): the connection
  // broke when the master ends right after, or no marker came.
  if (res.exit_code == 255 && !res.timed_out &&
      (outcome.remote_pgid == 0 || master_ends(master))) {
    lost = true;
    return res;
  }
  if (!spec.returns.empty())
    if (auto why = fetch_back(master, spec.returns); !why.empty())
      res.err += console::prefix() + why + "\n";
  if (ex.cleanup)
    clean_up(master, spec);
  return res;
}

/// --delay: waits until the last start is `ex.delay` ago.
void wait_for_turn(executor& ex) {
  std::chrono::steady_clock::time_point at;
  {
    std::lock_guard<std::mutex> guard{ex.delay_mtx};
    auto now = std::chrono::steady_clock::now();
    at = std::max(now, ex.next_start);
    ex.next_start = at + ex.delay;
  }
  std::this_thread::sleep_until(at); // the worker's own thread
}

} // namespace

slot_affinity make_affinity(executor& ex) {
  auto n = ex.next_worker++;
  return slot_affinity{ex.slots ? n % ex.slots->size() + 1 : 1};
}

namespace {

caf::expected<job_result> execute_once(executor& ex, slot_affinity& me,
                                       const job_spec& spec) {
  if (!attempt_begins()) {
    // poolrun stops: this attempt never starts (the pool is gone by now).
    job_result res;
    res.command = fill_slot(spec.command, 0);
    res.exit_code = -1;
    return caf::make_error(poolrun_errc::not_started, std::move(res));
  }
  struct ended {
    ~ended() {
      attempt_done();
    }
  } guard;
  std::vector<size_t> avoid;
  bool several_hosts = ex.slots->remote();
  if (several_hosts) {
    std::lock_guard<std::mutex> guard{ex.failed_mtx};
    if (auto i = ex.failed_on.find(spec.seq); i != ex.failed_on.end())
      avoid = i->second;
  }
  bool reconnected = false;
  for (;;) {
    auto s = ex.slots->acquire(me.preferred, avoid, spec.seq);
    if (s == nullptr) {
      job_result res;
      res.command = fill_slot(spec.command, 0);
      res.exit_code = 255;
      res.host_lost = true;
      res.err = console::prefix() + "no host left to run this command\n";
      return failure_of(std::move(res));
    }
    me.preferred = s->number;
    auto command = fill_slot(spec.command, s->number);
    if (ex.delay > caf::timespan::zero())
      wait_for_turn(ex);
    if (ex.trace && spec.command.find(slot_mark) != std::string::npos)
      console::write(2, command + "\n"); // -t with {%}; else the runner's
    auto& host = ex.slots->host(s->host);
    bool lost = false;
    auto res = host.login.local()
                   ? run_local(ex, spec, command, s->number)
                   : run_remote(ex, *s, spec, command, lost);
    if (lost && !reconnected) {
      // One dropped connection is not a lost host yet: reopen it once and
      // run the command there again.
      reconnected = true;
      if (s->master->connect(std::chrono::seconds(15)).empty()) {
        ex.slots->release(s);
        continue;
      }
    }
    ex.slots->release(s);
    res.command = command;
    res.host = host.login.display;
    res.slot = static_cast<uint32_t>(s->number);
    if (lost) {
      // The host is gone, not the command wrong: run it again on another
      // host, within the same attempt.
      auto first_words = res.err.substr(0, res.err.find('\n'));
      ex.slots->host_down(s->host, first_words.empty() ? "connection closed"
                                                       : first_words);
      continue;
    }
    if (several_hosts) {
      std::lock_guard<std::mutex> guard{ex.failed_mtx};
      if (res.failed())
        ex.failed_on[spec.seq].push_back(s->host);
      else
        ex.failed_on.erase(spec.seq);
    }
    if (res.failed() || res.host_lost)
      return failure_of(std::move(res));
    return res;
  }
}

} // namespace

caf::expected<job_result> execute(executor& ex, slot_affinity& me,
                                  const job_spec& spec) {
  // --retries {...}: this job's own count, its attempts run here at once
  // (the pool's policy counts one).
  auto result = execute_once(ex, me, spec);
  for (uint32_t attempt = 1; attempt < spec.attempts && !result &&
                             result.error() != poolrun_errc::not_started;
       ++attempt)
    result = execute_once(ex, me, spec);
  return result;
}

} // namespace poolrun
