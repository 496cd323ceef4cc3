#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/fwd.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>
#include <caf/rtti_pair.hpp>

namespace pool {

/// Every error the pool reports to a user. The numeric values are stable:
/// they cross the network and land in durable stores, so never renumber.
enum class pool_errc : uint8_t {
  /// Not an error.
  none = 0,
  /// An option failed validation. Context: (field name, reason).
  invalid_option = 1,
  /// A submit carried a payload that is not the pool's input type.
  /// Context: (expected types, received types, received values as text);
  /// older senders leave out the received types. Make it with
  /// `wrong_input_type_error`.
  wrong_input_type = 2,
  /// A delayed submit carried a negative delay. Context: (delay as text).
  invalid_delay = 3,
  /// The job threw or returned an error on its final attempt.
  /// Context: (attempt count, last error as text).
  job_failed = 4,
  /// A message that a pool actor does not understand. Context: (message).
  unexpected_message = 5,
  /// The shepherd terminated before the operation finished.
  /// Context: (exit reason as text).
  pool_terminated = 6,
  /// Final failure: every attempt allowed by `max_attempts` failed.
  /// Context: (operation id, std::vector<attempt_failure> history).
  operation_failed = 7,
  /// An attempt ran longer than `attempt_timeout`. Context: (timeout).
  timed_out = 8,
  /// The worker holding an attempt terminated. Context: (exit reason).
  worker_down = 9,
  /// Restarts exceeded the configured intensity; the shepherd gave up.
  /// Context: (text naming the limit).
  restart_intensity = 10,
  /// The job reported its worker's resource broken (by throwing
  /// `pool::resource_broken`); the worker stops and is replaced.
  /// Context: (what).
  resource_broken = 11,
  /// The pool is draining and accepts no new operations.
  closed = 12,
  /// The operation was cancelled. Context: (operation id).
  cancelled = 13,
  /// No operation with this id is pending. Context: (operation id).
  unknown_operation = 14,
  /// A drain's deadline passed before the operation finished.
  /// Context: (operation id).
  drain_deadline = 15,
  /// The queue is at its capacity. Context: (depth, capacity).
  overloaded = 16,
  /// A durable store could not read or write its file (disk full, I/O
  /// error, no permission); the change was not made durable.
  /// Context: (path, what failed and SQLite's reason).
  store_failed = 17,
  /// The file is not a store this build can open: not an SQLite database,
  /// another program's database, or another schema version.
  /// Context: (path, what was found).
  store_incompatible = 18,
  /// The store's file is damaged (failed integrity check or SQLite reports
  /// corruption); restore it from a backup or move it aside.
  /// Context: (path, SQLite's reason).
  store_corrupt = 19,
  /// The pool's reply is not of the type the caller asked for, e.g.
  /// `blocking_submit<std::string>` on a pool whose job returns `int`.
  /// Context: (asked for, replied types, replied values as text, the call).
  wrong_result_type = 20,
  /// Another pool owns the store: a durable store file has one owner.
  /// Context: (path, the owner: pid, host and since when).
  store_in_use = 21,
  /// A shared store (PostgreSQL) reclaimed the lease of this attempt after
  /// it expired: another shepherd may run the operation again, so the late
  /// outcome is stale and was not recorded. Context: (attempt as text,
  /// what happened to the lease).
  lease_lost = 22,
  /// A unique operation's key belongs to another unfinished operation of a
  /// shared queue (added by another store in the meantime): use that one.
  /// Context: (key, the other operation's id as uint64_t).
  key_taken = 23,
  /// The job discarded its operation (`pool::discard_job`, `pool::discard`):
  /// no retry. Context: (why). Ends the history of an `operation_failed`.
  discarded = 24,
  /// The job snoozed its operation (`pool::snooze_job`, `pool::snooze`): it
  /// runs again after the delay without using up an attempt. Context:
  /// (caf::timespan delay). Kept in the history; never a final outcome.
  snoozed = 25,
};

/// Thrown by a job to say that its worker's resource (a connection, a
/// licence seat) is broken: the attempt fails (the retry policy applies),
/// the worker stops and the shepherd starts a fresh one in its place.
class resource_broken : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Returns the stable name of `x`, e.g. `"invalid_option"`.
std::string to_string(pool_errc x);

/// The category atom under which `pool_errc` values travel in `caf::error`.
constexpr caf::atom_value pool_error_category = caf::atom("pool");

/// Renders an error of the pool category, including its context, for
/// humans: `pool.invalid_option: workers: must be at least 1`.
/// Safe to call from any thread.
std::string render_pool_error(uint8_t code, caf::atom_value category,
                              const caf::message& context);

/// Renders any `caf::error` for humans, using `render_pool_error` for the
/// pool category, the renderer registered for its category
/// (`describe_category`), and CAF's own text otherwise; `"none"` for an
/// empty error. What the page, `/api/stats`, pooltop, events and logs show.
/// Safe from any thread.
std::string describe(const caf::error& err);

/// Renders the errors of one category for humans; the signature of CAF's
/// `actor_system_config::add_error_category` renderer, so one function
/// serves both.
using error_renderer = std::function<std::string(
    uint8_t code, caf::atom_value category, const caf::message& context)>;

/// Makes `describe` render errors of `category` with `f` (a job's own error
/// enum, a program's outcome type: "exit 3 after 1.2 s: disk quota
/// exceeded" instead of CAF's dump of the context). An empty `f` removes
/// the renderer. The pool's own category cannot be replaced. Safe from any
/// thread; a renderer must not throw.
void describe_category(caf::atom_value category, error_renderer f);

/// Names a message element type as C++ spells it: `int32_t` (for `int`
/// too: CAF carries integers by size), `std::string`, `caf::timespan`, or
/// the demangled name of a user type. Safe from any thread.
std::string type_name_of(caf::rtti_pair x);

/// The element types of `x`, comma-separated (`int32_t, std::string`);
/// empty for an empty message. Safe from any thread.
std::string type_names_of(const caf::message& x);

/// The `wrong_input_type` error for `received`, which is not a pool's input
/// `expected` (type names, e.g. from `type_names_of`): names both.
caf::error wrong_input_type_error(std::string expected,
                                  const caf::message& received);

/// The `wrong_result_type` error for a reply `received` where the caller,
/// `call` (e.g. `blocking_submit<std::string>`), wanted `expected`.
caf::error wrong_result_type_error(std::string call, std::string expected,
                                   const caf::message& received);

struct attempt_failure;

/// The attempt history carried by an `operation_failed` error; empty for
/// any other error, and for an empty one.
std::vector<attempt_failure> attempt_history(const caf::error& err);

/// Returns whether `err` belongs to the pool category and carries `code`.
/// An empty error (`caf::error{}`, "no error") is `pool_errc::none` and
/// nothing else. Safe from any thread.
bool is(const caf::error& err, pool_errc code);

} // namespace pool

CAF_ERROR_CODE_ENUM(pool::pool_errc, "pool")
