// Preparing a run: shell, hosts, slots, input, resume record, the pool.
#include "run_setup.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pool/all.hpp>

#include "console.hpp"
#include "shell.hpp"
#include "ssh.hpp"
#include "type_ids.hpp"

namespace poolrun {

namespace {

/// Jobs the runner may hold before the pool takes them: enough to keep
/// every worker fed, few enough that long commands cost little memory.
size_t feed_window(size_t workers) {
  return std::max<size_t>(256, workers * 8);
}

/// -X/-m: how much of the command line one record takes.
grouping grouping_for(const run_options& opts, size_t slots) {
  grouping g;
  g.per_command = opts.args_per_command();
  g.drop = opts.no_args;
  g.continued_lines = opts.continued_lines;
  if (!(opts.multi_context || opts.multi_plain) || opts.max_args > 0 ||
      opts.exact_args > 0)
    return g;
  auto tmpl = std::make_shared<command_template>(
      template_text(opts), opts.multi_context, opts.replace_strings);
  // The command without any argument: one argument's command less what
  // one more adds (the first adds no separating space; with -X its word
  // around {} is gone without arguments).
  record plain{"x"};
  auto one = tmpl->expand({plain}, 1).size();
  auto two = tmpl->expand({plain, plain}, 1).size();
  auto base = 2 * one > two ? 2 * one - two : 0;
  g.fill = true;
  g.slots = slots;
  // -s N: GNU parallel keeps a command shorter than N bytes; without it,
  // shorter than half the longest command less 3000 (its room for
  // wrapping and hex-quoting), which poolrun does the same.
  auto limit = opts.max_chars > 0
                   ? std::min(opts.max_chars - 1, max_command_length)
                   : (max_command_length - 3000) / 2 - 1;
  g.budget = limit > base ? limit - base : 1;
  // What one more record adds (its quoted text and a space; with -X the
  // whole word around {} again).
  g.cost = [tmpl](const record& rec) {
    auto one = tmpl->expand({rec}, 1).size();
    auto two = tmpl->expand({rec, rec}, 1).size();
    return std::max<size_t>(two - std::min(one, two), 1);
  };
  return g;
}

void replace_all(std::string& text, const std::string& from,
                 const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

/// `--header 0`: `{FILE}` (`{FILE.}`, `{FILE/}`..., `{=FILE ...=}`)
/// stands for the source read from FILE, as GNU parallel rewrites it:
/// first, and counting the file sources only.
void name_sources_by_file(run_options& opts) {
  std::vector<std::string*> texts{&opts.tagstring, &opts.results};
  for (auto& word : opts.command)
    texts.push_back(&word);
  for (auto& [text, name] : opts.templates) {
    texts.push_back(&text);
    texts.push_back(&name);
  }
  size_t id = 0;
  for (auto& src : opts.sources) {
    if (!src.is_file)
      continue;
    auto n = std::to_string(++id);
    for (auto* text : texts) {
      for (auto suffix : {"}", "/}", "//}", ".}", "/.}"})
        replace_all(*text, "{" + src.path + suffix, "{" + n + suffix);
      replace_all(*text, "{=" + src.path, "{=" + n);
    }
  }
}

/// `$PARALLEL_ENV`: the code itself, or the name of a file (a fifo too)
/// holding it. Not passed on to the commands (GNU parallel).
std::string read_env_prelude(std::string& prelude) {
  auto value = std::getenv("PARALLEL_ENV");
  if (value == nullptr || *value == '\0')
    return {};
  prelude = value;
  struct stat st;
  if (::stat(value, &st) == 0 && !S_ISDIR(st.st_mode)) {
    bool ok = false;
    prelude = read_whole(value, ok);
    if (!ok)
      return std::string{"cannot read $PARALLEL_ENV file '"} + value +
             "': " + std::strerror(errno);
  }
  ::unsetenv("PARALLEL_ENV");
  return {};
}

/// Fewer local job slots when the file handle limit (ulimit -n) leaves
/// no room for more, as GNU parallel does: a starting command holds up to
/// 8 (its pipes, with the writing ends of standard output and error kept
/// until it exits, a pidfd, spool files), poolrun itself 10.
void fit_file_handles(const std::vector<sshlogin>& logins, jobs_spec& jobs) {
  struct rlimit limit;
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 ||
      limit.rlim_cur == RLIM_INFINITY ||
      !std::all_of(logins.begin(), logins.end(),
                   [](const sshlogin& x) { return x.local(); }))
    return;
  auto handles = static_cast<size_t>(limit.rlim_cur);
  auto room = handles > 18 ? (handles - 10) / 8 : size_t{1};
  auto wanted = jobs.slots(
      static_cast<size_t>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN))));
  if (wanted <= room)
    return;
  if (jobs.type != jobs_spec::kind::unlimited) // -j 0: as many as fit
    console::message("warning: only enough file handles to run " +
                     std::to_string(room) + " jobs at once (raise ulimit -n)");
  jobs = jobs_spec{jobs_spec::kind::count, static_cast<int64_t>(room)};
}

} // namespace

