#pragma once

#include <cstddef>
#include <vector>

#include "pool/work_record.hpp"

namespace pool {

/// Vectors that carry batches between actors, kept with their room for the
/// next batch. A batch is made on one thread and ends on another (a
/// worker's outcomes are read on the shepherd's thread, a batch of entries
/// runs on the worker's), and glibc's malloc, given a block over 1 KiB,
/// first merges all the small blocks other threads freed: about 300
/// instructions per trivial job, measured, before these were reused.
/// One process-wide stack per element type, of at most 64 vectors of at
/// most 64 KiB each, under a mutex (one lock per batch). Callable from any
/// thread.
namespace batch_buffers {

/// An empty vector with room for at least `room` elements.
std::vector<work_record> records(size_t room);

/// Keeps `x`'s room for a later `records` (its elements are destroyed).
void give(std::vector<work_record>&& x);

/// An empty vector with room for at least `room` elements.
std::vector<attempt_outcome> outcomes(size_t room);

/// Keeps `x`'s room for a later `outcomes` (its elements are destroyed).
void give(std::vector<attempt_outcome>&& x);

} // namespace batch_buffers

} // namespace pool
