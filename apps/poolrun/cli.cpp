// Command-line parsing: input sources split off by hand (CLI11 knows no
// `:::`), everything else by CLI11.
#include "cli.hpp"

#include <pool/errors.hpp>
#include <pool/http.hpp>
#include <pool/pg_options.hpp>

#include <cstring>

#include <CLI/CLI.hpp>

#include "secrets.hpp"
#include "specs.hpp"

#ifndef POOLRUN_VERSION
#  define POOLRUN_VERSION "0"
#endif

namespace poolrun {

namespace {

bool is_separator(std::string_view arg) {
  return arg == ":::" || arg == "::::" || arg == ":::+" || arg == "::::+";
}

/// The sources from `args` (starting with a separator).
std::vector<input_source> split_sources(const std::vector<std::string>& args,
                                        std::string& error) {
  std::vector<input_source> result;
  size_t i = 0;
  while (i < args.size()) {
    auto sep = args[i++];
    bool files = sep.rfind("::::", 0) == 0;
    bool linked = sep.back() == '+';
    auto begin = i;
    while (i < args.size() && !is_separator(args[i]))
      ++i;
    if (files) {
      if (begin == i) {
        error = sep + " needs at least one file name after it";
        return {};
      }
      for (auto j = begin; j < i; ++j) {
        input_source src;
        src.is_file = true;
        src.path = args[j];
        src.linked = linked && j == begin;
        result.push_back(std::move(src));
      }
    } else {
      input_source src;
      src.values.assign(args.begin() + static_cast<std::ptrdiff_t>(begin),
                        args.begin() + static_cast<std::ptrdiff_t>(i));
      src.linked = linked;
      result.push_back(std::move(src));
    }
  }
  if (!result.empty() && result.front().linked)
    result.front().linked = false; // nothing before it to link to
  return result;
}

/// `-d` takes C escapes, as GNU parallel's does.
std::string unescape(const std::string& text) {
  std::string result;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\' || i + 1 == text.size()) {
      result += text[i];
      continue;
    }
    switch (text[++i]) {
      case 'n':
        result += '\n';
        break;
      case 't':
        result += '\t';
        break;
      case 'r':
        result += '\r';
        break;
      case '0':
        result += '\0';
        break;
      default:
        result += text[i];
    }
  }
  return result;
}

/// The values of options that CLI11 stores as text, checked here.
struct raw_values {
  std::string jobs;
  std::string delimiter;
  std::string block;
  std::string retries;
  std::string retry_delay;
  std::string timeout;
  std::string halt;
  std::string status_interval;
  std::string queue_outage;
  std::vector<std::string> arg_files;
  std::vector<std::string> trc;
  bool transfer = false;
  bool null = false;
  bool ungroup = false;
  bool group = false;
  bool line_buffer = false;
  std::optional<size_t> exact_args;
  bool ignored = false;
};

