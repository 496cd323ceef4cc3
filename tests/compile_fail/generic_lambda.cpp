// Must not compile: a generic lambda has no one input type for the pool.
// tests/CMakeLists.txt expects exactly one error, the static_assert's
// sentence (cmake/CheckCompileFails.cmake).
#include <caf/all.hpp>
#include <pool/all.hpp>

caf::expected<caf::actor> spawn_generic(caf::actor_system& sys) {
  return pool::spawn_pool(sys, [](auto x) { return x * 2; });
}
