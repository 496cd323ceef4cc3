// poolrun's type-ID block: the job and result a journal stores, the
// runner's own messages, and their atoms.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/type_id.hpp>

#include <pool/type_ids.hpp>

#include "feeder.hpp"
#include "job.hpp"

// CAF 0.17.6 assigns IDs per block: ours starts where the pool's ends.
CAF_BEGIN_TYPE_ID_BLOCK(poolrun, caf::id_block::pool::end)

CAF_ADD_TYPE_ID(poolrun, (poolrun::job_spec))
CAF_ADD_TYPE_ID(poolrun, (poolrun::job_result))
CAF_ADD_TYPE_ID(poolrun, (poolrun::pending_job))
CAF_ADD_TYPE_ID(poolrun, (std::vector<poolrun::pending_job>))

/// Feeder -> runner: `(feed, std::vector<pending_job>)`, more jobs.
CAF_ADD_ATOM(poolrun, poolrun, feed_atom, "feed")
/// Feeder -> runner: `(feed_end, uint64_t total, std::string error)`.
CAF_ADD_ATOM(poolrun, poolrun, feed_end_atom, "feed_end")
/// Signal watcher -> runner: `(interrupt)`, stop starting commands.
CAF_ADD_ATOM(poolrun, poolrun, interrupt_atom, "interrupt")
/// Runner timer: redraw the progress line.
CAF_ADD_ATOM(poolrun, poolrun, bar_tick_atom, "bar_tick")
/// Runner timer while stopping: look whether only parked jobs are left.
CAF_ADD_ATOM(poolrun, poolrun, settle_atom, "settle")
/// Runner timer with --queue: ask after jobs another poolrun runs.
CAF_ADD_ATOM(poolrun, poolrun, watch_atom, "watch")
/// Runner timer after --halt now: SIGKILL what SIGTERM left.
CAF_ADD_ATOM(poolrun, poolrun, halt_kill_atom, "halt_kill")
/// Runner timer with --queue: `(resubmit, uint64_t seq)`, submit job `seq`
/// again (the queue refused it while its database was out of reach).
CAF_ADD_ATOM(poolrun, poolrun, resubmit_atom, "resubmit")
/// Runner timer with --queue: ask again whether outcomes are recorded (the
/// answer came from a database out of reach).
CAF_ADD_ATOM(poolrun, poolrun, recheck_atom, "recheck")
/// Runner timer with --delay: the next job may go to the pool now.
CAF_ADD_ATOM(poolrun, poolrun, pace_atom, "pace")

CAF_END_TYPE_ID_BLOCK(poolrun)
