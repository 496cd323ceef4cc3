// Must not compile: an object with two call operators has no one input
// type for the pool (here as the job of a resource pool).
// tests/CMakeLists.txt expects exactly one error, the static_assert's
// sentence (cmake/CheckCompileFails.cmake).
#include <caf/all.hpp>
#include <pool/all.hpp>

struct twice {
  int operator()(int& resource, int x) const {
    return resource * x;
  }
  double operator()(int& resource, double x) const {
    return resource * x;
  }
};

caf::expected<caf::actor> spawn_overloaded(caf::actor_system& sys) {
  return pool::spawn_resource_pool(
      sys, [] { return 2; }, twice{});
}
