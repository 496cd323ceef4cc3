#pragma once

// The jobs view: a pool's accepted operations by state, a page at a time
// (`(list_jobs, job_filter)` -> `job_page`, docs/protocol.md; the HTTP
// endpoint's `GET /api/pools/<name>/jobs`). Read from the shepherd's own
// operation table and dead set, or, on a queue that other shepherds share
// (PostgreSQL), from the store: every process's operations
// (`work_store::list_jobs`). Bounded work per request whatever the pool
// holds. The failed ones (the dead set) can be retried or discarded
// (`(retry_jobs, job_filter)`, `(disc_jobs, job_filter)` -> `jobs_acted`).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/fwd.hpp>
#include <caf/rtti_pair.hpp>
#include <caf/timespan.hpp>

namespace pool {

/// Where an accepted operation stands, as an operator sees it.
enum class job_state : uint8_t {
  /// A worker holds its current attempt.
  running,
  /// Due, waiting for a worker.
  waiting,
  /// Not due yet (a delayed submit).
  delayed,
  /// Waiting for its next attempt after a failed one.
  retrying,
  /// Failed for good, kept in the dead set for a retry or a discard
  /// (`pool_options::dead_set`).
  failed,
  /// Cancelled by id (`cancel`), kept beside the failed ones (the same
  /// bounds) so that its status still says so.
  cancelled,
  /// Failed by a drain's deadline (`drain` with a deadline) before it
  /// ended, kept beside the failed ones.
  stopped,
};

/// `running`, `waiting`, `delayed`, `retrying`, `failed`, `cancelled`,
/// `stopped`.
std::string to_string(job_state x);

/// The state named `name` (as `to_string` writes it); none for another.
std::optional<job_state> job_state_from(const std::string& name);

/// Which operations a page lists. Operations come in id order.
struct job_filter {
  /// Only operations in this state; none: every state.
  std::optional<job_state> state;
  /// Only operations whose unique key or concurrency key is this; empty:
  /// any.
  std::string key;
  /// Only operations of this priority; none: any.
  std::optional<int32_t> priority;
  /// Only this operation (a search by id); 0: any.
  uint64_t id = 0;
  /// Only operations after this id: the previous page's `next_after`.
  uint64_t after = 0;
  /// At most this many operations (1 to 1,000).
  uint32_t limit = 50;
  /// With their inputs as text (the HTTP endpoint shows them only to the
  /// holder of the operator token).
  bool payloads = true;
};

/// One failed attempt of a job, as an operator reads it.
struct job_attempt {
  uint32_t attempt = 1;
  /// When it failed, counted from the submit.
  caf::timespan after_submit{0};
  /// Why (`describe`).
  std::string error;
};

/// One operation of a page.
struct job_info {
  uint64_t id = 0;
  job_state state = job_state::waiting;
  /// The attempt it is on (1 for the first).
  uint32_t attempt = 1;
  int32_t priority = 0;
  /// Its unique key and concurrency key; empty for none.
  std::string key;
  std::string concurrency_key;
  /// Since it was submitted.
  caf::timespan age{0};
  /// Running: since its attempt was handed out. Waiting or retrying (due):
  /// since it became due. Delayed (or a retry not due yet): until it is
  /// due, negative. Failed: since it failed for good.
  caf::timespan since{0};
  /// Running: the worker holding it (`worker 3`); empty otherwise.
  std::string holder;
  /// Its input as text, at most 200 characters; empty without `payloads`.
  std::string payload;
  /// Why its last attempt failed (`describe`); empty if none did.
  std::string last_error;
  /// Retrying and failed: every failed attempt, oldest first.
  std::vector<job_attempt> history;
};

/// One page of the jobs view.
struct job_page {
  std::vector<job_info> jobs;
  /// Ask again with `after` = this for the next page; 0 at the end.
  uint64_t next_after = 0;
  /// Operations looked at for this page (at most `job_scan_budget`).
  uint64_t scanned = 0;
  /// Operations the pool holds now, every state.
  uint64_t total = 0;
};

/// Operations one page looks at, at most: a page of a pool holding
/// millions, filtered to a rare state, ends early with `next_after` set
/// (and fewer than `limit` jobs) instead of scanning them all.
constexpr uint64_t job_scan_budget = 100'000;

/// `(list_jobs, job_filter)`: replies a `job_page`, or `invalid_option`
/// for a bad filter. Local (and HTTP) only: the filter and the page are
/// not serialized.
using list_jobs_atom = caf::atom_constant<caf::atom("list_jobs")>;
constexpr list_jobs_atom list_jobs_v{};

/// What `(retry_jobs, job_filter)` or `(disc_jobs, job_filter)` did.
struct jobs_acted {
  /// The failed jobs acted on, in id order: they left the dead set.
  std::vector<uint64_t> ids;
  /// A retry: the new operation of each, in the same order; 0 where it
  /// was accepted but has no id yet (parked until there is room, or its
  /// unique key being looked up in the store).
  std::vector<uint64_t> new_ids;
  /// Matched but left in the dead set: a retry the queue had no room for.
  uint64_t kept = 0;
  /// What happened, for an operator: who waits for the outcome, why some
  /// were kept.
  std::string note;
};

/// `(retry_jobs, job_filter)`: every job of the dead set matching the
/// filter is submitted again as a new operation with the same input, key
/// and settings, through the pool's admission (capacity, unique keys), and
/// leaves the dead set. The filter selects what a listing with it would
/// show on all its pages together: `state` (none: every state the dead
/// set holds, failed, cancelled and stopped; another state is refused),
/// `key`, `priority`, `id`, and `after` (only jobs with a higher id).
/// `limit` is no cap: it sizes a listing's page, and an action covers
/// every page, as if it followed `next_after` to the end. Replies
/// `jobs_acted`, or `invalid_option` for a bad filter, `closed` while
/// draining.
using retry_jobs_atom = caf::atom_constant<caf::atom("retry_jobs")>;
constexpr retry_jobs_atom retry_jobs_v{};

/// `(disc_jobs, job_filter)`: every job of the dead set matching the filter
/// (as for `retry_jobs`) leaves it (and a durable store) for good; a status
/// query (`op_status`) then says `discarded` while the dead set's bounds
/// keep a note of it. Replies `jobs_acted`.
using discard_jobs_atom = caf::atom_constant<caf::atom("disc_jobs")>;
constexpr discard_jobs_atom discard_jobs_v{};

struct attempt_failure;

/// An attempt history as a page shows it.
std::vector<job_attempt> job_history(const std::vector<attempt_failure>& xs);

/// An input as a page shows it: `describe_message`, cut at 200 characters.
std::string job_payload_text(const caf::message& payload);

namespace detail {

void register_describer(caf::rtti_pair type,
                        std::function<std::string(const void*)> f);

} // namespace detail

/// How a pool shows values of type `T` (an input or a result) to its
/// operators: the jobs view and the dead set (`job_info::payload`), the
/// completed events (`to_string(pool_event)`) and whatever renders through
/// `describe_message`. The default is CAF's `inspect`-based text, which
/// reads poorly for some types (`(poolrun::job_result("./job.sh 86", ...))`)
/// and is `<unprintable>` for a type without `inspect` (an unsafe message
/// type). Process-wide; a second call for `T` replaces the first; `f` must
/// not throw (a throw shows as `<describe failed: what>`). Thread-safe.
template <class T>
void describe_values(std::function<std::string(const T&)> f) {
  detail::register_describer(
      caf::make_rtti_pair<T>(), [f = std::move(f)](const void* x) {
        return f(*static_cast<const T*>(x));
      });
}

/// `x` as a pool shows values: `(a, b, ...)`, each element through the
/// `describe_values` function of its type, else CAF's text.
std::string describe_message(const caf::message& x);

/// What is wrong with `x`; empty when nothing.
std::string check(const job_filter& x);

/// Whether operations that ended in state `x` are kept in the dead set
/// (`failed`, `cancelled`, `stopped`).
bool kept_when_ended(job_state x) noexcept;

/// What is wrong with `x` as the filter of a retry or a discard (which act
/// on the dead set's jobs only); empty when nothing.
std::string check_dead(const job_filter& x);

} // namespace pool

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(pool::job_filter)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(pool::job_page)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(pool::jobs_acted)
