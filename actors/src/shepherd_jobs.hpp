#pragma once

// Private to the shepherd actor: the operators' jobs view and dead-set
// actions (`list_jobs`, `retry_jobs`, `disc_jobs`). The core answers them
// from its own table and dead set; with a shared store (other shepherds on
// its queue) they go to the queue actor, which reads or takes from the
// store, and the core finishes them.

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/result.hpp>

#include "pool/jobs.hpp"

namespace pool {

class shepherd_core;

namespace detail {

/// `(list_jobs, filter)`.
caf::result<job_page> list_jobs(caf::event_based_actor* self,
                                shepherd_core& core, const caf::actor& queue,
                                const job_filter& filter);

/// `(retry_jobs, filter)` or, with `discard`, `(disc_jobs, filter)`.
caf::result<jobs_acted> act_on_jobs(caf::event_based_actor* self,
                                    shepherd_core& core,
                                    const caf::actor& queue,
                                    const job_filter& filter, bool discard);

} // namespace detail

} // namespace pool
