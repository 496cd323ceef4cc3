#pragma once

// Test helper: asserts that a result or an error is the pool's error
// `code` and that its description mentions `text`.

#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <doctest/doctest.h>

#include "pool/errors.hpp"

namespace pool::test {

inline void check_fails(const caf::error& err, pool::pool_errc code,
                        const std::string& text) {
  REQUIRE(err);
  auto what = pool::describe(err);
  MESSAGE(what);
  CHECK_MESSAGE(pool::is(err, code), what);
  CHECK_MESSAGE(what.find(text) != std::string::npos, what);
}

template <class T>
void check_fails(const caf::expected<T>& x, pool::pool_errc code,
                 const std::string& text) {
  REQUIRE(!x);
  check_fails(x.error(), code, text);
}

} // namespace pool::test
