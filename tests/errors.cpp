// Error texts: type names as C++ spells them, and the errors a newcomer
// meets first rendered as sentences that say what to do.
#include <doctest/doctest.h>

#include <string>

#include <caf/all.hpp>

#include "pool/errors.hpp"
#include "pool/work_record.hpp"

namespace {

struct point {
  int x = 0;
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("type names read as C++: integers by size, strings, user types" *
          doctest::timeout(10)) {
  CHECK(pool::type_name_of(caf::make_rtti_pair<int>()) == "int32_t");
  CHECK(pool::type_name_of(caf::make_rtti_pair<int64_t>()) == "int64_t");
  CHECK(pool::type_name_of(caf::make_rtti_pair<uint8_t>()) == "uint8_t");
  CHECK(pool::type_name_of(caf::make_rtti_pair<std::string>()) ==
        "std::string");
  CHECK(pool::type_name_of(caf::make_rtti_pair<double>()) == "double");
  CHECK(pool::type_name_of(caf::make_rtti_pair<caf::timespan>()) ==
        "caf::timespan");
  CHECK(contains(pool::type_name_of(caf::make_rtti_pair<point>()), "point"));
  CHECK(pool::type_names_of(caf::make_message(1, std::string{"a"})) ==
        "int32_t, std::string");
  CHECK(pool::type_names_of(caf::message{}).empty());
}

TEST_CASE("a wrong input names the expected and the received types" *
          doctest::timeout(10)) {
  auto err =
      pool::wrong_input_type_error("int32_t", caf::make_message(int64_t{7}));
  CHECK(pool::is(err, pool::pool_errc::wrong_input_type));
  CHECK(pool::describe(err) ==
        "pool.wrong_input_type: expected int32_t, got int64_t (7): submit "
        "exactly the types the job takes (CAF converts none, not even "
        "int64_t to int32_t)");
  // Nothing at all, and the shape older senders use (no received types).
  CHECK(contains(
      pool::describe(pool::wrong_input_type_error("int32_t", caf::message{})),
      "expected int32_t, got no value:"));
  auto old = caf::make_error(pool::pool_errc::wrong_input_type,
                             std::string{"int32_t"}, std::string{"(7)"});
  CHECK(contains(pool::describe(old), "expected int32_t, got (7): submit"));
}

TEST_CASE("a reply of another type than asked for names both and the call" *
          doctest::timeout(10)) {
  auto err = pool::wrong_result_type_error(
      "blocking_submit<std::string>", "std::string", caf::make_message(49));
  CHECK(pool::is(err, pool::pool_errc::wrong_result_type));
  CHECK(pool::describe(err) ==
        "pool.wrong_result_type: blocking_submit<std::string> expects "
        "std::string, but the pool replied int32_t (49): use the job's "
        "result type as the template argument (void for a job that returns "
        "nothing)");
  auto from_void = pool::wrong_result_type_error(
      "blocking_submit<int32_t>", "int32_t", caf::make_message(caf::unit));
  CHECK(contains(pool::describe(from_void),
                 "replied no value (the job returns void)"));
}

TEST_CASE("other errors keep their context as it is" * doctest::timeout(10)) {
  auto err =
      caf::make_error(pool::pool_errc::invalid_option, std::string{"workers"},
                      std::string{"must be at least 1"});
  CHECK(pool::describe(err) ==
        "pool.invalid_option: workers: must be at least 1");
}

// -- empty values: a caller may test any error it got, without checking
// for "no error" first (CAF 0.17's category() on an empty error reads
// through a null pointer).

TEST_CASE("is: an empty error is pool_errc::none and no other code" *
          doctest::timeout(10)) {
  caf::error empty;
  CHECK(pool::is(empty, pool::pool_errc::none));
  CHECK_FALSE(pool::is(empty, pool::pool_errc::closed));
  CHECK_FALSE(pool::is(empty, pool::pool_errc::operation_failed));
  CHECK_FALSE(pool::is(caf::make_error(pool::pool_errc::closed),
                       pool::pool_errc::none));
}

TEST_CASE("describe: an empty error reads none" * doctest::timeout(10)) {
  CHECK(pool::describe(caf::error{}) == "none");
  CHECK(pool::describe(caf::make_error(pool::pool_errc::none)) == "none");
}

TEST_CASE("attempt_history: an empty error has no history" *
          doctest::timeout(10)) {
  CHECK(pool::attempt_history(caf::error{}).empty());
}

TEST_CASE("render_pool_error: code 0 without context reads pool.none" *
          doctest::timeout(10)) {
  CHECK(pool::render_pool_error(0, pool::pool_error_category, caf::message{}) ==
        "pool.none");
  CHECK(pool::to_string(static_cast<pool::pool_errc>(200)) == "pool_errc(200)");
}

TEST_CASE("wrong_result_type_error: an empty reply names no value" *
          doctest::timeout(10)) {
  auto err = pool::wrong_result_type_error("blocking_submit<int32_t>",
                                           "int32_t", caf::message{});
  CHECK(contains(pool::describe(err), "the pool replied no value"));
}

TEST_CASE("describe uses the renderer registered for a category, and only "
          "the pool's own for the pool category" *
          doctest::timeout(10)) {
  auto mine = caf::atom("mine");
  auto err = caf::error{3, mine, caf::make_message(std::string{"disk"})};
  // Unregistered: CAF's dump.
  CHECK(pool::describe(err).find("error(3") != std::string::npos);
  pool::describe_category(mine, [](uint8_t code, caf::atom_value,
                                   const caf::message& ctx) {
    return "mine #" + std::to_string(code) + ": "
           + ctx.get_as<std::string>(0);
  });
  CHECK_EQ(pool::describe(err), "mine #3: disk");
  // Nested in a failed operation's history, the same text.
  auto failed = caf::make_error(
      pool::pool_errc::operation_failed, uint64_t{7},
      std::vector<pool::attempt_failure>{
          pool::attempt_failure{1, caf::timespan{0}, err}});
  CHECK(pool::describe(failed).find("mine #3: disk") != std::string::npos);
  // The pool's category stays the pool's.
  pool::describe_category(pool::pool_error_category,
                          [](uint8_t, caf::atom_value, const caf::message&) {
                            return std::string{"hijacked"};
                          });
  CHECK(pool::describe(caf::make_error(pool::pool_errc::pool_terminated))
          .find("hijacked")
        == std::string::npos);
  pool::describe_category(mine, {});
  CHECK(pool::describe(err).find("error(3") != std::string::npos);
}
