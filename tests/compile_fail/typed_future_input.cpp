// Must not compile: submit_future on a typed pool with inputs its job does
// not take. tests/CMakeLists.txt expects exactly one error, the
// static_assert's sentence.
#include <caf/all.hpp>
#include <pool/all.hpp>

void submit_wrong(caf::actor_system& sys,
                  const pool::typed_pool<int32_t(int32_t)>& pool) {
  pool::submit_future(sys, pool, std::string{"x"});
}
