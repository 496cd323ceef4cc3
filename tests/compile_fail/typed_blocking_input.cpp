// Must not compile: blocking_submit of a string to a typed pool whose job
// takes an int32_t. tests/CMakeLists.txt expects exactly one error, the
// static_assert's sentence. (A direct `self->request` on the handle fails
// too, with CAF's own two errors.)
#include <caf/all.hpp>
#include <pool/all.hpp>

void submit_wrong(caf::actor_system& sys,
                  const pool::typed_pool<int32_t(int32_t)>& pool) {
  pool::blocking_submit(sys, pool, std::chrono::seconds(1), std::string{"x"});
}
