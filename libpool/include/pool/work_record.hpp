#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <caf/allowed_unsafe_message_type.hpp>

#include <caf/error.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/timespan.hpp>

namespace pool {

/// Identifies one dispatch of an operation: (operation id, attempt number).
/// A reply for an attempt the shepherd no longer waits for is dropped.
struct attempt_id {
  /// Operation id, unique per shepherd, assigned at submit; never 0.
  uint64_t operation = 0;
  /// 1 for the first dispatch, 2 for the first retry, ...
  uint32_t attempt = 0;
};

inline bool operator==(const attempt_id& x, const attempt_id& y) noexcept {
  return x.operation == y.operation && x.attempt == y.attempt;
}

inline bool operator!=(const attempt_id& x, const attempt_id& y) noexcept {
  return !(x == y);
}

/// Renders as `op#<operation>/<attempt>`.
std::string to_string(const attempt_id& x);

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, attempt_id& x) {
  return f(caf::meta::type_name("pool::attempt_id"), x.operation, x.attempt);
}

/// One entry of the queue and the unit of work handed to a worker: the
/// attempt identity plus the type-erased input of the user's function.
struct work_record {
  work_record() = default;

  work_record(attempt_id id, caf::message payload,
              caf::timespan budget = caf::timespan{0})
      : id(id), payload(std::move(payload)), budget(budget) {
    // nop
  }

  attempt_id id;
  /// The operation's input, exactly as the caller submitted it.
  caf::message payload;
  /// How long this attempt may run before the shepherd gives up on it (its
  /// attempt timeout); 0 for no limit. Set when handed to a worker, which
  /// shows it to the job (`current_job()`).
  caf::timespan budget{0};
  /// Where the queue puts it: higher priority first, and turns between the
  /// concurrency keys of a priority (`job_options`); 0 and empty for a
  /// plain submit.
  int32_t priority = 0;
  std::string concurrency_key;
  /// The operation's own attempts in total (`job_options`); 0 for the
  /// pool's. Set by a shared store for a shepherd that runs an operation
  /// another one accepted (with `budget` as its attempt timeout).
  uint32_t max_attempts = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, work_record& x) {
  return f(caf::meta::type_name("pool::work_record"), x.id, x.payload,
           x.budget, x.priority, x.concurrency_key, x.max_attempts);
}

/// A job's result made as the reply to its caller: the mailbox element
/// the shepherd sends on once it has named itself the sender and set the
/// caller's message id. One allocation holds the result and the reply,
/// where a result message and the reply wrapping it take two. A copy (only
/// of a shared outcome list) copies the content into an element of its own.
class prepared_reply {
public:
  prepared_reply() noexcept = default;

  explicit prepared_reply(caf::mailbox_element_ptr element) noexcept
      : element_(std::move(element)) {
    // nop
  }

  prepared_reply(prepared_reply&&) noexcept = default;
  prepared_reply& operator=(prepared_reply&&) noexcept = default;
  prepared_reply(const prepared_reply& other);
  prepared_reply& operator=(const prepared_reply& other);

  explicit operator bool() const noexcept {
    return element_ != nullptr;
  }

  /// The element, leaving this empty.
  caf::mailbox_element_ptr take() noexcept {
    return std::move(element_);
  }

  /// The result as a message (for the paths that record or publish it),
  /// leaving this empty; an empty message when empty.
  caf::message take_message();

private:
  caf::mailbox_element_ptr element_;
};

/// What a worker reports for one attempt of a batch: the result, or
/// (`failed()`) the error.
struct attempt_outcome {
  attempt_id id;
  /// The job's result; empty when the attempt failed (or when `reply`
  /// holds it).
  caf::message result;
  /// Why the attempt failed; none when it succeeded.
  caf::error error;
  /// The job's result as its caller's reply: a worker on the shepherd's
  /// node reports it so instead of in `result`. Never crosses the network
  /// (a serialized outcome carries it in `result`).
  prepared_reply reply;

  bool failed() const noexcept {
    return static_cast<bool>(error);
  }

  /// The result as a message, whichever way it was reported.
  caf::message take_result() {
    return reply ? reply.take_message() : std::move(result);
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, attempt_outcome& x) {
  if (x.reply) // (Serialized, or printed, as a message.)
    x.result = x.reply.take_message();
  return f(caf::meta::type_name("pool::attempt_outcome"), x.id, x.result,
           x.error);
}

/// One failed attempt in an operation's history.
struct attempt_failure {
  /// Which attempt failed (1 = the first).
  uint32_t attempt = 0;
  /// When it failed, counted from the submit (on the actor clock).
  caf::timespan after_submit{0};
  /// Why it failed: the job's error, a timeout, a dead worker, ...
  caf::error reason;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, attempt_failure& x) {
  return f(caf::meta::type_name("pool::attempt_failure"), x.attempt,
           x.after_submit, x.reason);
}

/// Renders as `#<attempt> at +<ms> ms: <reason>`.
std::string to_string(const attempt_failure& x);

/// Decides who runs an entry handed ahead to busy in-process workers
/// (`(work_to_do, work_record, claim_ticket)`, docs/protocol.md
/// "Hand-ahead"): the first of them to take it when its job ends, or nobody
/// if the shepherd withdrew it first (to give it to a worker that asked).
/// Either one `take` succeeds, or `withdraw` does (every time). Copies share one state;
/// in-process only (never serialized).
class claim_ticket {
public:
  claim_ticket() : state_(std::make_shared<std::atomic<uint64_t>>(open)) {
    // nop
  }

  /// A worker with the (nonzero) actor id `taker`: true if it runs the
  /// entry (and then must report it).
  bool take(uint64_t taker) noexcept {
    return settle(taker);
  }

  /// The shepherd: true if no worker will run the entry (withdrawn now or
  /// before).
  bool withdraw() noexcept {
    return settle(withdrawn)
           || state_->load(std::memory_order_acquire) == withdrawn;
  }

  /// Whether the worker with the actor id `taker` took it.
  bool taken_by(uint64_t taker) const noexcept {
    return state_->load(std::memory_order_acquire) == taker;
  }

  /// Whether neither happened yet.
  bool is_open() const noexcept {
    return state_->load(std::memory_order_acquire) == open;
  }

private:
  static constexpr uint64_t open = 0;
  static constexpr uint64_t withdrawn = ~uint64_t{0};

  bool settle(uint64_t to) noexcept {
    auto expected = open;
    return state_->compare_exchange_strong(expected, to,
                                           std::memory_order_acq_rel);
  }

  std::shared_ptr<std::atomic<uint64_t>> state_;
};

} // namespace pool

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(pool::claim_ticket)
