#pragma once

#include <cstdint>
#include <string>

#include <caf/error.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/timespan.hpp>

namespace pool {

/// Options of one submit, carried with its operation (`sub_with`,
/// `enq_with`; docs/operations.md "Options per submit"). Every field left
/// at its default means "the pool's": pool-wide options stay the defaults.
/// Plain value; persisted with the operation by durable stores.
class job_options {
public:
  /// Highest priority a submit may ask for; 0 is the lowest and the default.
  static constexpr int32_t max_priority = 1000;

  /// Longest unique or concurrency key, in bytes.
  static constexpr size_t max_key_size = 1024;

  /// Higher runs first; FIFO within a priority (with `priority_aging`, a
  /// waiting entry gains one level per step). 0 to `max_priority`.
  job_options& priority(int32_t x) {
    priority_ = x;
    return *this;
  }

  /// Attempts in total (1 = no retry); 0 for the pool's `max_attempts`.
  job_options& max_attempts(uint32_t n) {
    max_attempts_ = n;
    return *this;
  }

  /// How long one attempt may run; 0 for the pool's `attempt_timeout`.
  job_options& attempt_timeout(caf::timespan x) {
    attempt_timeout_ = x;
    return *this;
  }

  /// Runs no earlier than `x` after the submit.
  job_options& delay(caf::timespan x) {
    delay_ = x;
    return *this;
  }

  /// At most one unfinished operation per key (as `enq_unique`); only for
  /// `enq_with`, which answers with the id of the one there already.
  job_options& unique_key(std::string x) {
    unique_key_ = std::move(x);
    return *this;
  }

  /// The operation's concurrency key: the pool's per-key limits
  /// (`pool_options::key_limit`) apply to it, and the queue takes turns
  /// between the keys of a priority (round-robin).
  job_options& concurrency_key(std::string x) {
    concurrency_key_ = std::move(x);
    return *this;
  }

  int32_t priority() const noexcept {
    return priority_;
  }

  uint32_t max_attempts() const noexcept {
    return max_attempts_;
  }

  caf::timespan attempt_timeout() const noexcept {
    return attempt_timeout_;
  }

  caf::timespan delay() const noexcept {
    return delay_;
  }

  const std::string& unique_key() const noexcept {
    return unique_key_;
  }

  const std::string& concurrency_key() const noexcept {
    return concurrency_key_;
  }

  /// `invalid_option` naming the field that is out of range (priority,
  /// max_attempts, attempt_timeout, delay, unique_key, concurrency_key).
  caf::error validate() const;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f,
                                                 job_options& x) {
    return f(caf::meta::type_name("pool::job_options"), x.priority_,
             x.max_attempts_, x.attempt_timeout_, x.delay_, x.unique_key_,
             x.concurrency_key_);
  }

private:
  int32_t priority_ = 0;
  uint32_t max_attempts_ = 0;
  caf::timespan attempt_timeout_{0};
  caf::timespan delay_{0};
  std::string unique_key_;
  std::string concurrency_key_;
};

} // namespace pool