void define_options(CLI::App& app, run_options& o, raw_values& raw) {
  auto one = [](CLI::Option* opt) {
    return opt->allow_extra_args(false)->expected(1);
  };
  const std::string input = "Input";
  app.add_option("-a,--arg-file", raw.arg_files,
                 "read arguments from FILE ('-': standard input); repeatable")->type_name("FILE")
      ->allow_extra_args(false)
      ->group(input);
  app.add_flag("--link,--xapply", o.link,
               "sources side by side instead of every combination")
      ->group(input);
  app.add_flag("-0,--null", raw.null, "records end with NUL, not newline")
      ->group(input);
  one(app.add_option("-d,--delimiter", raw.delimiter,
                     "records end with DELIM (\\n \\t \\0 escapes)")->type_name("DELIM"))
      ->group(input);
  one(app.add_option("-n,--max-args", o.max_args,
                     "N arguments per command")->type_name("N"))
      ->group(input);
  one(app.add_option("-N,--max-replace-args", raw.exact_args,
                     "N arguments per command; {1}..{N} each one")->type_name("N"))
      ->group(input);
  app.add_flag("-X", o.multi_context,
               "as many arguments as fit, the word around {} repeated")
      ->group(input);
  app.add_flag("-m", o.multi_plain, "as many arguments as fit")
      ->group(input);
  app.add_flag("--pipe,--spreadstdin", o.pipe,
               "cut standard input into blocks fed to the commands")
      ->group(input);
  one(app.add_option("--block,--block-size", raw.block,
                     "--pipe block size (1M; k M G suffixes)")->type_name("SIZE"))
      ->group(input);
  one(app.add_option("--recend", o.recend, "--pipe record end (\\n)")->type_name("STR"))
      ->group(input);
  const std::string running = "Running";
  one(app.add_option("-j,-P,--jobs,--max-procs", raw.jobs,
                     "commands at once: N, N%, +N, -N (of the cores), 0 "
                     "(256); default: cores")->type_name("N"))
      ->group(running);
  one(app.add_option("--shell", o.shell,
                     "shell for the commands (else $PARALLEL_SHELL, the "
                     "calling shell, $SHELL)")->type_name("SHELL"))
      ->group(running);
  one(app.add_option("--timeout", raw.timeout,
                     "kill a command's process group after D (2s, 500ms)")->type_name("D"))
      ->group(running);
  one(app.add_option("--retries", raw.retries,
                     "N attempts in total for a failing command (0: no end)")->type_name("N"))
      ->group(running);
  one(app.add_option("--retry-delay", raw.retry_delay,
                     "wait before a retry (100ms), doubling")->type_name("D"))
      ->group(running);
  one(app.add_option("--halt,--halt-on-error", raw.halt,
                     "stop early: soon|now,fail|success|done=N|N%")->type_name("WHEN,WHY=N"))
      ->group(running);
  app.add_flag("--dry-run", o.dry_run, "print the commands, run nothing")
      ->group(running);
  const std::string remote = "Remote";
  app.add_option("-S,--sshlogin", o.sshlogins,
                 "run on [N/][user@]host (':' local), comma-separated")->type_name("LOGIN")
      ->allow_extra_args(false)
      ->group(remote);
  app.add_option("--sshloginfile,--slf", o.sshlogin_files,
                 "sshlogins from FILE, one a line")->type_name("FILE")
      ->allow_extra_args(false)
      ->group(remote);
  one(app.add_option("--ssh", o.ssh, "the ssh command (ssh)")->type_name("CMD"))->group(remote);
  app.add_option("--transferfile,--tf", o.transfer_files,
                 "copy FILE to the host first")->type_name("FILE")
      ->allow_extra_args(false)
      ->group(remote);
  app.add_flag("--transfer", raw.transfer, "= --transferfile {}")
      ->group(remote);
  app.add_option("--return", o.return_files, "copy FILE back afterwards")->type_name("FILE")
      ->allow_extra_args(false)
      ->group(remote);
  app.add_flag("--cleanup", o.cleanup, "remove transferred files afterwards")
      ->group(remote);
  app.add_option("--trc", raw.trc,
                 "= --transfer --return FILE --cleanup")->type_name("FILE")
      ->allow_extra_args(false)
      ->group(remote);
  const std::string output = "Output";
  app.add_flag("-k,--keep-order", o.keep_order, "outputs in input order")
      ->group(output);
  app.add_flag("--group", raw.group, "each output whole (default)")
      ->group(output);
  app.add_flag("--line-buffer,--lb", raw.line_buffer,
               "whole lines as they come")
      ->group(output);
  app.add_flag("-u,--ungroup", raw.ungroup, "output straight through")
      ->group(output);
  app.add_flag("--tag", o.tag, "prefix output lines with the arguments")
      ->group(output);
  one(app.add_option("--tagstring", o.tagstring,
                     "prefix output lines with STR (replacement strings)")->type_name("STR"))
      ->group(output);
  one(app.add_option("--results,--res", o.results,
                     "outputs into DIR/1/arg/stdout (GNU parallel's layout)")->type_name("DIR"))
      ->group(output);
  const std::string records = "Records";
  one(app.add_option("--joblog", o.joblog,
                     "GNU parallel's joblog ('-': standard output)")->type_name("FILE"))
      ->group(records);
  app.add_flag("--resume", o.resume, "skip the jobs in --joblog")
      ->group(records);
  app.add_flag("--resume-failed", o.resume_failed,
               "skip the jobs --joblog has as succeeded, rerun failed ones")
      ->group(records);
  one(app.add_option("--journal", o.journal,
                     "durable journal: rerun the same command line to resume")->type_name("FILE"))
      ->group(records);
  one(app.add_option("--queue", o.queue,
                     "a PostgreSQL queue shared by every poolrun that names "
                     "it: each runs what it claims; rerun to resume")
          ->type_name("postgres://..."))
      ->group(records);
  one(app.add_option("--queue-name", o.queue_name,
                     "with --queue: which queue of the database (default "
                     "poolrun)")->type_name("NAME"))
      ->group(records);
  one(app.add_option("--queue-outage", raw.queue_outage,
                     "with --queue: wait D for its database (5min), then "
                     "stop; rerun to resume")->type_name("D"))
      ->group(records);
  app.add_flag("--enqueue", o.enqueue,
               "with --queue: add the jobs to the queue and exit; run "
               "nothing here")
      ->group(records);
  app.add_flag("--replay", o.replay,
               "with --journal or --queue: print outputs of earlier runs too")
      ->group(records);
  const std::string progress = "Progress";
  one(app.add_option("--http", o.http,
                     "serve metrics (/metrics), JSON and a live page on "
                     "ADDR:PORT (127.0.0.1 unless given; actions need an "
                     "operator token)")
          ->type_name("ADDR:PORT"))
      ->group(progress);
  one(app.add_option("--http-token-file", o.http_token_file,
                     "with --http: the operator token, from a file only you "
                     "can read (or POOL_HTTP_TOKEN_FILE, POOL_HTTP_TOKEN in "
                     "the environment; never on the command line)")
          ->type_name("FILE"))
      ->group(progress);
  app.add_flag("--eta", o.eta, "estimated time left on standard error")
      ->group(progress);
  app.add_flag("--bar", o.bar, "progress bar on standard error")
      ->group(progress);
  app.add_flag("--progress", o.progress, "progress on standard error")
      ->group(progress);
  app.add_flag("--summary", o.summary, "a summary line at the end")
      ->group(progress);
  one(app.add_option("--status-interval", raw.status_interval,
                     "off a terminal: a status line this often (10s)")->type_name("D"))
      ->group(progress);
  app.add_flag("--version", o.version, "print the version")->group("Other");
  app.add_flag("--will-cite,--no-notice", raw.ignored,
               "accepted for GNU parallel's sake")
      ->group("Other");
}

