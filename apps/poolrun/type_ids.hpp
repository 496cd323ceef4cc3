// poolrun's type-ID block: the job result a journal stores (and a remote
// node sends back), and its atoms.
#pragma once

#include <caf/type_id.hpp>

#include <pool/remote.hpp>
#include <pool/type_ids.hpp>

#include "job.hpp"

// CAF 0.17.6 assigns IDs per block: ours starts where the pool's remote
// block (which follows the pool's own) ends.
CAF_BEGIN_TYPE_ID_BLOCK(poolrun, caf::id_block::pool_remote::end)

CAF_ADD_TYPE_ID(poolrun, (poolrun::job_result))

/// Signal watcher -> runner: `(interrupt)`, stop starting commands.
CAF_ADD_ATOM(poolrun, poolrun, interrupt_atom, "interrupt")
/// Runner timer: redraw the progress line.
CAF_ADD_ATOM(poolrun, poolrun, bar_tick_atom, "bar_tick")
/// Runner timer (--serve): look up how many workers the pool has now.
CAF_ADD_ATOM(poolrun, poolrun, capacity_atom, "capacity")

CAF_END_TYPE_ID_BLOCK(poolrun)