std::string run_setup::prepare(run_options& opts) {
  if (opts.keep_order && opts.output == output_mode::line_buffer)
    opts.output = output_mode::group; // whole and in order; see the docs
  opts.shell = choose_shell(opts.shell);
  if (opts.ssh.empty()) {
    auto env = std::getenv("PARALLEL_SSH");
    opts.ssh = env != nullptr && *env ? env : "ssh";
  }
  std::string error;
  auto entries = read_sshlogin_files(opts.sshlogin_files, error);
  if (!error.empty())
    return error;
  entries.insert(entries.begin(), opts.sshlogins.begin(),
                 opts.sshlogins.end());
  auto logins = parse_sshlogins(entries, split_words(opts.ssh), error);
  if (!error.empty())
    return error;
  if (opts.resume || opts.resume_failed || opts.retry_failed) {
    resume = std::make_shared<joblog_record>();
    if (auto err = resume->read(opts.joblog); !err.empty())
      return err;
  }
  if (opts.retry_failed && resume->found()) {
    // --retry-failed: the joblog's commands are the input (each a whole
    // command); those that succeeded are skipped, as with --resume-failed.
    input_source commands;
    auto& logged = resume->commands();
    commands.values.assign(logged.begin() + (logged.empty() ? 0 : 1),
                           logged.end());
    opts.sources = {std::move(commands)};
    opts.command.clear();
    opts.delimiter = std::string(1, '\0'); // a command may hold newlines
    opts.resume_failed = true;
  }
  if (opts.dry_run) {
    workers = opts.jobs.slots(static_cast<size_t>(
        std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN))));
  } else {
    fit_file_handles(logins, opts.jobs);
    slots = slot_table::open(
        logins, opts.jobs,
        [](const std::string& text) { console::message(text); }, error);
    if (!slots)
      return error;
    workers = slots->size();
  }
  if (opts.sources.empty() && opts.pipe_file.empty() &&
      ::isatty(STDIN_FILENO) == 1)
    // As GNU parallel: a forgotten ::: would wait here silently.
    console::message("warning: input is read from the terminal; forgot "
                     "::: or :::: or -a, or to pipe data in? (Ctrl-D ends "
                     "the input)");
  std::unique_ptr<job_inputs> inputs;
  if (!opts.pipe || opts.tee) { // --tee: the arguments name the commands
    inputs = job_inputs::open(opts, grouping_for(opts, workers), error);
    if (!inputs)
      return error;
    opts.header_names = inputs->header_names();
  }
  bool need_total = (opts.halt.on != halt_spec::when::never &&
                     opts.halt.percent) ||
                    opts.eta || opts.bar;
  opts.round_robin_jobs = std::max<size_t>(workers, 1);
  if (!opts.pipe_file.empty()) {
    struct stat st;
    if (::stat(opts.pipe_file.c_str(), &st) != 0)
      return "cannot read input file '" + opts.pipe_file +
             "': " + std::strerror(errno);
    // --block -N: N blocks per job slot (GNU parallel's arithmetic).
    if (opts.blocks_per_slot > 0)
      opts.block_size =
          1 + static_cast<size_t>(
                  static_cast<double>(st.st_size) /
                  static_cast<double>(std::max<size_t>(workers, 1)) /
                  opts.blocks_per_slot);
  }
  for (auto& [text, name] : opts.templates) { // --tmpl: FILE's text
    bool ok = false;
    auto path = text;
    text = read_whole(path, ok);
    if (!ok)
      return "--tmpl: cannot read '" + path + "': " + std::strerror(errno);
  }
  if (opts.header == "0" && !opts.pipe)
    name_sources_by_file(opts);
  input = std::make_shared<feeder>(opts, std::move(inputs),
                                   need_total ? 0 : feed_window(workers),
                                   workers * 4 + 16);
  if (auto err = input->perl_error(); !err.empty())
    return err; // an expression perl cannot compile, or no perl
  exec = std::make_shared<executor>();
  exec->slots = slots;
  exec->shell = opts.shell;
  exec->timeout = opts.timeout;
  exec->mode = opts.output;
  exec->cleanup = opts.cleanup;
  exec->trace = opts.trace_command;
  exec->pipepart = !opts.pipe_file.empty() || opts.tee;
  if (auto err = read_env_prelude(exec->env_prelude); !err.empty())
    return err;
  if (!opts.slot_var.empty())
    exec->slot_var = opts.slot_var + "=";
  exec->delay = opts.delay;
  exec->workdir = opts.workdir;
  if (opts.tee && slots)
    slots->number_by_seq();
  std::error_code no_dir;
  if (opts.workdir != "." && opts.workdir != "..." && !opts.workdir.empty() &&
      !std::filesystem::create_directories(opts.workdir, no_dir) && no_dir)
    return "--wd: cannot make the folder '" + opts.workdir +
           "': " + no_dir.message();
  exec->pid_text = std::to_string(::getpid());
  exec->line_sink = [](int stream, const std::string& tag,
                       std::string_view lines) {
    console::write_lines(stream, tag, lines);
  };
  options = opts;
  return {};
}