/// Checks and converts the raw values; returns what is wrong, or "".
std::string finish(run_options& o, raw_values& raw) {
  auto bad = [](const std::string& option, const std::string& value,
                const std::string& expected) {
    return "invalid value '" + value + "' for " + option + ": expected " +
           expected;
  };
  if (!raw.jobs.empty()) {
    auto jobs = parse_jobs(raw.jobs);
    if (!jobs)
      return bad("-j", raw.jobs, "N, N%, +N, -N or 0");
    o.jobs = *jobs;
  }
  if (raw.null)
    o.delimiter = std::string(1, '\0');
  if (!raw.delimiter.empty()) {
    auto d = unescape(raw.delimiter);
    if (d.size() != 1)
      return bad("-d", raw.delimiter, "one character (or \\n, \\t, \\0)");
    o.delimiter = d;
  }
  if (!raw.block.empty()) {
    auto size = parse_size(raw.block);
    if (!size)
      return bad("--block", raw.block, "a size such as 1M, 512k or 4096");
    o.block_size = *size;
  }
  o.recend = unescape(o.recend);
  if (!raw.retries.empty()) {
    auto n = parse_count(raw.retries, 0, 1000000);
    if (!n)
      return bad("--retries", raw.retries, "a whole number (0: no end)");
    o.retries = static_cast<uint32_t>(*n);
  }
  if (!raw.retry_delay.empty()) {
    auto d = parse_duration(raw.retry_delay);
    if (!d)
      return bad("--retry-delay", raw.retry_delay, "a duration such as 100ms");
    o.retry_delay = *d;
  }
  if (!raw.queue_outage.empty()) {
    auto d = parse_duration(raw.queue_outage);
    if (!d || *d < std::chrono::seconds(1) || o.queue.empty())
      return bad("--queue-outage", raw.queue_outage,
                 "a duration of at least 1s, with --queue");
    o.queue_outage = *d;
  }
  if (!raw.timeout.empty()) {
    if (raw.timeout.back() == '%')
      return bad("--timeout", raw.timeout,
                 "a duration such as 500ms or 2s (poolrun has no "
                 "percentage of the median run time)");
    auto d = parse_duration(raw.timeout);
    if (!d || d->count() <= 0)
      return bad("--timeout", raw.timeout, "a positive duration such as 2s");
    o.timeout = *d;
  }
  if (!raw.halt.empty()) {
    std::string why;
    auto halt = parse_halt(raw.halt, why);
    if (!halt)
      return "invalid value '" + raw.halt + "' for --halt: " + why;
    o.halt = *halt;
  }
  if (!raw.status_interval.empty()) {
    auto d = parse_duration(raw.status_interval);
    if (!d || d->count() <= 0)
      return bad("--status-interval", raw.status_interval,
                 "a positive duration such as 10s");
    o.status_interval = *d;
  }
  if (raw.ungroup + raw.line_buffer + raw.group > 1)
    return "choose one of --group, --line-buffer and -u";
  if (raw.ungroup)
    o.output = output_mode::ungroup;
  else if (raw.line_buffer)
    o.output = output_mode::line_buffer;
  o.exact_args = raw.exact_args.value_or(0);
  o.no_args = raw.exact_args && *raw.exact_args == 0;
  if (raw.transfer)
    o.transfer_files.push_back("{}");
  for (auto& file : raw.trc) {
    o.transfer_files.push_back("{}");
    o.return_files.push_back(file);
    o.cleanup = true;
  }
  if (o.resume && o.resume_failed)
    return "choose one of --resume and --resume-failed";
  if ((o.resume || o.resume_failed) && (o.joblog.empty() || o.joblog == "-"))
    return "--resume and --resume-failed need --joblog FILE";
  if (o.replay && o.journal.empty() && o.queue.empty())
    return "--replay needs --journal FILE or --queue postgres://...";
  if (!o.queue.empty()) {
    if (!o.journal.empty())
      return "choose one of --journal and --queue";
    if (o.queue.rfind("postgres://", 0) != 0 &&
        o.queue.rfind("postgresql://", 0) != 0)
      return "--queue takes a PostgreSQL URI, postgres://[user@]"
             "host[:port]/database[?param=value...]";
    if (queue_has_password(o.queue))
      return "--queue carries a password, which every user of this host "
             "can read in the process list (ps, /proc/PID/cmdline): leave "
             "it out and let libpq find it in PGPASSWORD, in ~/.pgpass "
             "(chmod 600) or through PGSERVICE (pg_service.conf)";
    if (auto err = pool::pg_options{}.queue(o.queue_name).validate())
      return "--queue-name: " + pool::describe(err);
  } else if (o.queue_name != "poolrun") {
    return "--queue-name needs --queue postgres://...";
  } else if (o.enqueue) {
    return "--enqueue needs --queue postgres://...";
  }
  if (!o.http_token_file.empty() && o.http.empty())
    return "--http-token-file needs --http ADDR:PORT";
  if (!o.http.empty()) {
    pool::http_options http;
    if (auto err = pool::parse_http_address(o.http, http))
      return pool::describe(err);
  }
  for (auto ext : {".csv", ".tsv", ".json"})
    if (o.results.size() > 4 &&
        o.results.compare(o.results.size() - std::strlen(ext), std::string::npos,
                          ext) == 0)
      return "--results " + o.results +
             ": CSV, TSV and JSON results files are not supported by "
             "poolrun; give a directory";
  if (o.pipe && (o.multi_context || o.multi_plain))
    return "--pipe cannot be combined with -X or -m";
  if (o.multi_context && o.multi_plain)
    return "choose one of -X and -m";
  return {};
}

