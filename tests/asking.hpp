#pragma once

// A deterministic world whose tests ask a pool something and wait for the
// answer of one type (a failure of the request fails the test).

#include <utility>

#include <caf/message.hpp>

#include "deterministic.hpp"
#include "pool/errors.hpp"

namespace pool::test {

struct asking : deterministic {
  template <class T>
  T ask_for(const caf::actor& p, caf::message msg) {
    T result;
    auto query = self->request(p, caf::infinite, std::move(msg));
    run();
    query.receive([&](T& x) { result = std::move(x); },
                  [](caf::error& err) { FAIL(pool::describe(err)); });
    return result;
  }
};

} // namespace pool::test