caf::actor run_setup::spawn_pool(caf::actor_system& sys, std::string& error) {
  auto& opts = options;
  uint32_t attempts = 1;
  if (opts.retries)
    attempts = *opts.retries == 0 ? 1000000000u : *opts.retries;
  auto pool_opts =
      pool::pool_options{}
          .kind(pool::worker_kind::dedicated)
          .workers(workers)
          .name("poolrun")
          .max_batch(1)
          .max_attempts(attempts)
          // No wait unless --retry-delay asks for one (GNU parallel
          // retries at once); then exponential, up to 30 s.
          .backoff(opts.retry_delay,
                   opts.retry_delay == caf::timespan::zero()
                       ? opts.retry_delay
                       : std::max(opts.retry_delay,
                                  caf::timespan{std::chrono::seconds(30)}))
          .jitter(0.2)
          .restart_intensity(1000, std::chrono::seconds(1))
          .overload_warning(std::numeric_limits<size_t>::max() / 2,
                            std::chrono::hours(1))
          .log([](pool::log_level level, const std::string&,
                  const std::string& text) {
            if (level == pool::log_level::warning ||
                level == pool::log_level::error)
              console::message("pool: " + text);
          });
  if (!opts.journal.empty())
    // Synchronous "normal": a recorded outcome survives a crash of
    // poolrun (not a power loss); finished commands match forever.
    pool_opts.durable(opts.journal, pool::sqlite_sync::normal)
        .unique_window(caf::timespan::max())
        // One commit for about as many jobs as run in 2 ms.
        .commit_interval(std::chrono::milliseconds(2));
  if (!opts.queue.empty())
    // Shared: the same unique keys match from every poolrun of the queue.
    pool_opts
        .postgres(opts.queue, pool::pg_options{}
                                  .queue(opts.queue_name)
                                  .outage_limit(opts.queue_outage))
        .unique_window(caf::timespan::max())
        .commit_interval(std::chrono::milliseconds(2));
  auto store = pool::store_for(sys, pool_opts);
  if (!store) {
    // The store's errors name the server, never the password.
    if (opts.queue.empty())
      error = "cannot open journal '" + opts.journal +
              "': " + pool::describe(store.error());
    else
      error = "cannot open queue '" + opts.queue_name +
              "': " + pool::describe(store.error());
    return nullptr;
  }
  auto ex = exec;
  auto make = [ex] { return make_affinity(*ex); };
  auto job = [ex](slot_affinity& me, const job_spec& spec) {
    return execute(*ex, me, spec);
  };
  auto pool = pool::spawn_resource_pool(sys, make, job, pool_opts, *store);
  if (!pool) {
    error = "cannot start the pool: " + pool::describe(pool.error());
    return nullptr;
  }
  return *pool;
}

void run_setup::finish() {
  if (slots)
    slots->close();
  if (input && !input->finished()) {
    // Still blocked reading standard input: leave it to the process end.
    new std::shared_ptr<feeder>(input);
  }
}

} // namespace poolrun