/// CLI11's usage line knows no command or sources: the description has
/// poolrun's instead.
class usage_in_description : public CLI::Formatter {
public:
  std::string make_usage(const CLI::App*, std::string) const override {
    return "\n";
  }
};

} // namespace

parsed_command_line parse_command_line(int argc, const char* const* argv) {
  parsed_command_line result;
  std::vector<std::string> head;
  std::vector<std::string> tail;
  for (int i = 1; i < argc; ++i) {
    if (tail.empty() && !is_separator(argv[i]))
      head.emplace_back(argv[i]);
    else
      tail.emplace_back(argv[i]);
  }
  auto& o = result.options;
  raw_values raw;
  CLI::App app{"poolrun"};
  app.prefix_command();
  define_options(app, o, raw);
  app.set_help_flag("-h,--help", "print this help")->group("Other");
  try {
    // CLI11 wants the arguments last to first.
    std::vector<std::string> reversed(head.rbegin(), head.rend());
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    o.help = true;
    return result;
  } catch (const CLI::ParseError& err) {
    result.error = err.what();
    return result;
  }
  auto rest = app.remaining();
  if (!rest.empty() && rest.front() == "--")
    rest.erase(rest.begin());
  else if (!rest.empty() && rest.front().size() > 1 && rest.front()[0] == '-')
    // prefix_command passes an unknown option on as the command.
    return {o, "unknown option '" + rest.front() + "'"};
  o.command = std::move(rest);
  for (auto& file : raw.arg_files) {
    input_source src;
    src.is_file = true;
    src.path = file;
    o.sources.push_back(std::move(src));
  }
  std::string error;
  auto sources = split_sources(tail, error);
  if (!error.empty())
    return {o, error};
  for (auto& src : sources)
    o.sources.push_back(std::move(src));
  result.error = finish(o, raw);
  return result;
}

std::string usage() {
  CLI::App app{"poolrun: runs a command for every input, several at once, "
               "like GNU parallel\n\n"
               "Usage: poolrun [OPTIONS] [COMMAND [ARGS...]] [::: VALUES...] "
               "[:::: FILES...]\n\n"
               "Without COMMAND every input line is a command. Replacement "
               "strings in\nCOMMAND: {} {.} {/} {//} {/.} {#} {%} {1} {1.} "
               "...; without any, the\narguments are appended.",
               "poolrun"};
  run_options o;
  raw_values raw;
  define_options(app, o, raw);
  app.set_help_flag("-h,--help", "print this help")->group("Other");
  app.formatter(std::make_shared<usage_in_description>());
  app.footer("Exit status: 0 all succeeded; 1-100 that many failed; 101 "
             "more; 255 poolrun's own error.\nDetails: docs/poolrun.md");
  return app.help();
}

std::string version_text() {
  return std::string{"poolrun "} + POOLRUN_VERSION +
         " (the pool project; drop-in for GNU parallel's common options)\n";
}

} // namespace poolrun
