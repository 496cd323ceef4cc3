// poolrun's configuration: everything the command line sets, as plain values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/timespan.hpp>

namespace poolrun {

/// poolrun's exit status for its own errors (a bad option, an unreadable
/// input, a journal or queue that cannot be opened, a refused record).
constexpr int own_error = 255;

/// One input source: the values after `:::`, or a file (`::::`, `-a`;
/// "-" is standard input).
struct input_source {
  bool is_file = false;
  std::vector<std::string> values;
  std::string path;
  /// `:::+` / `::::+`: linked to the source before it (its n-th value goes
  /// with the n-th value there) instead of combined with every value.
  bool linked = false;
};

/// `-j`: how many commands run at once, relative to a machine's cores.
struct jobs_spec {
  enum class kind : uint8_t {
    /// `-j N`: N.
    count,
    /// `-j N%`: N percent of the cores.
    percent,
    /// `-j +N`: cores + N.
    plus,
    /// `-j -N`: cores - N.
    minus,
    /// `-j 0`: as many as possible (poolrun: `unlimited_jobs`).
    unlimited,
  };
  kind type = kind::percent;
  int64_t value = 100;

  /// Commands at once on a machine with `cores` cores; at least 1.
  size_t slots(size_t cores) const;
};

/// `-j 0` means this many commands at once (GNU parallel: as many as file
/// handles allow).
constexpr size_t unlimited_jobs = 256;

/// `--halt`: when to stop early.
struct halt_spec {
  enum class when : uint8_t { never, soon, now };
  enum class why : uint8_t { fail, success, done };
  when on = when::never;
  why cause = why::fail;
  /// A percentage of all jobs (`fail=20%`) rather than a count.
  bool percent = false;
  /// The count, or the percentage.
  double value = 0;
};

/// How command output reaches poolrun's standard output and error.
enum class output_mode : uint8_t {
  /// Each command's output whole, when it ends (`--group`, the default).
  group,
  /// Whole lines as they come (`--line-buffer`).
  line_buffer,
  /// Straight through, unbuffered (`-u`, `--ungroup`).
  ungroup,
};

/// One `-S` entry: where slots run. `login` ":" is the local machine.
struct sshlogin {
  /// `[user@]host`, or ":" for local.
  std::string login;
  /// The ssh command and its options (`--ssh`, or the words before the
  /// host in a multi-word sshlogin).
  std::vector<std::string> ssh_command;
  /// `N/host`: the host's cores, else looked up over ssh.
  std::optional<size_t> cpus;
  /// As GNU parallel names it in the joblog's Host column.
  std::string display;

