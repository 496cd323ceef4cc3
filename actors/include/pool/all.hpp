#pragma once

// The one header for the common case: options, errors, protocol, the spawn
// façade and the submit helpers.

#include "pool/config_options.hpp"
#include "pool/configure.hpp"
#include "pool/cron.hpp"
#include "pool/dedicated_worker.hpp"
#include "pool/duration_text.hpp"
#include "pool/errors.hpp"
#include "pool/events.hpp"
#include "pool/job_control.hpp"
#include "pool/log.hpp"
#include "pool/memory_store.hpp"
#include "pool/options.hpp"
#include "pool/periodic.hpp"
#include "pool/pg_store.hpp"
#include "pool/protocol.hpp"
#include "pool/queue.hpp"
#include "pool/shepherd.hpp"
#include "pool/spawn.hpp"
#include "pool/sqlite_store.hpp"
#include "pool/stats.hpp"
#include "pool/store_factory.hpp"
#include "pool/typed.hpp"
#include "pool/version.hpp"
#include "pool/worker.hpp"
