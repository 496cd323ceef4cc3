#include "pool/errors.hpp"

#include <caf/message.hpp>
#include <caf/sec.hpp>

#include "pool/work_record.hpp"

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
    case pool_errc::store_in_use:
      return "store_in_use";
    case pool_errc::lease_lost:
      return "lease_lost";
    case pool_errc::key_taken:
      return "key_taken";
  }
  return "pool_errc(" + std::to_string(static_cast<int>(x)) + ")";
}

namespace {

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
    } else if (context.match_element<uint64_t>(i) && i == 0) {
      result += "op#" + std::to_string(context.get_as<uint64_t>(i));
    } else {
      result += context.stringify(i);
    }
  }
  return result;
}

} // namespace

std::string render_pool_error(uint8_t code, caf::atom_value category,
                              const caf::message& context) {
  std::string result = caf::to_string(category);
  result += '.';
  result += to_string(static_cast<pool_errc>(code));
  if (!context.empty()) {
    result += ": ";
    result += render_context(context);
  }
  return result;
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
  return err.category() == pool_error_category &&
         err.code() == static_cast<uint8_t>(code);
}

} // namespace pool
