#pragma once

// The HTTP endpoint's jobs view: `GET /api/pools/<name>/jobs` reads its
// query into a `job_filter` and writes the `job_page` as JSON; `POST
// /api/pools/<name>/jobs[/<id>]/(retry|discard)` acts on failed jobs (the
// dead set). The routes and the token check are in http_server.cpp.

#include <string>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/timespan.hpp>
#include <httplib.h>

#include "pool/jobs.hpp"

namespace pool::http_detail {

/// Answers with `{"error": what}` and `status`.
void reply_error(httplib::Response& res, int status, const std::string& what);

/// Marks an answer as not to be cached or sniffed.
void no_store(httplib::Response& res);

/// `GET .../jobs`: asks `pool` for the page the query names (inputs only
/// with `payloads`: the operator token was given) and answers it. Blocks
/// the request's thread for at most `timeout`.
void serve_jobs(caf::actor_system& sys, const caf::actor& pool,
                caf::timespan timeout, bool payloads,
                const httplib::Request& req, httplib::Response& res);

/// `POST .../jobs/<id>/<verb>` (one job) or `POST .../jobs/<verb>` with a
/// filter in the query (every failed job matching it), `verb` being
/// `retry` or `discard`, `req.matches[2]` the id (empty for none) and
/// `req.matches[3]` the verb: asks `pool` and answers `jobs_acted` as JSON.
/// The caller checked the token. Returns what to log. Blocks the request's
/// thread for at most `timeout`.
std::string act_on_jobs(caf::actor_system& sys, const caf::actor& pool,
                        caf::timespan timeout, const httplib::Request& req,
                        httplib::Response& res);

/// Reads `state`, `key`, `priority`, `id`, `after` and `limit` from the
/// query; false with `why` set when one is malformed.
bool read_job_filter(const httplib::Request& req, job_filter& filter,
                     std::string& why);

/// The page as JSON: `{"jobs": [...], "next_after": N, "scanned": N,
/// "total": N}`, durations in seconds.
std::string jobs_json(const job_page& page);

/// What a retry or discard did as JSON: `{"ids": [...], "new_ids": [...],
/// "kept": N, "note": "..."}`.
std::string acted_json(const jobs_acted& x);

} // namespace pool::http_detail
