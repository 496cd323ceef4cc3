#pragma once

// The HTTP endpoint's jobs view: `GET /api/pools/<name>/jobs` reads its
// query into a `job_filter` and writes the `job_page` as JSON.

#include <string>

#include <httplib.h>

#include "pool/jobs.hpp"

namespace pool::http_detail {

/// Reads `state`, `key`, `priority`, `id`, `after` and `limit` from the
/// query; false with `why` set when one is malformed.
bool read_job_filter(const httplib::Request& req, job_filter& filter,
                     std::string& why);

/// The page as JSON: `{"jobs": [...], "next_after": N, "scanned": N,
/// "total": N}`, durations in seconds.
std::string jobs_json(const job_page& page);

} // namespace pool::http_detail
