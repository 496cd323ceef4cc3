// idle_waits: waiting for the submits so far, without an actor system.
#include <doctest/doctest.h>

#include "pool/detail/idle_waits.hpp"

using pool::idle_waits;

TEST_CASE("with nothing pending a wait is answered at once" *
          doctest::timeout(10)) {
  idle_waits w;
  CHECK_FALSE(w.wait({}));
  CHECK(w.take_done().size() == 1);
  CHECK(w.waiting() == 0);
}

TEST_CASE("a wait ends when what was pending before it left, whatever came "
          "later" *
          doctest::timeout(10)) {
  idle_waits w;
  auto a = w.arrive();
  auto b = w.arrive();
  CHECK(w.wait({}));
  auto c = w.arrive(); // later: not waited for
  CHECK_FALSE(w.leave(b));
  CHECK(w.take_done().empty());
  CHECK_FALSE(w.leave(a));
  CHECK(w.take_done().size() == 1);
  CHECK(w.pending() == 1);
  // The pool is idle once the later one left too.
  CHECK(w.leave(c));
}

TEST_CASE("waits made at different times end in their own order" *
          doctest::timeout(10)) {
  idle_waits w;
  auto a = w.arrive();
  CHECK(w.wait({}));
  auto b = w.arrive();
  CHECK(w.wait({}));
  CHECK(w.waiting() == 2);
  w.leave(b);
  CHECK(w.take_done().empty()); // the second one still waits for a
  w.leave(a);
  CHECK(w.take_done().size() == 2);
  CHECK(w.waiting() == 0);
}

TEST_CASE("an operation that never arrived here is not counted" *
          doctest::timeout(10)) {
  idle_waits w;
  auto a = w.arrive();
  CHECK(w.wait({}));
  CHECK_FALSE(w.leave(0));
  CHECK(w.take_done().empty());
  CHECK(w.leave(a));
  CHECK(w.take_done().size() == 1);
  CHECK(w.take_all().empty());
}
