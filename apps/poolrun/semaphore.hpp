// --semaphore: one command run when one of a named counting semaphore's
// slots is free (GNU parallel's sem), and --semaphore --wait.
#pragma once

#include <cstddef>
#include <string>

#include "options.hpp"

namespace poolrun {

/// Runs `opts.command` (its words joined) once one of the `slots` slots of
/// the semaphore `opts.semaphore_id` is free: in the background (returns
/// 0 at once), or with `opts.semaphore_fg` in the foreground (returns
/// the command's exit status). With `opts.semaphore_wait` instead: waits
/// until every command of the semaphore started before has ended. The
/// slots are lock files in ~/.parallel/semaphores. Call before any
/// thread starts (it forks). On a folder it cannot use: 255, `error` set.
int run_semaphore(const run_options& opts, size_t slots, std::string& error);

} // namespace poolrun
