#pragma once

// Secrets for programs (an operator token, a password): read from a file
// that only its owner may read, or from the environment, never from the
// command line, which every local user can read in /proc/PID/cmdline.

#include <string>

#include <caf/expected.hpp>

namespace pool {

/// Where a program looks for one secret, in this order; an empty field is
/// not looked at. Plain value.
struct secret_source {
  /// A file named on the command line, e.g. `--token-file PATH`.
  std::string file;
  /// What the command line calls it, for errors: `--token-file`.
  std::string file_option;
  /// An environment variable naming a file, e.g. `POOL_TOKEN_FILE`.
  std::string file_variable;
  /// An environment variable holding the secret itself, e.g. `POOL_TOKEN`.
  std::string variable;
};

/// The largest secret file read, in bytes.
constexpr size_t max_secret_file_size = 4096;

/// Reads the secret in the file at `path`: its one line, without the line
/// break at its end. Refuses, with `pool.invalid_option` naming `what`
/// (the option or variable that named the file), the path and what to do:
/// a file that cannot be opened; one that is not a regular file; one its
/// group or others may read or write (as ssh refuses such a private key:
/// `chmod 600 PATH`); an empty one; one of several lines or larger than
/// `max_secret_file_size`. Blocks for one small file read; safe from any
/// thread.
caf::expected<std::string> read_secret_file(const std::string& path,
                                            const std::string& what);

/// The secret from the first place in `src` that is set: the file, the
/// file that `src.file_variable` names, the value of `src.variable`. An
/// empty string when none is set; the error of `read_secret_file` when a
/// file is refused, or `pool.invalid_option` when a variable is set but
/// empty. Reads the environment: call it before starting threads that
/// change it. Safe from any thread otherwise.
caf::expected<std::string> load_secret(const secret_source& src);

} // namespace pool
