// The option table of poolrun's command line, by topic (as --help shows).
#include "cli_options.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "perl_expr.hpp"
#include "specs.hpp"

namespace poolrun {

void define_options(CLI::App& app, run_options& o, raw_values& raw) {
  auto one = [](CLI::Option* opt) {
    // Given twice ($PARALLEL or -J and the command line): the last wins.
    return opt->allow_extra_args(false)->expected(1)->multi_option_policy(
        CLI::MultiOptionPolicy::TakeLast);
  };
  // Counts take GNU parallel's prefixes too (-N 1k: 1000, -s 2K: 2048).
  auto count = [&one](CLI::Option* opt) {
    return one(opt)->transform([](std::string text) {
      if (!text.empty() &&
          !std::isdigit(static_cast<unsigned char>(text.back())))
        if (auto n = parse_size(text))
          return std::to_string(*n);
      return text;
    });
  };
  const std::string input = "Input";
  app.add_option("-a,--arg-file,--argfile", raw.arg_files,
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
  count(app.add_option("-n,--max-args,--maxargs", raw.max_args, "N arguments per command")
            ->type_name("N"))
      ->group(input);
  count(app.add_option("-N,--max-replace-args,--maxreplaceargs", raw.exact_args,
                       "N arguments per command; {1}..{N} each one")
            ->type_name("N"))
      ->group(input);
  count(app.add_option("-L,--max-lines", raw.max_lines,
                       "N input lines per command (as -N)")
            ->type_name("N"))
      ->group(input);
  app.add_flag("-l", raw.one_line, "-L 1")->group(input);
  one(app.add_option("-I", raw.replace_whole,
                     "STR stands for the argument instead of {}")->type_name("STR"))
      ->group(input);
  one(app.add_option("--extensionreplace,--er", raw.replace_ext,
                     "STR instead of {.}")->type_name("STR"))
      ->group(input);
  one(app.add_option("--basenamereplace,--bnr", raw.replace_base,
                     "STR instead of {/}")->type_name("STR"))
      ->group(input);
  one(app.add_option("--dirnamereplace,--dnr", raw.replace_dir,
                     "STR instead of {//}")->type_name("STR"))
      ->group(input);
  one(app.add_option("--basenameextensionreplace,--bner", raw.replace_base_ext,
                     "STR instead of {/.}")->type_name("STR"))
      ->group(input);
  one(app.add_option("--seqreplace", raw.replace_seq,
                     "STR instead of {#}")->type_name("STR"))
      ->group(input);
  one(app.add_option("--slotreplace", raw.replace_slot,
                     "STR instead of {%}")->type_name("STR"))
      ->group(input);
  app.add_flag("-i,--replace", raw.replace_default, "-I {}")->group(input);
  app.add_option("--rpl", raw.rpl,
                 "'TAG PERL': TAG stands for {= PERL =}; repeatable")
      ->type_name("'TAG PERL'")
      ->allow_extra_args(false)
      ->group(input);
  app.add_option("--tmpl,--template", raw.tmpl,
                 "FILE=NAME: FILE with its replacement strings filled in "
                 "written to NAME before each command; repeatable")
      ->type_name("FILE=NAME")
      ->allow_extra_args(false)
      ->group(input);
  app.add_flag("--plus", raw.plus,
               "GNU parallel's extra strings ({+/} {..} {%suffix} {uniq}...)")
      ->group(input);
  app.add_flag("-r,--no-run-if-empty", o.skip_empty,
               "skip input records of white space only")
      ->group(input);
  one(app.add_option("-E,-e,--eof", o.eof_str,
                     "input ends at a record equal to STR")->type_name("STR"))
      ->group(input);
  one(app.add_option("-C,--colsep,--col-sep", o.colsep,
                     "split records into columns {1} {2}... at REGEX")->type_name("REGEX"))
      ->group(input);
  one(app.add_option("--trim", o.trim,
                     "remove white space from values: n l r lr (lr with "
                     "--colsep)")->type_name("n|l|r|lr"))
      ->group(input);
  app.add_flag("--shuf", o.shuffle, "the jobs in random order")->group(input);
  app.add_flag("--skip-first-line,--skipfirstline", o.skip_first_line,
               "drop the first line of standard input")
      ->group(input);
  one(app.add_option("--header", o.header,
                     "the first line (':') or N lines of each source are "
                     "its header: {name} in the command; --pipe: put "
                     "before every block")->type_name(":|N"))
      ->group(input);
  app.add_flag("-X", o.multi_context,
               "as many arguments as fit, the word around {} repeated")
      ->group(input);
  app.add_flag("-m", o.multi_plain, "as many arguments as fit")
      ->group(input);
  app.add_flag("--round-robin,--roundrobin,--round", o.round_robin,
               "--pipe: one command per slot, the blocks dealt out among "
               "them (all input read first)")
      ->group(input);
  app.add_flag("--pipe,--spreadstdin", o.pipe,
               "cut standard input into blocks fed to the commands")
      ->group(input);
  app.add_flag("--tee", o.tee,
               "--pipe: all the input to every command, one per argument "
               "(all at once: -j 0 unless -j is given)")
      ->group(input);
  app.add_flag("--pipepart,--pipe-part", raw.pipepart,
               "--pipe over the file of -a FILE (or :::: FILE), cut in "
               "place")
      ->group(input);
  one(app.add_option("--block,--block-size,--blocksize", raw.block,
                     "--pipe block size (1M; K M G: of 1024, k m g: of "
                     "1000); --pipepart: -N: N blocks per job slot")
          ->type_name("SIZE"))
      ->group(input);
  one(app.add_option("--recend", raw.recend, "--pipe record end (\\n)")->type_name("STR"))
      ->group(input);
  one(app.add_option("--recstart", o.recstart,
                     "--pipe record start (with it, --recend defaults to "
                     "none)")->type_name("STR"))
      ->group(input);
  app.add_flag("--regexp,--regex", o.regexp,
               "--pipe: --recend and --recstart are regular expressions "
               "(ECMAScript)")
      ->group(input);
  app.add_flag("--rrs,--remove-rec-sep,--removerecsep", o.remove_separators,
               "--pipe: leave out the record end and start at the block's "
               "edges")
      ->group(input);
  count(app.add_option("-s,--max-chars,--maxchars", o.max_chars,
                       "-X/-m: commands shorter than N bytes")
            ->type_name("N"))
      ->group(input);
  const std::string running = "Running";
  one(app.add_option("-j,-P,--jobs,--max-procs,--maxprocs", raw.jobs,
                     "commands at once: N, N%, +N, -N (of the cores), 0 "
                     "(256); default: cores")->type_name("N"))
      ->group(running);
  app.add_option("--env", o.env_names,
                 "accepted: local commands get the whole environment "
                 "anyway (not with remote hosts)")->type_name("NAME")
      ->allow_extra_args(false)
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
                     "wait D before a retry, doubling up to 30s (default: retry at once)")->type_name("D"))
      ->group(running);
  one(app.add_option("--halt,--halt-on-error,--haltonerror", raw.halt,
                     "stop early: soon|now,fail|success|done=N|N%")->type_name("WHEN,WHY=N"))
      ->group(running);
  one(app.add_option("--workdir,--wd,--work-dir", o.workdir,
                     "local commands run in DIR ('.': here; '...': a "
                     "folder of their own, removed after)")
          ->type_name("DIR"))
      ->group(running);
  one(app.add_option("--tmpdir,--tempdir", o.tmpdir,
                     "poolrun's files (and $TMPDIR of the commands) go to "
                     "DIR")
          ->type_name("DIR"))
      ->group(running);
  one(app.add_option("--process-slot-var,--processslotvar", o.slot_var,
                     "each command gets NAME=its job slot - 1 in its "
                     "environment")
          ->type_name("NAME"))
      ->group(running);
  one(app.add_option("--nice", o.nice,
                     "run the commands (and poolrun) at niceness N")
          ->type_name("N"))
      ->group(running);
  one(app.add_option("--delay", raw.delay,
                     "at least D between the starts of two commands")->type_name("D"))
      ->group(running);
  app.add_flag("-q,--quote", o.quote,
               "quote the command's words (the shell sees them as given)")
      ->group(running);
  app.add_flag("--dry-run,--dryrun,--dr", o.dry_run, "print the commands, run nothing")
      ->group(running);
  const std::string remote = "Remote";
  app.add_option("-S,--sshlogin", o.sshlogins,
                 "run on [N/][user@]host (':' local), comma-separated")->type_name("LOGIN")
      ->allow_extra_args(false)
      ->group(remote);
  app.add_flag("--nonall", raw.nonall,
               "run the command once, without arguments (local only)")
      ->group(remote);
  app.add_option("--sshloginfile,--slf", o.sshlogin_files,
                 "sshlogins from FILE, one a line")->type_name("FILE")
      ->allow_extra_args(false)
      ->group(remote);
  one(app.add_option("--ssh", o.ssh, "the ssh command (ssh)")->type_name("CMD"))->group(remote);
  app.add_option("--transferfile,--tf,--transfer-file,--transfer-files,--transferfiles", o.transfer_files,
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
  app.add_flag("-k,--keep-order,--keeporder", o.keep_order, "outputs in input order")
      ->group(output);
  app.add_flag("--group", raw.group, "each output whole (default)")
      ->group(output);
  app.add_flag("--line-buffer,--lb,--line-buffered,--linebuffer,--linebuffered", raw.line_buffer,
               "whole lines as they come")
      ->group(output);
  app.add_flag("-u,--ungroup", raw.ungroup, "output straight through")
      ->group(output);
  app.add_flag("--files,--output-as-files,--outputasfiles", o.files,
               "each output into a file in $TMPDIR; print its name")
      ->group(output);
  app.add_flag("-v", o.print_command,
               "print each command before its output")
      ->group(output);
  app.add_flag("-t,--verbose", o.trace_command,
               "print each command on standard error as it starts")
      ->group(output);
  app.add_flag("--tag", o.tag, "prefix output lines with the arguments")
      ->group(output);
  one(app.add_option("--tagstring,--tag-string", o.tagstring,
                     "prefix output lines with STR (replacement strings)")->type_name("STR"))
      ->group(output);
  one(app.add_option("--results,--result,--res", o.results,
                     "outputs into DIR/1/arg/stdout (GNU parallel's layout)")
          ->type_name("DIR"))
      ->group(output);
  const std::string records = "Records";
  one(app.add_option("--joblog,--jl", o.joblog,
                     "GNU parallel's joblog ('-': standard output, +FILE: "
                     "append)")->type_name("FILE"))
      ->group(records);
  app.add_flag("--resume", o.resume, "skip the jobs in --joblog")
      ->group(records);
  app.add_flag("--resume-failed,--resumefailed", o.resume_failed,
               "skip the jobs --joblog has as succeeded, rerun failed ones")
      ->group(records);
  app.add_flag("--retry-failed,--retryfailed", o.retry_failed,
               "run the failed commands of --joblog again (its commands)")
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
  app.add_flag("-V,--version", o.version, "print the version")->group("Other");
  app.add_flag("--will-cite,--no-notice,--willcite,--nn,--nonotice", raw.ignored,
               "accepted for GNU parallel's sake")
      ->group("Other");
  // GNU parallel compresses its own buffer files; poolrun's spool is its
  // own business: the output is the same either way.
  app.add_flag("--compress", raw.compress,
               "--results files compressed (pzstd, zstd, ..., gzip: the "
               "first found); other spooled output stays uncompressed")
      ->group("Other");
  one(app.add_option("--compress-program,--use-compress-program,--compressprogram,--usecompressprogram", raw.compress_program,
                     "--compress with PRG (reads standard input, writes "
                     "standard output)")
          ->type_name("PRG"))
      ->group("Other");
  one(app.add_option("--decompress-program,--use-decompress-program,--decompressprogram,--usedecompressprogram", raw.decompress_program,
                     "accepted; poolrun reads back nothing compressed")
          ->type_name("PRG"))
      ->group("Other");
  one(app.add_option("--group-by,--groupby", raw.group_by,
                     "--pipe: lines with the same value in column N in a "
                     "row are one record")
          ->type_name("N"))
      ->group("Records");
  app.add_flag("--semaphore", o.semaphore,
               "run the command once a slot (-j, default 1) of the "
               "semaphore --id is free, in the background")
      ->group("Other");
  one(app.add_option("--id,--semaphore-name,--semaphorename", o.semaphore_id, "the semaphore's name")
          ->type_name("ID"))
      ->group("Other");
  app.add_flag("--fg", o.semaphore_fg, "--semaphore in the foreground")
      ->group("Other");
  app.add_flag("--wait", o.semaphore_wait,
               "--semaphore: wait for the semaphore's commands")
      ->group("Other");
  one(app.add_option("--_parset", raw.parset,
                     "env_parallel's parset: output as shell code setting "
                     "variables")
          ->type_name("var,NAME..."))
      ->group("Other");
  app.add_option("-J,--profile", raw.profiles,
                 "options from the file NAME in ~/.parallel (./NAME, /NAME: "
                 "that file); repeatable")
      ->type_name("NAME")
      ->allow_extra_args(false)
      ->group("Other");
}

void spell_optional_values(std::vector<std::string>& head) {
  // GNU parallel's -l0, -l2 (an attached count; -l0 means -l1): as -L N.
  // Only among the options (a word after two words that are no options
  // belongs to the command).
  for (size_t i = 0; i < head.size(); ++i) {
    auto& word = head[i];
    if (i >= 2 && head[i - 1][0] != '-' && head[i - 2][0] != '-')
      break;
    // -i and --replace take an optional value as GNU parallel's do: the
    // next word unless it is an option (`--replace +`), or attached
    // (`-i+`, `--replace==`): as -I STR.
    bool replace_word = word == "-i" || word == "--replace";
    if (replace_word && i + 1 < head.size() && !head[i + 1].empty() &&
        head[i + 1][0] != '-') {
      word = "-I";
      ++i;
      continue;
    }
    if ((word.size() > 2 && word.compare(0, 2, "-i") == 0 && word[2] != '-') ||
        word.rfind("--replace=", 0) == 0) {
      auto value = word.substr(word[1] == 'i' ? 2 : 10);
      word = "-I";
      head.insert(head.begin() + static_cast<std::ptrdiff_t>(i) + 1, value);
      ++i;
      continue;
    }
    // -l N (a count as the next word): GNU parallel's optional value.
    if (word == "-l" && i + 1 < head.size() && !head[i + 1].empty() &&
        head[i + 1].size() < 8 &&
        head[i + 1].find_first_not_of("0123456789") == std::string::npos) {
      word = "-L";
      if (head[i + 1] == "0")
        head[i + 1] = "1";
      ++i;
      continue;
    }
    if (word.size() > 2 && word.compare(0, 2, "-l") == 0 &&
        word.find_first_not_of("0123456789", 2) == std::string::npos &&
        word.size() < 9) {
      auto n = std::max(std::stoul(word.substr(2)), 1UL);
      word = "-L";
      head.insert(head.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                  std::to_string(n));
      ++i;
    }
  }
}

std::string finish_replacement_strings(run_options& o, raw_values& raw) {
  if (raw.replace_default && raw.replace_whole.empty())
    raw.replace_whole = "{}";
  for (auto [str, spelling] :
       {std::pair{&raw.replace_whole, "{}"}, {&raw.replace_ext, "{.}"},
        {&raw.replace_base, "{/}"}, {&raw.replace_dir, "{//}"},
        {&raw.replace_base_ext, "{/.}"}, {&raw.replace_seq, "{#}"},
        {&raw.replace_slot, "{%}"}})
    if (!str->empty() && *str != spelling)
      o.replace_strings.emplace_back(*str, spelling);
  for (auto& t : raw.tmpl) { // the file is read by run_setup
    auto eq = t.find('=');
    if (eq == 0 || eq == std::string::npos || eq + 1 == t.size())
      return "invalid value '" + t + "' for --tmpl: expected FILE=NAME";
    o.templates.emplace_back(t.substr(0, eq), t.substr(eq + 1));
  }
  if (raw.plus)
    o.perl_strings = plus_strings();
  for (auto& rpl : raw.rpl) {
    // 'TAG PERL': the tag ends at the first white space.
    auto end = rpl.find_first_of(" \t\n");
    auto tag = rpl.substr(0, end);
    if (tag.empty())
      return "invalid value '" + rpl +
             "' for --rpl: expected 'TAG PERL', such as '{..} s:\\.[^.]+$::'";
    o.perl_strings.emplace_back(
        tag, end == std::string::npos ? std::string{} : rpl.substr(end + 1));
  }
  return {};
}

bool needs_value(const std::string& option) {
  // An empty value of these is an error, not their default.
  static const std::set<std::string> names{
      "--trim",          "--jobs",          "--timeout", "--retry-delay",
      "--halt",          "--tmpdir",        "--nice",    "--_parset",
      "--journal",       "--queue",         "--queue-name", "--delay",
      "--queue-outage",  "--http",          "--http-token-file",
      "--status-interval"};
  return names.count(option) > 0;
}

std::string refused_option_advice(std::string_view option) {
  // GNU parallel options poolrun leaves out, and what to use instead
  // (docs/poolrun.md, "Differences from GNU parallel").
  static const std::pair<const char*, const char*> table[] = {
      {"--tmux", "watch the jobs with --line-buffer --tag, or --http"},
      {"--tmuxpane", "watch the jobs with --line-buffer --tag, or --http"},
      {"--onall", "run poolrun once per host with -S HOST"},
      {"--basefile", "copy the file first with --transferfile"},
      {"--bf", "copy the file first with --transferfile"},
      {"--sshdelay", "use --delay"},
      {"--fifo", "read the block from standard input (--pipe)"},
      {"--cat", "read the block from standard input (--pipe) or save it "
                "with cat > FILE in the command"},
      {"--sqlmaster", "use --joblog or --journal"},
      {"--sql-master", "use --joblog or --journal"},
      {"--sql", "use --joblog or --journal"},
      {"--sql-worker", "use --queue postgres://..."},
      {"--sql-and-worker", "use --queue postgres://..."},
      {"--tmux-pane", "watch the jobs with --line-buffer --tag, or --http"},
      {"--ssh-delay", "use --delay"},
      {"--sqlworker", "use --queue postgres://..."},
      {"--sqlandworker", "use --queue postgres://..."},
      {"--memfree", "lower -j"},
      {"--load", "lower -j"},
      {"--xargs", "use -m"},
      {"--csv", "use --colsep , for simple CSV"},
  };
  auto name = option.substr(0, option.find('='));
  for (auto& [known, advice] : table)
    if (name == known)
      return std::string{known} + " is not supported by poolrun: " + advice;
  return {};
}

} // namespace poolrun
