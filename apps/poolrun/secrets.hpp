// poolrun's secrets: the HTTP operator token and the database password,
// neither of which may be on the command line (every user of the host
// can read /proc/PID/cmdline).
#pragma once

#include <string>

#include <caf/expected.hpp>

namespace poolrun {

/// Whether a PostgreSQL URI (`--queue`) carries a password: in its user
/// part (`user:password@host`) or as a `password` parameter. libpq reads
/// PGPASSWORD, ~/.pgpass and PGSERVICE itself.
bool queue_has_password(const std::string& uri);

/// With `wanted` (`--http`), the HTTP operator token from `token_file`
/// (`--http-token-file`), POOL_HTTP_TOKEN_FILE or POOL_HTTP_TOKEN (empty:
/// none), or what is wrong; without, an empty string. Removes both
/// variables from the environment either way, so that the commands
/// poolrun runs do not inherit them. Call it before any thread starts.
caf::expected<std::string> take_http_token(const std::string& token_file,
                                           bool wanted);

} // namespace poolrun
