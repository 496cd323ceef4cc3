#pragma once

// The public protocol between callers, the shepherd, the queue and workers.
// Atoms and message types are declared in the project's type-ID block
// (pool/type_ids.hpp); docs/protocol.md documents every message with its
// sender, receiver, fields and sequence diagrams. Any actor that speaks the
// worker side may join a shepherd with `(join_pool, actor)`.

#include <string>

#include "pool/errors.hpp"
#include "pool/stats.hpp"
#include "pool/type_ids.hpp"
#include "pool/work_record.hpp"
#include "pool/worker_phase.hpp"
