// Preparing a run: shell, hosts, slots, input, resume record, the pool.
#include "run_setup.hpp"

#include <cstdlib>

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
  if (!(opts.multi_context || opts.multi_plain) || opts.max_args > 0 ||
      opts.exact_args > 0)
    return g;
  auto tmpl = std::make_shared<command_template>(
      template_text(opts), opts.multi_context, opts.replace_strings);
  auto base = tmpl->expand({}, 1).size();
  g.fill = true;
  g.slots = slots;
  // -s N: GNU parallel keeps a command shorter than N bytes.
  auto limit = opts.max_chars > 0 ? std::min(opts.max_chars - 1,
                                             max_command_length)
                                  : max_command_length;
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
  if (opts.resume || opts.resume_failed) {
    resume = std::make_shared<joblog_record>();
    if (auto err = resume->read(opts.joblog); !err.empty())
      return err;
  }
  if (opts.dry_run) {
    workers = opts.jobs.slots(static_cast<size_t>(
        std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN))));
  } else {
    slots = slot_table::open(
        logins, opts.jobs,
        [](const std::string& text) { console::message(text); }, error);
    if (!slots)
      return error;
    workers = slots->size();
  }
  if (opts.sources.empty() && ::isatty(STDIN_FILENO) == 1)
    // As GNU parallel: a forgotten ::: would wait here silently.
    console::message("warning: input is read from the terminal; forgot "
                     "::: or :::: or -a, or to pipe data in? (Ctrl-D ends "
                     "the input)");
  std::unique_ptr<job_inputs> inputs;
  if (!opts.pipe) {
    inputs = job_inputs::open(opts, grouping_for(opts, workers), error);
    if (!inputs)
      return error;
    opts.header_names = inputs->header_names();
  }
  bool need_total = (opts.halt.on != halt_spec::when::never &&
                     opts.halt.percent) ||
                    opts.eta || opts.bar;
  opts.round_robin_jobs = std::max<size_t>(workers, 1);
  input = std::make_shared<feeder>(opts, std::move(inputs),
                                   need_total ? 0 : feed_window(workers),
                                   workers * 4 + 16);
  exec = std::make_shared<executor>();
  exec->slots = slots;
  exec->shell = opts.shell;
  exec->timeout = opts.timeout;
  exec->mode = opts.output;
  exec->cleanup = opts.cleanup;
  exec->trace = opts.trace_command;
  exec->delay = opts.delay;
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