  bool local() const noexcept {
    return login == ":";
  }
};

/// Everything a run is configured with. Plain value.
struct run_options {
  // -- what runs ---------------------------------------------------------
  /// The command template's words (joined by spaces); empty: each input
  /// line is a whole command.
  std::vector<std::string> command;
  /// Input sources in order: `:::`, `::::`, `-a`; none means stdin.
  std::vector<input_source> sources;
  /// `--link`: all sources linked rather than combined.
  bool link = false;
  /// `-0`/`--null`, `-d`: what ends an input record (default newline).
  std::string delimiter = "\n";
  /// `-n N`: arguments per command; 0 = not set.
  size_t max_args = 0;
  /// `-N N`: as `-n` (GNU parallel's `-N` differs only for `{= =}`,
  /// which poolrun has not). 0 = not set.
  size_t exact_args = 0;
  /// `-N 0`: one argument read per command, none passed.
  bool no_args = false;
  /// `-X` (context replace) or `-m` (plain): as many arguments per command
  /// as fit.
  bool multi_context = false;
  bool multi_plain = false;
  /// `--pipe`: standard input is cut into blocks fed to the commands.
  bool pipe = false;
  /// `--tee` (with --pipe/--pipepart): all the input to every command,
  /// one command per argument, all at once (-j 0 unless -j is given).
  bool tee = false;
  /// `--pipepart -a FILE`: --pipe over FILE, cut as GNU parallel cuts it
  /// (each block runs past `block_size` to the next record end).
  std::string pipe_file;
  /// --pipepart's `--block -N` (and its default, 10; 1 with
  /// --round-robin): N blocks per job slot, the size worked out from
  /// the file's.
  double blocks_per_slot = 0;
  /// `--block`: block size for `--pipe` (GNU parallel default 1 MB).
  size_t block_size = 1024 * 1024;
  /// `--recend`: what ends a record in `--pipe` blocks (default "\n";
  /// "" with only --recstart given).
  std::string recend = "\n";
  /// `--recstart`: what starts a record in `--pipe` blocks.
  std::string recstart;
  /// `-L N`, `-l` (without --pipe): a line ending in a blank goes on in
  /// the next (xargs's rule; GNU parallel joins them into one argument).
  bool continued_lines = false;
  /// `--pipe -L N`: a record is N lines.
  size_t lines_per_record = 0;
  /// `--regexp`: --recend and --recstart are regular expressions
  /// (ECMAScript).
  bool regexp = false;
  /// `--rrs`: each block without its last record end (and first record
  /// start).
  bool remove_separators = false;
  /// `--header :` (one line) or `--header N` (lines): the first lines of
  /// each source (of standard input with --pipe) are its header.
  std::string header;
  /// Set from the header: the names of the fields, {name} in templates.
  std::vector<std::string> header_names;
  /// `-s N`, `--max-chars N`: -X/-m commands shorter than N bytes.
  size_t max_chars = 0;
  /// `--env NAME`: locally every variable is passed on anyway.
  std::vector<std::string> env_names;
  /// `-I STR` (`-i`, `--replace`), `--er`, `--bnr`, `--dnr`, `--bner`,
  /// `--seqreplace`, `--slotreplace`: a string that stands for a standard
  /// one (`{}`, `{.}`, `{/}`, `{//}`, `{/.}`, `{#}`, `{%}`), which is text
  /// then. Pairs of (string, standard spelling).
  std::vector<std::pair<std::string, std::string>> replace_strings;
  /// `--rpl 'TAG PERL'` and `--plus` (its strings first): strings that
  /// stand for a perl expression, as `{= PERL =}` does. Pairs (tag, perl).
  std::vector<std::pair<std::string, std::string>> perl_strings;
  /// `--tmpl FILE=NAME`: FILE's text, its replacement strings expanded,
  /// written to NAME (expanded too) before each command. Pairs of (the
  /// text, read by run_setup; NAME); `--cleanup` removes the files.
  std::vector<std::pair<std::string, std::string>> templates;
  /// `-q`: the command's words are quoted, so the shell sees them as given.
  bool quote = false;
  /// `-r`: records of white space only are skipped.
  bool skip_empty = false;
  /// `--skip-first-line`: the first line of standard input is dropped.
  bool skip_first_line = false;
  /// `-E STR`: each source ends at a value equal to STR.
  std::string eof_str;
  /// `--colsep REGEX` (`-C`): each record split into columns ({1} {2} ...).
  std::string colsep;
  /// `--trim n|l|r|lr`: white space removed from each value's ends
  /// (`lr` by default with --colsep).
  std::string trim;
  /// `--shuf`: the jobs in random order (all input read first).
  bool shuffle = false;
  /// `--delay D`: at least D between the starts of two commands.
  caf::timespan delay{0};
  /// `--nice N`: poolrun, and so every local command, runs at niceness N
  /// (GNU parallel nices its main process too); unset: unchanged.
  std::optional<int> nice;
  /// `--process-slot-var NAME`: NAME=`{%}` - 1 in each command's
  /// environment (as xargs -P).
  std::string slot_var;
  /// `--wd DIR` (local commands): each runs in DIR, made if need be;
  /// "." the current folder, "..." a folder of its own under
  /// ~/.parallel/tmp, removed after it.
  std::string workdir;
  /// `--tmpdir DIR`: $TMPDIR for poolrun and its commands.
  std::string tmpdir;
  /// `--_parset var,NAME...` / `assoc,NAME` (env_parallel's parset):
  /// each job's standard output (in order, -k) as shell code setting
  /// the variables NAME..., the array NAME or the associative array NAME.
  enum class parset_mode { none, vars, array, assoc } parset = parset_mode::none;
  std::vector<std::string> parset_names;
  /// `-v`: each command printed before its output; `-t`: on standard
  /// error as it starts.
  bool print_command = false;
  bool trace_command = false;
  /// `--round-robin` (with --pipe): one command per slot, the blocks
  /// dealt out among them; `round_robin_jobs` is set to the slots.
  bool round_robin = false;
  size_t round_robin_jobs = 1;
  /// `--files`: each command's standard output into a file; its name
  /// printed instead.
  bool files = false;
  /// `--joblog +FILE`: append to the joblog.
  bool joblog_append = false;
  /// `--shell` (else PARALLEL_SHELL, the calling shell, $SHELL, /bin/sh).
  std::string shell;

