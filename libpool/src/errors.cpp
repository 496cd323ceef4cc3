#include "pool/errors.hpp"

#include <cstring>

#include <caf/detail/pretty_type_name.hpp>
#include <caf/message.hpp>
#include <caf/sec.hpp>
#include <caf/type_nr.hpp>

#include "pool/duration_text.hpp"
#include "pool/work_record.hpp"

#include "locked_map.hpp"

namespace pool {

std::string to_string(pool_errc x) {
  switch (x) {
    case pool_errc::none:
      return "none";
    case pool_errc::invalid_option:
      return "invalid_option";
    case pool_errc::wrong_input_type:
      return "wrong_input_type";
    case pool_errc::invalid_delay:
      return "invalid_delay";
    case pool_errc::job_failed:
      return "job_failed";
    case pool_errc::unexpected_message:
      return "unexpected_message";
    case pool_errc::pool_terminated:
      return "pool_terminated";
    case pool_errc::operation_failed:
      return "operation_failed";
    case pool_errc::timed_out:
      return "timed_out";
    case pool_errc::worker_down:
      return "worker_down";
    case pool_errc::restart_intensity:
      return "restart_intensity";
    case pool_errc::resource_broken:
      return "resource_broken";
    case pool_errc::closed:
      return "closed";
    case pool_errc::cancelled:
      return "cancelled";
    case pool_errc::unknown_operation:
      return "unknown_operation";
    case pool_errc::drain_deadline:
      return "drain_deadline";
    case pool_errc::overloaded:
      return "overloaded";
    case pool_errc::store_failed:
      return "store_failed";
    case pool_errc::store_incompatible:
      return "store_incompatible";
    case pool_errc::store_corrupt:
      return "store_corrupt";
    case pool_errc::wrong_result_type:
      return "wrong_result_type";
    case pool_errc::store_in_use:
      return "store_in_use";
    case pool_errc::lease_lost:
      return "lease_lost";
    case pool_errc::key_taken:
      return "key_taken";
    case pool_errc::discarded:
      return "discarded";
    case pool_errc::snoozed:
      return "snoozed";
  }
  return "pool_errc(" + std::to_string(static_cast<int>(x)) + ")";
}

namespace {

// CAF's own names of its built-in types (`caf::numbered_type_names`) as
// C++ spells them; the ones left out are CAF types named as `caf::` + name.
const char* builtin_cpp_name(const char* caf_name) {
  static constexpr const char* names[][2] = {
      {"@i8", "int8_t"},
      {"@i16", "int16_t"},
      {"@i32", "int32_t"},
      {"@i64", "int64_t"},
      {"@u8", "uint8_t"},
      {"@u16", "uint16_t"},
      {"@u32", "uint32_t"},
      {"@u64", "uint64_t"},
      {"@ldouble", "long double"},
      {"@str", "std::string"},
      {"@u16_str", "std::u16string"},
      {"@u32_str", "std::u32string"},
      {"@strvec", "std::vector<std::string>"},
      {"@strset", "std::set<std::string>"},
      {"@strmap", "std::map<std::string, std::string>"},
      {"@charbuf", "std::vector<char>"},
      {"@atom", "caf::atom_value"},
      {"@addr", "caf::actor_addr"},
      {"@addrvec", "std::vector<caf::actor_addr>"},
      {"@actorvec", "std::vector<caf::actor>"},
      {"@unit", "caf::unit_t"},
      {"@down", "caf::down_msg"},
      {"@exit", "caf::exit_msg"},
      {"@node", "caf::node_id"},
  };
  for (auto& x : names)
    if (std::strcmp(x[0], caf_name) == 0)
      return x[1];
  return nullptr;
}

// Joins the elements of a context message with ": ": strings as they are,
// an attempt history one attempt per clause, a leading operation id as
// op#N, anything else with CAF's generic printer.
std::string render_context(const caf::message& context) {
  std::string result;
  for (size_t i = 0; i < context.size(); ++i) {
    if (!result.empty())
      result += ": ";
    if (context.match_element<std::string>(i)) {
      result += context.get_as<std::string>(i);
    } else if (context.match_element<std::vector<attempt_failure>>(i)) {
      auto& history = context.get_as<std::vector<attempt_failure>>(i);
      result += std::to_string(history.size()) + " failed attempts";
      for (auto& x : history) {
        result += "; ";
        result += to_string(x);
      }
    } else if (context.match_element<caf::timespan>(i)) {
      result += duration_text(context.get_as<caf::timespan>(i));
    } else if (context.match_element<uint64_t>(i) && i == 0) {
      result += "op#" + std::to_string(context.get_as<uint64_t>(i));
    } else {
      result += context.stringify(i);
    }
  }
  return result;
}

// The string elements of `context`, or none if it holds anything else.
std::vector<std::string> strings_of(const caf::message& context) {
  std::vector<std::string> result;
  for (size_t i = 0; i < context.size(); ++i) {
    if (!context.match_element<std::string>(i))
      return {};
    result.push_back(context.get_as<std::string>(i));
  }
  return result;
}

// "int64_t (7)", or "(7)" when the types are not known, or "no value".
std::string value_text(const std::string& types, const std::string& values) {
  if (types == "caf::unit_t")
    return "no value (the job returns void)";
  if (types.empty())
    return values == "()" || values == "<empty-message>" ? "no value" : values;
  return types + ' ' + values;
}

// The errors a newcomer meets first, as sentences that say what to do;
// empty when the context is not in the expected shape.
std::string explain(pool_errc code, const caf::message& context) {
  auto xs = strings_of(context);
  switch (code) {
    case pool_errc::wrong_input_type:
      if (xs.size() == 2 || xs.size() == 3) {
        auto got =
            xs.size() == 3 ? value_text(xs[1], xs[2]) : value_text("", xs[1]);
        return "expected " + xs[0] + ", got " + got +
               ": submit exactly the types the job takes (CAF converts "
               "none, not even int64_t to int32_t)";
      }
      return {};
    case pool_errc::wrong_result_type:
      if (xs.size() == 4)
        return xs[3] + " expects " + xs[0] + ", but the pool replied " +
               value_text(xs[1], xs[2]) +
               ": use the job's result type as the template argument "
               "(void for a job that returns nothing)";
      return {};
    default:
      return {};
  }
}

} // namespace

std::string type_name_of(caf::rtti_pair x) {
  if (x.first != 0) {
    const char* caf_name = caf::numbered_type_names[x.first - 1];
    if (auto name = builtin_cpp_name(caf_name))
      return name;
    if (caf_name[0] == '@')
      return std::string{"caf::"} + (caf_name + 1);
    return caf_name; // bool, double, float
  }
  if (x.second != nullptr)
    return caf::detail::pretty_type_name(*x.second);
  return "an unknown type";
}

std::string type_names_of(const caf::message& x) {
  std::string result;
  for (size_t i = 0; i < x.size(); ++i) {
    if (i > 0)
      result += ", ";
    result += type_name_of(x.type(i));
  }
  return result;
}

caf::error wrong_input_type_error(std::string expected,
                                  const caf::message& received) {
  return caf::make_error(pool_errc::wrong_input_type, std::move(expected),
                         type_names_of(received), to_string(received));
}

caf::error wrong_result_type_error(std::string call, std::string expected,
                                   const caf::message& received) {
  return caf::make_error(pool_errc::wrong_result_type, std::move(expected),
                         type_names_of(received), to_string(received),
                         std::move(call));
}

std::string render_pool_error(uint8_t code, caf::atom_value category,
                              const caf::message& context) {
  std::string result = caf::to_string(category);
  result += '.';
  result += to_string(static_cast<pool_errc>(code));
  if (!context.empty()) {
    result += ": ";
    auto sentence = explain(static_cast<pool_errc>(code), context);
    result += sentence.empty() ? render_context(context) : sentence;
  }
  return result;
}

namespace {

detail::locked_map<caf::atom_value, error_renderer>& category_renderers() {
  static detail::locked_map<caf::atom_value, error_renderer> instance;
  return instance;
}

} // namespace

void describe_category(caf::atom_value category, error_renderer f) {
  if (category != pool_error_category)
    category_renderers().set(category, std::move(f));
}

std::string describe(const caf::error& err) {
  if (!err)
    return "none";
  if (err.category() == pool_error_category)
    return render_pool_error(err.code(), err.category(), err.context());
  if (err.category() == caf::atom("system")) {
    std::string result = "system.";
    result += caf::to_string(static_cast<caf::sec>(err.code()));
    if (!err.context().empty()) {
      result += ": ";
      result += render_context(err.context());
    }
    return result;
  }
  if (auto render = category_renderers().get(err.category()))
    return render(err.code(), err.category(), err.context());
  return caf::to_string(err);
}

std::vector<attempt_failure> attempt_history(const caf::error& err) {
  if (!is(err, pool_errc::operation_failed))
    return {};
  auto& ctx = err.context();
  for (size_t i = 0; i < ctx.size(); ++i)
    if (ctx.match_element<std::vector<attempt_failure>>(i))
      return ctx.get_as<std::vector<attempt_failure>>(i);
  return {};
}

bool is(const caf::error& err, pool_errc code) {
  // CAF 0.17.6's category() and code() read through the data pointer of
  // an empty error, which is null: "no error" is only `none`.
  if (!err)
    return code == pool_errc::none;
  return err.category() == pool_error_category &&
         err.code() == static_cast<uint8_t>(code);
}

} // namespace pool
