// The feeder thread: input -> jobs -> the runner, under credit.
#include "feeder.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string_view>

#include <fcntl.h>
#include <unistd.h>

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include "console.hpp"
#include "group_by.hpp"
#include "perl_strings.hpp"
#include "specs.hpp"
#include "type_ids.hpp"
#include "user_regex.hpp"

namespace poolrun {

namespace {

constexpr size_t batch_limit = 256;

std::string join_words(const std::vector<std::string>& words) {
  std::string out;
  for (auto& w : words)
    out += (out.empty() ? "" : " ") + w;
  return out;
}

} // namespace

std::string template_text(const run_options& opts) {
  return opts.quote ? quoted_template(opts.command, opts.replace_strings)
                    : join_words(opts.command);
}

namespace {

/// The perl evaluator, when a template needs one.
std::shared_ptr<perl_evaluator> perl_for(const run_options& opts) {
  if (opts.perl_strings.empty() &&
      !has_perl_expression(template_text(opts)) &&
      !has_perl_expression(opts.tagstring) &&
      !has_perl_expression(opts.results) &&
      std::none_of(opts.templates.begin(), opts.templates.end(), [](auto& t) {
        return has_perl_expression(t.first) || has_perl_expression(t.second);
      }))
    return nullptr;
  return std::make_shared<perl_evaluator>(opts.perl_strings);
}

} // namespace

std::string feeder::perl_error() const {
  return perl_ ? perl_->error() : std::string{};
}

feeder::feeder(run_options opts, std::unique_ptr<job_inputs> inputs,
               size_t window, size_t low_water)
    : opts_(std::move(opts)),
      inputs_(std::move(inputs)),
      perl_(perl_for(opts_)),
      // -N repeats the word around {} per argument, as -X does.
      command_(template_text(opts_),
               opts_.multi_context || opts_.exact_args > 0, opts_.replace_strings,
               opts_.header_names, perl_),
      tagstring_(opts_.tagstring, false, opts_.replace_strings,
                 opts_.header_names, perl_),
      results_(opts_.results, false, {}, {}, perl_),
      retries_(opts_.retries_template, false, opts_.replace_strings,
               opts_.header_names, perl_),
      window_(window),
      low_water_(low_water) {
  results_templated_ = results_.has_replacements();
  // As GNU parallel: `{}` (or `l{= ... =}`) in the command's first word
  // is not quoted.
  quote_values_ = opts_.quote || !command_.starts_with_replacement();
  for (auto& t : opts_.transfer_files)
    transfers_.emplace_back(t);
  for (auto& t : opts_.return_files)
    returns_.emplace_back(t);
  for (auto& [text, name] : opts_.templates) {
    template_contents_.emplace_back(text, false, opts_.replace_strings,
                                    opts_.header_names, perl_);
    template_names_.emplace_back(name, false, opts_.replace_strings,
                                 opts_.header_names, perl_);
    template_contents_.back().separate_values_with("");
    template_names_.back().separate_values_with("");
  }
}

feeder::~feeder() {
  stop();
}

void feeder::start(caf::actor runner) {
  runner_ = runner.address();
  thread_ = std::thread{[this] { run(); }};
}

void feeder::consumed(size_t n) {
  bool fits;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    outstanding_ -= std::min(n, outstanding_);
    fits = waiting_for_ > 0 && (outstanding_ + waiting_for_ <= window_ ||
                                outstanding_ == 0);
  }
  // Only when the waiting batch fits: not a wake-up per job started.
  if (fits)
    cv_.notify_all();
}

void feeder::stop() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopped_ = true;
  }
  cv_.notify_all();
  if (!thread_.joinable())
    return;
  if (done_)
    thread_.join();
  else
    thread_.detach(); // it may wait in a read of standard input
}

