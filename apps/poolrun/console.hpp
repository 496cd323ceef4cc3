// poolrun's standard output and error, shared by the runner and workers
// (--line-buffer): writes are whole and never cut through the progress line.
#pragma once

#include <string>
#include <string_view>

#include "job.hpp"

namespace poolrun::console {

/// Writes `text` to standard output (1) or error (2). Thread-safe.
void write(int stream, std::string_view text);

/// Writes `lines` (whole lines) to `stream`, each prefixed with `tag`
/// (none when empty). Thread-safe.
void write_lines(int stream, const std::string& tag, std::string_view lines);

/// Writes a result's output (stdout part to 1, stderr part to 2), lines
/// prefixed with `tag`. Thread-safe.
void write_result(const job_result& res, const std::string& tag);

/// "poolrun: <text>" on standard error. Thread-safe.
void message(const std::string& text);

/// The warning for a command killed at its --timeout deadline (GNU
/// parallel's words when invoked as `parallel`). Thread-safe.
void timed_out(const std::string& command);

/// Names the program after `argv0`: invoked as `parallel` (a link of
/// that name: the drop-in), its messages start with "parallel: ". Call
/// before any thread starts.
void name_program(std::string_view argv0);

/// "poolrun: " or "parallel: ", the start of each of poolrun's messages.
const std::string& prefix();

/// Whether poolrun was invoked as `parallel` (the drop-in): messages
/// GNU parallel's test suite compares then use GNU parallel's words.
bool gnu_words();

/// Draws `text` as the progress line at the bottom of a terminal's
/// standard error (replacing the one before). Thread-safe.
void show_bar(const std::string& text);

/// Removes the progress line for good. Thread-safe.
void end_bar();

/// Whether a write to standard output failed (a closed pipe).
bool output_failed();

} // namespace poolrun::console
