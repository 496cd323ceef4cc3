// --enqueue: the jobs of the input go into the shared PostgreSQL queue as
// unique operations, and nothing runs here; every `poolrun --queue` of
// the same queue and input runs what it claims.
#pragma once

#include <caf/actor_system.hpp>

#include "run_setup.hpp"

namespace poolrun {

/// Adds every job of `setup`'s input to the queue of `setup.options.queue`
/// (a job whose unique key the queue has, unfinished or finished, is left
/// as it is), committing as it goes. Returns poolrun's exit status: 0, or
/// 255 for a queue that cannot be opened or written, or a job refused.
int enqueue_only(caf::actor_system& sys, run_setup& setup);

} // namespace poolrun
