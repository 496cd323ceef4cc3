// poolrun's type-ID block: the job result a journal stores, and its atoms.
#pragma once

#include <caf/type_id.hpp>

#include <pool/type_ids.hpp>

#include "job.hpp"

// CAF 0.17.6 assigns IDs per block: ours starts where the pool's ends.
CAF_BEGIN_TYPE_ID_BLOCK(poolrun, caf::id_block::pool::end)

CAF_ADD_TYPE_ID(poolrun, (poolrun::job_result))

/// Signal watcher -> runner: `(interrupt)`, stop starting commands.
CAF_ADD_ATOM(poolrun, poolrun, interrupt_atom, "interrupt")
/// Runner timer: redraw the progress line.
CAF_ADD_ATOM(poolrun, poolrun, bar_tick_atom, "bar_tick")

CAF_END_TYPE_ID_BLOCK(poolrun)
