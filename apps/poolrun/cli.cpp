// Command-line parsing: input sources split off by hand (CLI11 knows no
// `:::`), everything else by CLI11.
#include "cli.hpp"

#include <pool/errors.hpp>
#include <pool/http.hpp>
#include <pool/pg_options.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <regex>

#include <CLI/CLI.hpp>

#include "cli_options.hpp"
#include "console.hpp"
#include "inputs.hpp"
#include "secrets.hpp"
#include "specs.hpp"
#include "user_regex.hpp"

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
        src.linked = linked; // ::::+ F1 F2: each linked to the one before
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
    if (d.empty())
      return bad("-d", raw.delimiter,
                 "one or more characters (\\n, \\t, \\0 escapes)");
    o.delimiter = d;
  }
  if (raw.pipepart) {
    // --pipepart: the file (GNU parallel leaves out `:::` values here).
    o.pipe = true;
    std::vector<input_source> files;
    for (auto& src : o.sources)
      if (src.is_file)
        files.push_back(src);
    if (files.size() != 1 || files[0].path == "-")
      return "--pipepart needs one file: -a FILE or :::: FILE (poolrun "
             "cuts one file; use --pipe < FILE for standard input)";
    o.pipe_file = files[0].path;
    // (With --tee the other sources are the commands' arguments.)
    o.sources.erase(std::remove_if(o.sources.begin(), o.sources.end(),
                                   [&](auto& s) { return s.is_file || !o.tee; }),
                    o.sources.end());
    o.blocks_per_slot = 10;
    if (!raw.block.empty() && raw.block[0] == '-') {
      auto per_slot = parse_size(raw.block.substr(1));
      if (!per_slot)
        return bad("--block", raw.block, "-N (N blocks per job slot)");
      o.blocks_per_slot = static_cast<double>(*per_slot);
      raw.block.clear();
    } else if (!raw.block.empty()) {
      o.blocks_per_slot = 0;
    }
    if (o.round_robin)
      o.blocks_per_slot = 1; // one block per slot, whatever --block says
  }
  if (!raw.block.empty()) {
    auto size = parse_size(raw.block);
    if (!size)
      return bad("--block", raw.block, "a size such as 1M, 512k or 4096");
    o.block_size = *size;
  }
  if (!o.header.empty() && is_header_pattern(o.header)) {
    if (!o.pipe)
      return bad("--header", o.header,
                 ": or a number of lines (a regular expression only with "
                 "--pipe)");
    try {
      static_cast<void>(user_regex(o.header));
    } catch (const std::regex_error&) {
      return bad("--header", o.header, "a regular expression");
    }
  }
  o.recstart = unescape(o.recstart);
  if (raw.recend)
    o.recend = unescape(*raw.recend);
  else if (!o.recstart.empty())
    o.recend.clear(); // GNU parallel: only --recstart cuts then
  if (o.regexp) {
    try {
      static_cast<void>(
          user_regex("(?:" + o.recend + ")(?=" + o.recstart + ")"));
    } catch (const std::regex_error&) {
      return bad("--recend/--recstart", o.recend + " " + o.recstart,
                 "regular expressions (with --regexp)");
    }
  }
  if (!o.env_names.empty() &&
      (!o.sshlogin_files.empty() ||
       std::any_of(o.sshlogins.begin(), o.sshlogins.end(),
                   [](const std::string& x) { return x != ":"; })))
    return "--env with remote hosts is not supported by poolrun: set the "
           "variable in the command (VAR=value cmd); local commands get "
           "the whole environment anyway";
  if (raw.retries.find('{') != std::string::npos) {
    o.retries_template = raw.retries; // counted per job by the feeder
  } else if (!raw.retries.empty()) {
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
    auto gnu_why = gnu_halt_error(raw.halt);
    if (!halt && console::gnu_words() && !gnu_why.empty())
      return gnu_why;
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
  if (raw.one_line && !raw.max_lines)
    raw.max_lines = 1;
  if (raw.max_lines && o.pipe) {
    // --pipe -L N: a record is N lines (GNU parallel).
    o.lines_per_record = std::max<size_t>(*raw.max_lines, 1);
  } else if (raw.max_lines) {
    // -L N: N lines per command (GNU parallel: as -N, for lines; -L 0
    // as -N 0).
    o.continued_lines = true;
    if (!raw.exact_args)
      raw.exact_args = raw.max_lines;
  }
  if (auto err = finish_replacement_strings(o, raw); !err.empty())
    return err;
  if (!raw.delay.empty()) {
    auto d = parse_duration(raw.delay);
    if (!d || d->count() < 0)
      return bad("--delay", raw.delay, "a duration such as 0.5 or 100ms");
    o.delay = *d;
  }
  if (!o.joblog.empty() && o.joblog[0] == '+' && o.joblog.size() > 1) {
    o.joblog.erase(0, 1);
    o.joblog_append = true;
  }
  if (!o.header.empty() && o.colsep.empty() && !o.pipe)
    o.colsep = "\t"; // GNU parallel: --header splits at tabs by default
  if (!o.colsep.empty()) {
    try {
      static_cast<void>(user_regex(o.colsep));
    } catch (const std::regex_error&) {
      return bad("--colsep", o.colsep, "a regular expression");
    }
    if (o.trim.empty())
      o.trim = "lr";
  }
  if (!o.trim.empty() && o.trim != "n" && o.trim != "l" && o.trim != "r" &&
      o.trim != "lr" && o.trim != "rl")
    return bad("--trim", o.trim, "n, l, r or lr");
  o.exact_args = raw.exact_args.value_or(0);
  o.max_args = raw.max_args.value_or(0);
  // -n0 as -N0: one argument read per command, none passed (GNU parallel).
  o.no_args = (raw.exact_args && *raw.exact_args == 0) ||
              (raw.max_args && *raw.max_args == 0);
  if (raw.transfer)
    o.transfer_files.push_back("{}");
  for (auto& file : raw.trc) {
    o.transfer_files.push_back("{}");
    o.return_files.push_back(file);
    o.cleanup = true;
  }
  if (o.resume && o.resume_failed)
    return "choose one of --resume and --resume-failed";
  // (--joblog -: a file named "-", mostly not there, as GNU parallel.)
  if ((o.resume || o.resume_failed || o.retry_failed) && o.joblog.empty())
    return "--resume, --resume-failed and --retry-failed need --joblog FILE";
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
  if (raw.nonall) {
    // --nonall: the command once on each host, no input read; poolrun
    // runs it on the local one.
    if (!o.sshlogin_files.empty() ||
        std::any_of(o.sshlogins.begin(), o.sshlogins.end(),
                    [](const std::string& x) { return x != ":"; }))
      return "--nonall with remote hosts is not supported by poolrun: run "
             "poolrun once per host with -S HOST";
    if (!o.sources.empty())
      return "--nonall takes no input (no ::: or :::: or -a)";
    input_source once;
    once.values = {""};
    o.sources = {once};
    o.no_args = true;
  }
  o.compress = raw.compress || !raw.compress_program.empty();
  o.compress_program = raw.compress_program; // "": found by the reporter
  for (auto ext : {".csv", ".tsv"})
    if (o.results.size() > 4 &&
        o.results.compare(o.results.size() - std::strlen(ext), std::string::npos,
                          ext) == 0)
      return "--results " + o.results +
             ": CSV and TSV results files are not supported by "
             "poolrun; give a directory";
  if (o.tee && (!o.pipe || o.sources.empty()))
    return "--tee needs --pipe (or --pipepart) and arguments (::: a b): "
           "all the input goes to one command per argument";
  if (o.tee && raw.jobs.empty())
    o.jobs = *parse_jobs("0"); // as GNU parallel: all at once
  if (o.pipe && o.command.empty() && !o.tee)
    return "--pipe must have a command to pipe into (e.g. 'cat')";
  if (o.pipe && (o.multi_context || o.multi_plain))
    return "--pipe cannot be combined with -X or -m";
  if (auto why = finish_added_options(o, raw); !why.empty())
    return why;
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
  spell_optional_values(head);
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
  for (auto* opt : app.get_options()) // the value that counts: the last
    if (!opt->results().empty() && opt->results().back().empty() &&
        needs_value(opt->get_name()))
      return {o, opt->get_name() + ": an empty value; give one",
              raw.profiles};
  result.profiles = raw.profiles;
  auto rest = app.remaining();
  if (!rest.empty() && rest.front() == "--")
    rest.erase(rest.begin());
  else if (!rest.empty() && rest.front().size() > 1 &&
           rest.front()[0] == '-') {
    // prefix_command passes an unknown option on as the command.
    auto advice = refused_option_advice(rest.front());
    if (advice.empty())
      advice = "unknown option '" + rest.front() + "'";
    return {o, advice, raw.profiles};
  }
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
    return {o, error, raw.profiles};
  for (auto& src : sources)
    o.sources.push_back(std::move(src));
  result.error = finish(o, raw);
  return result;
}

std::vector<std::string> with_environment_options(int argc,
                                                  const char* const* argv,
                                                  const char* parallel_env) {
  std::vector<std::string> result;
  if (argc > 0)
    result.emplace_back(argv[0]);
  if (parallel_env != nullptr) {
    std::string word;
    bool in_word = false;
    for (const char* p = parallel_env; *p != '\0'; ++p) {
      if (*p == '\\' && p[1] != '\0') {
        word += *++p;
        in_word = true;
      } else if (std::isspace(static_cast<unsigned char>(*p))) {
        if (in_word)
          result.push_back(std::move(word));
        word.clear();
        in_word = false;
      } else {
        word += *p;
        in_word = true;
      }
    }
    if (in_word)
      result.push_back(std::move(word));
  }
  for (int i = 1; i < argc; ++i)
    result.emplace_back(argv[i]);
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