pending_job feeder::make_job(const arguments& args, uint64_t seq,
                             bool bad) const {
  if (bad && console::gnu_words()) {
    // Invoked as parallel: GNU parallel's way, each NUL byte becomes the
    // two characters \0 (docs/poolrun.md, "NUL bytes").
    auto& p = console::prefix();
    console::message("Warning: A NUL character in the input was replaced "
                     "with \\0.\n" + p + "Warning: NUL cannot be passed "
                     "through in the argument list.\n" + p +
                     "Warning: Did you mean to use the --null option?");
    auto replaced = args;
    for (auto& rec : replaced)
      for (auto& value : rec)
        for (auto at = value.find('\0'); at != std::string::npos;
             at = value.find('\0', at + 2))
          value.replace(at, 1, "\\0");
    return make_job(replaced, seq, false);
  }
  pending_job job;
  job.spec.seq = seq;
  if (bad) {
    job.error = "input for job " + std::to_string(seq) +
                " holds a NUL byte, which no command can carry (use -0 or "
                "--null when the input is NUL-separated); not run";
    return job;
  }
  if (perl_) {
    std::vector<std::string> flat;
    for (auto& rec : args)
      flat.insert(flat.end(), rec.begin(), rec.end());
    perl_->begin_job(seq, flat);
  }
  job.spec.command = command_.empty()
                         ? join_arguments(args)
                         : command_.expand(args, seq, quote_values_);
  if (job.spec.command.size() > max_command_length) {
    job.error = "the command of job " + std::to_string(seq) + " is " +
                std::to_string(job.spec.command.size()) +
                " bytes long; the system's limit for one is " +
                std::to_string(max_command_length) + "; not run";
    job.spec.command.clear();
    return job;
  }
  if (!opts_.retries_template.empty()) {
    auto text = retries_.expand(args, seq, false);
    auto n = parse_count(text, 0, 1000000);
    if (!n) {
      job.error = "--retries " + opts_.retries_template + " is '" + text +
                  "' for job " + std::to_string(seq) +
                  ": expected a whole number (0: no end); not run";
      job.spec.command.clear();
      return job;
    }
    job.spec.attempts = *n == 0 ? 1000000000u : static_cast<uint32_t>(*n);
  }
  if (opts_.tag || !opts_.tagstring.empty()) {
    // (A --tagstring without replacement strings is the tag as it is.)
    job.tag = opts_.tagstring.empty() ? join_arguments(args)
              : tagstring_.has_replacements()
                  ? tagstring_.expand(args, seq, false)
                  : opts_.tagstring;
    job.tag += '\t';
    if (opts_.output == output_mode::line_buffer)
      job.spec.tag = job.tag;
  }
  if (results_json(opts_) || opts_.parset == run_options::parset_mode::assoc) {
    for (auto& rec : args) // a JSON line or parset's key, by the reporter
      job.values.insert(job.values.end(), rec.begin(), rec.end());
  } else if (!opts_.results.empty()) {
    if (results_templated_) {
      job.results = results_.expand(args, seq, false);
      job.results_dir = !job.results.empty() && job.results.back() == '/';
    } else {
      job.results =
          results_dir_for(opts_.results, args, opts_.header_names) + "/";
      job.results_dir = true;
    }
  }
  for (auto& t : transfers_)
    job.spec.transfer.push_back(t.expand(args, seq, false));
  for (auto& t : returns_)
    job.spec.returns.push_back(t.expand(args, seq, false));
  for (size_t i = 0; i < template_names_.size(); ++i) {
    // (Without replacement strings, a template is the text as it is.)
    auto fill = [&](const command_template& t, const std::string& text) {
      return t.has_replacements() ? t.expand(args, seq, false) : text;
    };
    job.spec.template_names.push_back(
        fill(template_names_[i], opts_.templates[i].second));
    job.spec.template_contents.push_back(
        fill(template_contents_[i], opts_.templates[i].first));
  }
  job.skip = perl_ && perl_->skipped();
  return job;
}

void feeder::flush(bool wait_for_credit) {
  if (batch_.empty())
    return;
  {
    std::unique_lock<std::mutex> guard{mtx_};
    if (wait_for_credit && window_ > 0) {
      waiting_for_ = batch_.size();
      cv_.wait(guard, [this] {
        return stopped_ || outstanding_ + batch_.size() <= window_ ||
               outstanding_ == 0;
      });
      waiting_for_ = 0;
    }
    if (stopped_)
      return;
    outstanding_ += batch_.size();
  }
  if (auto runner = caf::actor_cast<caf::actor>(runner_))
    caf::anon_send(runner, feed_atom_v, std::move(batch_));
  batch_.clear();
  batch_.reserve(batch_limit);
}

void feeder::remove_separators(std::string& block) const {
  // --rrs: the last record end and the first record start go.
  auto& end = opts_.recend;
  if (!end.empty() && block.size() >= end.size() &&
      block.compare(block.size() - end.size(), end.size(), end) == 0)
    block.resize(block.size() - end.size());
  auto& start = opts_.recstart;
  if (!start.empty() && block.compare(0, start.size(), start) == 0)
    block.erase(0, start.size());
}

bool feeder::read_all_input(std::string& all, std::string& error) const {
  // Standard input, or the --pipepart file.
  int fd = 0;
  if (!opts_.pipe_file.empty()) {
    fd = ::open(opts_.pipe_file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      error = "cannot read input file '" + opts_.pipe_file +
              "': " + std::strerror(errno);
      return false;
    }
  }
  char chunk[65536];
  for (;;) {
    auto n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n < 0)
        error = std::string{"cannot read the input: "} + std::strerror(errno);
      break;
    }
    all.append(chunk, static_cast<size_t>(n));
  }
  if (fd != 0)
    ::close(fd);
  return error.empty();
}

bool feeder::skip_block(const std::string& block) const {
  // -r: a block of white space only starts no command.
  return opts_.skip_empty &&
         block.find_first_not_of(" \t\r\n") == std::string::npos;
}

