#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

#include <caf/error.hpp>
#include <caf/timespan.hpp>

#include "pool/work_record.hpp"

namespace pool {

/// What a running job can know about itself (`current_job()`).
struct job_context {
  /// The operation's id: the one `enqueue` replied, stable across attempts.
  uint64_t operation = 0;
  /// 1 for the first attempt, 2 for the next (a snooze also counts here;
  /// it does not count against `max_attempts`).
  uint32_t attempt = 0;
  /// When the shepherd gives up on this attempt (its attempt timeout), on
  /// the steady clock of the worker's machine, from when the worker began
  /// it; none without a timeout. The shepherd's clock started up to one
  /// message delivery earlier, so treat it as an upper bound.
  std::optional<std::chrono::steady_clock::time_point> deadline;

  /// Time left until `deadline` (negative once past it); none without one.
  std::optional<caf::timespan> time_left() const;
};

/// The context of the pool job running on the calling thread, or null when
/// no pool job runs on it. Valid until the job returns; a job that hands
/// work to another thread copies what it needs.
const job_context* current_job() noexcept;

/// Thrown by a job: this operation must not run again. The caller gets the
/// final failure (`operation_failed`, its history ending in `discarded`)
/// at once, whatever attempts were left.
class discard_job : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Thrown by a job: run this operation again after `delay`, without using
/// up an attempt and without advancing the retry backoff (the attempt is
/// in the history as `snoozed`).
class snooze_job : public std::runtime_error {
public:
  explicit snooze_job(caf::timespan delay);

  caf::timespan delay() const noexcept {
    return delay_;
  }

private:
  caf::timespan delay_;
};

/// The error a job returning `caf::expected<Out>` returns to discard its
/// operation (as `discard_job`); `why` lands in the history.
caf::error discard(std::string why);

/// The error a job returning `caf::expected<Out>` returns to snooze its
/// operation for `delay` (as `snooze_job`). A delay below 0 or above 366
/// days makes it an ordinary failed attempt (`invalid_delay`).
caf::error snooze(caf::timespan delay);

/// The delay of a valid snooze error; none for any other error.
std::optional<caf::timespan> snooze_delay(const caf::error& err);

/// Whether `err` says "discard this operation".
bool is_discard(const caf::error& err);

/// Makes attempts that fail with `code` of `category` count as timed out
/// (`pool_stats::timed_out`, `pool_attempts_timed_out_total`), as the
/// shepherd's own attempt timeouts do: for jobs that enforce their own
/// deadline (poolrun's `--timeout` kills). The pool's own category is
/// counted where the shepherd times an attempt out, never through this.
/// Safe from any thread.
void count_as_timeout(caf::atom_value category, uint8_t code);

/// Whether `err` is one `count_as_timeout` registered.
bool counts_as_timeout(const caf::error& err);

namespace detail {

/// Makes `current_job()` describe one attempt while it runs on this thread
/// (the worker's part); restores what was there before when it ends.
class job_scope {
public:
  explicit job_scope(const work_record& record);
  ~job_scope();

  job_scope(const job_scope&) = delete;
  job_scope& operator=(const job_scope&) = delete;

private:
  job_context context_;
  const job_context* previous_;
};

} // namespace detail

} // namespace pool