  // -- how many, where ---------------------------------------------------
  jobs_spec jobs;
  /// `-S` / `--sshlogin` / `--slf` entries as given (comma-split later).
  std::vector<std::string> sshlogins;
  std::vector<std::string> sshlogin_files;
  /// `--ssh`: the ssh command (else PARALLEL_SSH, else "ssh").
  std::string ssh;
  /// `--transferfile`, `--return` (templates), `--cleanup`.
  std::vector<std::string> transfer_files;
  std::vector<std::string> return_files;
  bool cleanup = false;

  // -- failures ----------------------------------------------------------
  /// `--retries N`: attempts in total (GNU parallel: 0 = without end);
  /// nothing = one attempt.
  std::optional<uint32_t> retries;
  /// `--retries` with replacement strings (`{//}`): each job's count.
  std::string retries_template;
  /// `--group-by N` (with --pipe): lines with the same value in column
  /// N (--colsep, a tab by default) in a row are one record; 0: none.
  size_t group_by = 0;
  /// `--compress` (or `--compress-program PRG`): with `--results`, the
  /// stdout and stderr files are written through PRG (else the first of
  /// GNU parallel's compressors found, see find_compress_program).
  bool compress = false;
  std::string compress_program;
  /// `--semaphore` (GNU parallel's sem): the command once, when a slot
  /// of the semaphore `--id` (-j slots, default 1) is free; in the
  /// background unless `--fg`; `--wait`: wait for the semaphore's
  /// commands instead.
  bool semaphore = false;
  std::string semaphore_id = "default";
  bool semaphore_fg = false;
  bool semaphore_wait = false;
  /// `--retry-delay D`: wait D before the first retry, doubling up to 30 s
  /// (with jitter); 0 (the default, as GNU parallel) retries at once.
  caf::timespan retry_delay{0};
  std::optional<caf::timespan> timeout;
  halt_spec halt;

  // -- output ------------------------------------------------------------
  output_mode output = output_mode::group;
  bool keep_order = false;
  /// `--tag`, `--tagstring`: a prefix for each output line.
  bool tag = false;
  std::string tagstring;
  /// `--results DIR` (GNU parallel's layout).
  std::string results;
  bool dry_run = false;
  std::string joblog;
  bool resume = false;
  bool resume_failed = false;
  /// `--retry-failed`: the failed commands of --joblog run again (its
  /// commands, not the command line's; a joblog not there: as usual).
  bool retry_failed = false;
  std::string journal;
  /// `--queue postgres://...`: the pool's queue in PostgreSQL, shared by
  /// every poolrun that names the same database and `--queue-name`.
  std::string queue;
  std::string queue_name = "poolrun";
  /// `--queue-outage D`: how long the run waits for the queue's database
  /// when it is out of reach (`pg_options::outage_limit`), then stops.
  caf::timespan queue_outage = std::chrono::minutes(5);
  /// `--enqueue`: with --queue, only add the jobs; run nothing here.
  bool enqueue = false;
  bool replay = false;
  /// `--http ADDR:PORT`: serve the pool's metrics and live page there
  /// (actions only with an operator token: `--http-token-file FILE`,
  /// POOL_HTTP_TOKEN_FILE or POOL_HTTP_TOKEN; never on the command line).
  std::string http;
  std::string http_token_file;

  // -- progress ----------------------------------------------------------
  bool eta = false;
  bool bar = false;
  bool progress = false;
  bool summary = false;
  /// Off a terminal, with --eta/--bar/--progress: a status line this often.
  caf::timespan status_interval = std::chrono::seconds(10);

  bool help = false;
  bool version = false;

  /// Whether anything names a command template.
  bool templated() const noexcept {
    return !command.empty();
  }

  /// Arguments per command with `-n`/`-N` (1 without).
  size_t args_per_command() const noexcept {
    return exact_args > 0 ? exact_args : (max_args > 0 ? max_args : 1);
  }
};

/// `--results X.json` (`-.json`: standard output): one JSON line per job.
inline bool results_json(const run_options& opts) {
  auto& r = opts.results;
  return r.size() > 5 && r.compare(r.size() - 5, 5, ".json") == 0;
}

} // namespace poolrun
