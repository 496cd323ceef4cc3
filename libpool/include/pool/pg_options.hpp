#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include <caf/error.hpp>
#include <caf/timespan.hpp>

namespace pool {

/// How a `pg_store` works with its database, as one value with chained
/// setters. Setters never fail; `validate()` (called by `pg_store::open`)
/// names the first bad field. Plain value: copy it freely, from any thread.
class pg_options {
public:
  /// The queue's name: stores that name the same queue in the same
  /// database and schema share it. 1 to 200 bytes; default "default".
  pg_options& queue(std::string x) {
    queue_ = std::move(x);
    return *this;
  }

  const std::string& queue() const noexcept {
    return queue_;
  }

  /// The PostgreSQL schema that holds the pool's tables (created if
  /// missing; every queue of the database can share it). Lower-case
  /// letters, digits and `_`, not starting with a digit, at most 63 bytes;
  /// default "pool".
  pg_options& schema(std::string x) {
    schema_ = std::move(x);
    return *this;
  }

  const std::string& schema() const noexcept {
    return schema_;
  }

  /// How long a claimed attempt stays leased to this store without a
  /// renewal (`renew_leases`, due every `lease / 3`); an attempt whose
  /// lease expired is taken back by any store of the queue, counted as a
  /// failed attempt if it had started. (A store whose process is gone
  /// loses its leases at once, see docs/postgres.md.) At least 1 s;
  /// default 30 s.
  pg_options& lease(caf::timespan x) {
    lease_ = x;
    return *this;
  }

  caf::timespan lease() const noexcept {
    return lease_;
  }

  /// At most `n` attempts of the queue run at once, across every store
  /// and process (live leases); claims then serialize on a lock per queue.
  /// Default: no limit.
  pg_options& concurrency_limit(size_t n) {
    concurrency_limit_ = n;
    return *this;
  }

  const std::optional<size_t>& concurrency_limit() const noexcept {
    return concurrency_limit_;
  }

  /// Finished operations of the queue are deleted once they finished
  /// longer than `age` ago (`prune`). Must be greater than zero. Default:
  /// kept forever.
  pg_options& retention(caf::timespan age) {
    retention_ = age;
    return *this;
  }

  const std::optional<caf::timespan>& retention() const noexcept {
    return retention_;
  }

  /// Without notifications for this long, the store wakes its queue
  /// anyway (the slow safety poll: notifications lost in a reconnect, due
  /// times of delayed entries). At least 100 ms; default 5 s.
  pg_options& safety_poll(caf::timespan x) {
    safety_poll_ = x;
    return *this;
  }

  caf::timespan safety_poll() const noexcept {
    return safety_poll_;
  }

  /// How many due entries one claim takes at most (one round trip); the
  /// rest wait in this store, leased to it, for the next `pop_due`. Claims
  /// start at 8 and grow towards this while the pool hands out what it
  /// claimed within 10 ms, and shrink when entries wait 100 ms or more.
  /// 1 to 1000; default 128.
  pg_options& claim_batch(size_t n) {
    claim_batch_ = n;
    return *this;
  }

  size_t claim_batch() const noexcept {
    return claim_batch_;
  }

  /// How long connecting may take (libpq's `connect_timeout`, unless the
  /// conninfo sets one). 1 s to 1 h; default 5 s.
  pg_options& connect_timeout(caf::timespan x) {
    connect_timeout_ = x;
    return *this;
  }

  caf::timespan connect_timeout() const noexcept {
    return connect_timeout_;
  }

  /// How long the store waits for an unreachable database (stopped,
  /// restarting, a lost connection) before it gives up the submits that
  /// wait: meanwhile it keeps every change and commits it once the server
  /// is back, so callers see the outage as latency; then the waiting
  /// submits are refused with `store_failed` naming this limit. Outcomes
  /// wait for the database for as long as the process runs. At least
  /// 1 s; default 5 min.
  pg_options& outage_limit(caf::timespan x) {
    outage_limit_ = x;
    return *this;
  }

  caf::timespan outage_limit() const noexcept {
    return outage_limit_;
  }

  /// Returns `pool_errc::invalid_option` naming the first bad field, or
  /// `none`.
  caf::error validate() const;

private:
  std::string queue_ = "default";
  std::string schema_ = "pool";
  caf::timespan lease_ = std::chrono::seconds(30);
  std::optional<size_t> concurrency_limit_;
  std::optional<caf::timespan> retention_;
  caf::timespan safety_poll_ = std::chrono::seconds(5);
  size_t claim_batch_ = 128;
  caf::timespan connect_timeout_ = std::chrono::seconds(5);
  caf::timespan outage_limit_ = std::chrono::minutes(5);
};

} // namespace pool
