#pragma once

#include <cstddef>
#include <string>

#include <caf/error.hpp>

namespace pool {

/// How a pool's workers are scheduled.
enum class worker_kind {
  /// Workers run on CAF's scheduler threads. Jobs must not block.
  cooperative,
  /// Each worker runs on a thread of its own (`caf::detached`). For jobs
  /// that block (a database call) or burn CPU for long stretches.
  dedicated,
};

/// Returns `"cooperative"` or `"dedicated"`.
std::string to_string(worker_kind x);

/// Returns `cores - 1`, at least 1: the default number of dedicated workers,
/// leaving one core for the shepherd and the rest of the application.
size_t default_dedicated_workers();

/// Everything a pool is configured with, as one value with chained setters.
/// Setters never fail; `validate()` names the first bad field. Plain value:
/// copy it freely, from any thread.
class pool_options {
public:
  /// Number of workers (resource instances). Default: 4 for cooperative
  /// pools; `default_dedicated_workers()` when `kind(dedicated)` is chosen
  /// and no count was set.
  pool_options& workers(size_t n) {
    workers_ = n;
    workers_set_ = true;
    return *this;
  }

  size_t workers() const noexcept;

  /// Cooperative (default) or dedicated workers.
  pool_options& kind(worker_kind x) {
    kind_ = x;
    return *this;
  }

  worker_kind kind() const noexcept {
    return kind_;
  }

  /// A name used in log lines and stats; default `"pool"`.
  pool_options& name(std::string x) {
    name_ = std::move(x);
    return *this;
  }

  const std::string& name() const noexcept {
    return name_;
  }

  /// Returns an error of code `pool_errc::invalid_option` whose context names
  /// the bad field and says what is allowed; `caf::none` when all is well.
  caf::error validate() const;

private:
  size_t workers_ = 4;
  bool workers_set_ = false;
  worker_kind kind_ = worker_kind::cooperative;
  std::string name_ = "pool";
};

} // namespace pool
