#pragma once

// The jobs view: a pool's accepted operations by state, a page at a time
// (`(list_jobs, job_filter)` -> `job_page`, docs/protocol.md; the HTTP
// endpoint's `GET /api/pools/<name>/jobs`). Read from the shepherd's own
// operation table: bounded work per request whatever the pool holds.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
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
};

/// `running`, `waiting`, `delayed`, `retrying`.
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
  /// due, negative.
  caf::timespan since{0};
  /// Running: the worker holding it (`worker 3`); empty otherwise.
  std::string holder;
  /// Its input as text, at most 200 characters; empty without `payloads`.
  std::string payload;
  /// Why its last attempt failed (`describe`); empty if none did.
  std::string last_error;
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

/// What is wrong with `x`; empty when nothing.
std::string check(const job_filter& x);

} // namespace pool

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(pool::job_filter)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(pool::job_page)
