#pragma once

#include "pool/log.hpp"

namespace pool {

/// A hook that writes through spdlog's logger named `"pool"` (stderr, in
/// colour, created on first use; an application may register its own
/// logger of that name with spdlog beforehand to send the lines
/// elsewhere). Thread-safe. In `pool::spdlog`: a program that links that
/// target gets this hook as `default_log_hook()`.
log_hook spdlog_log_hook();

} // namespace pool
