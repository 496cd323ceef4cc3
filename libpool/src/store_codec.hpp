#pragma once

// Private to the durable stores: how values and times are written to and
// read from a database.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <caf/actor_clock.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/error.hpp>
#include <caf/fwd.hpp>
#include <caf/sec.hpp>

namespace pool::detail {

/// A value bound to a statement parameter of a database: NULL, integer,
/// text or bytes.
using db_value =
    std::variant<std::nullptr_t, int64_t, std::string, std::vector<char>>;

/// Reinterprets an operation id (below 2^63) as a database integer.
inline int64_t as_int64(uint64_t x) noexcept {
  return static_cast<int64_t>(x);
}

/// Serializes `x` with CAF's binary format into `buf`.
template <class T>
caf::error save(caf::actor_system& sys, const T& x, std::vector<char>& buf) {
  buf.clear();
  caf::binary_serializer sink{sys, buf};
  // Inspection takes a mutable reference; a serializer only reads.
  return sink(const_cast<T&>(x));
}

/// Deserializes `x` from `size` bytes at `data`; rejects an empty value and
/// trailing bytes.
template <class T>
caf::error load(caf::actor_system& sys, const void* data, size_t size, T& x) {
  if (data == nullptr || size == 0)
    return caf::make_error(caf::sec::end_of_stream, "empty value");
  caf::binary_deserializer source{sys, static_cast<const char*>(data), size};
  if (auto err = source(x))
    return err;
  if (source.remaining() != 0)
    return caf::make_error(caf::sec::runtime_error,
                           std::to_string(source.remaining()) +
                               " bytes after the value");
  return caf::none;
}

/// The detail text of a store error (its context is (location, detail)),
/// or the whole error rendered.
std::string detail_of(const caf::error& err);

/// Wall clock minus the actor system's clock, in nanoseconds, now. Durable
/// stores keep due times as wall-clock nanoseconds since the Unix epoch, so
/// that a delayed entry keeps its due time across a restart; under CAF's
/// testing scheduler the actor clock is a simulated one.
int64_t wall_offset(caf::actor_system& sys);

/// `x` (actor clock) as wall-clock nanoseconds, given `wall_offset`.
inline int64_t to_wall(caf::actor_clock::time_point x, int64_t offset) {
  using std::chrono::duration_cast;
  using std::chrono::nanoseconds;
  return duration_cast<nanoseconds>(x.time_since_epoch()).count() + offset;
}

/// Wall-clock nanoseconds `x` on the actor clock, given `wall_offset`.
inline caf::actor_clock::time_point from_wall(int64_t x, int64_t offset) {
  using time_point = caf::actor_clock::time_point;
  using std::chrono::duration_cast;
  return time_point{duration_cast<time_point::duration>(
      std::chrono::nanoseconds{x - offset})};
}

} // namespace pool::detail
