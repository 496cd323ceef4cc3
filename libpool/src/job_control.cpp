#include "pool/job_control.hpp"

#include <utility>

#include "pool/duration_text.hpp"
#include "pool/errors.hpp"

#include "locked_map.hpp"

namespace pool {

namespace {

thread_local const job_context* running_job = nullptr;

/// The longest snooze: beyond it, the clock arithmetic could overflow and
/// no operation sensibly waits longer.
constexpr caf::timespan max_snooze = std::chrono::hours{24 * 366};

} // namespace

std::optional<caf::timespan> job_context::time_left() const {
  if (!deadline)
    return std::nullopt;
  return std::chrono::duration_cast<caf::timespan>(
      *deadline - std::chrono::steady_clock::now());
}

const job_context* current_job() noexcept {
  return running_job;
}

snooze_job::snooze_job(caf::timespan delay)
    : std::runtime_error("snoozed for " + duration_text(delay)),
      delay_(delay) {
  // nop
}

caf::error discard(std::string why) {
  return caf::make_error(pool_errc::discarded, std::move(why));
}

caf::error snooze(caf::timespan delay) {
  if (delay < caf::timespan::zero() || delay > max_snooze)
    return caf::make_error(pool_errc::invalid_delay,
                           "snooze: " + duration_text(delay) +
                               " (a snooze delay must be 0 to 366 days)");
  return caf::make_error(pool_errc::snoozed, delay);
}

std::optional<caf::timespan> snooze_delay(const caf::error& err) {
  if (!is(err, pool_errc::snoozed))
    return std::nullopt;
  auto& ctx = err.context();
  if (ctx.size() != 1 || !ctx.match_element<caf::timespan>(0))
    return std::nullopt;
  auto delay = ctx.get_as<caf::timespan>(0);
  if (delay < caf::timespan::zero() || delay > max_snooze)
    return std::nullopt;
  return delay;
}

bool is_discard(const caf::error& err) {
  return is(err, pool_errc::discarded);
}

namespace {

using error_code = std::pair<caf::atom_value, uint8_t>;

detail::locked_map<error_code, bool>& timeout_codes() {
  static detail::locked_map<error_code, bool> instance;
  return instance;
}

} // namespace

void count_as_timeout(caf::atom_value category, uint8_t code) {
  if (category != pool_error_category)
    timeout_codes().set({category, code}, true);
}

bool counts_as_timeout(const caf::error& err) {
  return err && timeout_codes().get({err.category(), err.code()});
}

namespace detail {

job_scope::job_scope(const work_record& record) : previous_(running_job) {
  context_.operation = record.id.operation;
  context_.attempt = record.id.attempt;
  if (record.budget > caf::timespan::zero())
    context_.deadline = std::chrono::steady_clock::now() + record.budget;
  running_job = &context_;
}

job_scope::~job_scope() {
  running_job = previous_;
}

} // namespace detail

} // namespace pool
