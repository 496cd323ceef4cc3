#pragma once

// The gatekeeper's decisions about node sessions, as plain C++ (no actor
// system): admission against the limits, fault counting and quarantine,
// session secrets, and rate-limited log lines. Time comes in as an
// argument, so every decision is tested with an injected clock.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <caf/timespan.hpp>

namespace pool::detail {

using remote_clock = std::chrono::steady_clock;

/// 128 random bits from the kernel's CSPRNG (getrandom), as 32 hex digits.
/// Throws `std::system_error` if the kernel cannot provide them.
std::string make_session_secret();

/// Compares in time that depends on the lengths only, never on how many
/// leading characters of a guess were right.
bool same_secret(const std::string& given, const std::string& expected);

/// Limits on log lines: at most `burst` lines per `window`; the first line
/// after a suppressed spell says how many were left out. Plain value.
class log_limiter {
public:
  explicit log_limiter(size_t burst = 10,
                       caf::timespan window = std::chrono::seconds(10))
      : burst_(burst), window_(window) {
    // nop
  }

  /// The line to log now (with a note on suppressed ones), or nothing.
  std::optional<std::string> admit(remote_clock::time_point now,
                                   std::string text);

  /// Lines left out since the last one admitted.
  uint64_t suppressed() const noexcept {
    return suppressed_;
  }

private:
  size_t burst_;
  caf::timespan window_;
  remote_clock::time_point window_start_{};
  size_t used_ = 0;
  uint64_t suppressed_ = 0;
};

/// The limits a gatekeeper enforces on sessions.
struct session_limits {
  uint32_t max_nodes = 32;
  uint32_t max_workers_per_node = 64;
  uint32_t quarantine_after = 3;
  caf::timespan quarantine_for = std::chrono::seconds(30);
};

/// How a remote attempt ended, as the stand-in tells the gatekeeper.
enum class attempt_note : uint8_t {
  /// A well-formed answer in time (a result, or the job's own error).
  answered = 0,
  /// No answer within the attempt timeout.
  timed_out = 1,
  /// A result that is not the job's result type.
  wrong_type = 2,
  /// A result for an attempt the stand-in did not hold.
  stale = 3,
};

/// Node sessions by id: admission, and the fault count behind quarantine.
/// Not thread-safe: owned by one gatekeeper.
class session_book {
public:
  explicit session_book(session_limits limits) : limits_(limits) {
    // nop
  }

  /// Admits a node that asks for `wanted` workers: returns the new
  /// session's id and the granted count (at most `max_workers_per_node`),
  /// or `pool_rmt.limit` when `max_nodes` sessions are open or `wanted`
  /// is 0.
  caf::expected<std::pair<uint64_t, uint32_t>> open(uint32_t wanted);

  /// Ends a session (unknown ids are ignored).
  void close(uint64_t id);

  bool contains(uint64_t id) const {
    return sessions_.count(id) > 0;
  }

  size_t size() const noexcept {
    return sessions_.size();
  }

  /// Records how an attempt of session `id` ended at `now`. Returns true
  /// when this fault starts a quarantine (until `now + quarantine_for`).
  /// Faults: `timed_out`, `wrong_type`; `answered` resets the count;
  /// `stale` changes nothing.
  bool note(uint64_t id, attempt_note what, remote_clock::time_point now);

  /// Quarantines session `id` until `now + quarantine_for` for another
  /// reason (node health); false if unknown or quarantined already.
  bool quarantine(uint64_t id, remote_clock::time_point now);

  /// Whether session `id` is quarantined at `now`.
  bool quarantined(uint64_t id, remote_clock::time_point now) const;

  /// Ends the quarantine of `id` if it is over at `now`; returns whether
  /// it was (the session may get work again).
  bool release(uint64_t id, remote_clock::time_point now);

  const session_limits& limits() const noexcept {
    return limits_;
  }

private:
  struct entry {
    uint32_t faults = 0;
    std::optional<remote_clock::time_point> quarantined_until;
  };

  session_limits limits_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, entry> sessions_;
};

} // namespace pool::detail