void feeder::run() {
  uint64_t seq = 0;
  bool perl_ended = false;
  std::string error;
  auto push = [&](pending_job job) {
    if (perl_ && !perl_->error().empty()) {
      // perl ended (exit in an expression): the input ends here.
      if (!perl_ended) {
        perl_ended = true;
        error = perl_->error();
      }
      return;
    }
    batch_.push_back(std::move(job));
    size_t outstanding;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      outstanding = outstanding_;
    }
    // --tee: every command at once (as GNU parallel's tee feeds them),
    // so all go to the runner together.
    if (!opts_.tee &&
        (batch_.size() >= batch_limit || outstanding < low_water_))
      flush(true);
  };
  auto hook = [this] { flush(true); };
  if (opts_.tee) {
    // --tee: the whole input to one command per argument.
    std::string all;
    if (read_all_input(all, error)) {
      arguments args;
      bool bad = false;
      while (!stopped_ && !perl_ended && inputs_->next(args, bad)) {
        auto job = make_job(args, ++seq, bad);
        if (!command_.empty() && !command_.has_replacements())
          job.spec.command = command_.expand({}, seq); // as --pipe: none
        job.spec.input = all;
        push(std::move(job));
      }
      if (error.empty())
        error = inputs_->error();
    }
  } else if (opts_.pipe) {
    std::unique_ptr<record_reader> file;
    if (!opts_.pipe_file.empty())
      file = record_reader::open(opts_.pipe_file, "\n", error);
    // (-1: a --pipepart file that could not be opened reads nothing.)
    record_reader stdin_reader{opts_.pipe_file.empty() ? 0 : -1, false, "\n",
                               "standard input"};
    auto& in = file ? *file : stdin_reader;
    in.before_blocking(hook);
    pipe_cut how;
    how.block = opts_.block_size;
    how.recend = opts_.recend;
    how.recstart = opts_.recstart;
    how.records = opts_.exact_args > 0 ? opts_.exact_args : opts_.max_args;
    how.lines_per_record = opts_.lines_per_record;
    how.in_place = !opts_.pipe_file.empty();
    how.regexp = opts_.regexp;
    pipe_blocks blocks{in, std::move(how)};
    std::string header; // --header: before every block
    if (opts_.skip_first_line)
      blocks.skip_line();
    header.clear();
    if (auto lines = header_lines(opts_); lines > 0)
      blocks.next_records(lines, header);
    else if (!opts_.header.empty()) // checked by the CLI
      blocks.next_matching(user_regex(opts_.header), header);
    // --group-by: whole groups of lines a block.
    std::unique_ptr<group_blocks> groups;
    if (opts_.group_by > 0)
      groups = std::make_unique<group_blocks>(
          blocks, opts_.group_by, opts_.colsep.empty() ? "\t" : opts_.colsep,
          opts_.exact_args > 0 ? opts_.exact_args : opts_.max_args,
          opts_.block_size);
    auto next = [&](std::string& b) {
      return groups ? groups->next(b) : blocks.next(b);
    };
    std::string block;
    if (opts_.round_robin) {
      // --round-robin: the blocks dealt out to one command per slot (GNU
      // parallel streams them; here they are read first).
      std::vector<std::string> dealt(opts_.round_robin_jobs);
      size_t count = 0;
      while (!stopped_ && !perl_ended && next(block)) {
        if (opts_.remove_separators)
          remove_separators(block);
        if (!skip_block(block))
          dealt[count++ % dealt.size()] += header + block;
      }
      for (size_t i = 0; i < std::min(count, dealt.size()); ++i) {
        auto job = make_job({}, ++seq, false);
        job.spec.input = std::move(dealt[i]);
        push(std::move(job));
      }
    }
    while (!opts_.round_robin && !stopped_ && !perl_ended && next(block)) {
      if (opts_.remove_separators)
        remove_separators(block);
      if (skip_block(block))
        continue;
      auto job = make_job({}, ++seq, false);
      job.spec.input = header + block;
      push(std::move(job));
    }
    if (error.empty())
      error = in.error();
  } else if (opts_.shuffle || (perl_ && perl_->wants_total())) {
    // --shuf: every input first, then the jobs in random order; so too
    // for total_jobs() ({##}), in input order.
    std::vector<std::pair<arguments, bool>> all;
    arguments args;
    bool bad = false;
    while (!stopped_ && !perl_ended && inputs_->next(args, bad))
      all.emplace_back(std::move(args), bad);
    error = inputs_->error();
    if (opts_.shuffle)
      std::shuffle(all.begin(), all.end(),
                   std::mt19937_64{std::random_device{}()});
    if (perl_)
      perl_->set_total(all.size());
    for (auto& [a, b] : all) {
      if (stopped_ || perl_ended)
        break;
      push(make_job(a, ++seq, b));
    }
  } else {
    inputs_->before_blocking(hook);
    arguments args;
    bool bad = false;
    while (!stopped_ && !perl_ended && inputs_->next(args, bad))
      push(make_job(args, ++seq, bad));
    if (error.empty())
      error = inputs_->error();
  }
  flush(false);
  {
    std::lock_guard<std::mutex> guard{mtx_};
    auto runner = caf::actor_cast<caf::actor>(runner_);
    if (!stopped_ && runner)
      caf::anon_send(runner, feed_end_atom_v, seq, std::move(error));
  }
  done_ = true;
}

} // namespace poolrun
