#include "pool/detail/admission.hpp"

#include <chrono>

#include <caf/type_erased_tuple.hpp>

#include "pool/errors.hpp"
#include "pool/job_options.hpp"
#include "pool/type_ids.hpp"

namespace pool {

namespace {

/// How long an `enq_once` key counts after its operation finished: for
/// ever, as far as a store keeps it (a finite span: store clocks subtract
/// it from the time now).
constexpr caf::timespan once_window = std::chrono::hours{24 * 365 * 100};

/// Reads the options of a `sub_with`, `enq_with` or `enq_typed` into `sub`.
caf::error take_options(submission& sub, const job_options& opts,
                        bool tracked) {
  if (auto err = opts.validate())
    return err;
  if (!tracked && !opts.unique_key().empty())
    return caf::make_error(pool_errc::invalid_option,
                           std::string{"unique_key"},
                           std::string{"needs enq_with (the answer is the "
                                       "id of the operation with that key)"});
  sub.tracked = tracked;
  sub.key = opts.unique_key();
  sub.delay = opts.delay();
  sub.policy = policy_of(opts);
  sub.concurrency_key = opts.concurrency_key();
  return caf::none;
}

caf::error unexpected(const caf::type_erased_tuple& content) {
  return caf::make_error(pool_errc::unexpected_message, content.stringify());
}

} // namespace

caf::expected<size_t> read_submit_header(const caf::type_erased_tuple& content,
                                         submission& sub) {
  if (content.size() < 1 || !content.match_element<caf::atom_value>(0))
    return unexpected(content);
  auto tag = content.get_as<caf::atom_value>(0);
  auto with_options = content.size() >= 2
                      && content.match_element<job_options>(1);
  if (tag == submit_atom::value || tag == enqueue_atom::value) {
    sub.tracked = tag == enqueue_atom::value;
    return size_t{1};
  }
  if (tag == enqueue_typed_atom::value) {
    sub.tracked = true;
    sub.typed = true;
    if (!with_options)
      return size_t{1};
    if (auto err = take_options(sub, content.get_as<job_options>(1), true))
      return err;
    return size_t{2};
  }
  if ((tag == enqueue_unique_atom::value || tag == enqueue_once_atom::value)
      && content.size() >= 2 && content.match_element<std::string>(1)) {
    sub.key = content.get_as<std::string>(1);
    if (tag == enqueue_once_atom::value)
      sub.window = once_window;
    if (sub.key.empty())
      return caf::make_error(pool_errc::invalid_option, std::string{"key"},
                             std::string{"must not be empty"});
    // (Keys are stored and indexed with every operation of a durable
    // store.)
    if (auto err = job_options{}.unique_key(sub.key).validate())
      return caf::make_error(pool_errc::invalid_option, std::string{"key"},
                             err.context().get_as<std::string>(1));
    sub.tracked = true;
    return size_t{2};
  }
  if ((tag == submit_with_atom::value || tag == enqueue_with_atom::value)
      && with_options) {
    if (auto err = take_options(sub, content.get_as<job_options>(1),
                                tag == enqueue_with_atom::value))
      return err;
    return size_t{2};
  }
  if (tag == submit_after_atom::value && content.size() >= 2
      && content.match_element<caf::timespan>(1)) {
    sub.delay = content.get_as<caf::timespan>(1);
    return size_t{2};
  }
  return unexpected(content);
}

admission::admission(std::optional<size_t> capacity, size_t max_parked)
    : capacity_(capacity), max_parked_(max_parked) {
  // nop
}

bool admission::has_room(size_t waiting) const {
  // (`waiting`: the operations admitted and waiting; see shepherd_core.)
  return !capacity_ || waiting + looking_up_ < *capacity_;
}

admission_verdict admission::check(size_t waiting) const {
  if (closed_)
    return admission_verdict::closed;
  // A new submit never overtakes a parked one.
  if (parked_.empty() && has_room(waiting))
    return admission_verdict::accept;
  return parked_.size() < max_parked_ ? admission_verdict::park
                                      : admission_verdict::reject;
}

void admission::park(submission sub) {
  parked_.push_back(std::move(sub));
  ++parked_count_;
}

std::optional<submission> admission::unpark(size_t waiting) {
  if (parked_.empty() || !has_room(waiting))
    return std::nullopt;
  auto result = std::move(parked_.front());
  parked_.pop_front();
  --parked_count_;
  return result;
}

std::deque<submission> admission::take_parked() {
  std::deque<submission> result;
  result.swap(parked_);
  parked_count_ = 0;
  return result;
}

bool admission::join_lookup(submission& sub) {
  auto i = lookups_.find(sub.key);
  if (i == lookups_.end())
    return false;
  ++looking_up_;
  i->second.push_back(std::move(sub));
  return true;
}

void admission::start_lookup(submission sub) {
  ++looking_up_;
  auto key = sub.key;
  lookups_[key].push_back(std::move(sub));
}

std::vector<submission> admission::end_lookup(const std::string& key) {
  std::vector<submission> result;
  auto i = lookups_.find(key);
  if (i == lookups_.end())
    return result;
  result = std::move(i->second);
  lookups_.erase(i);
  looking_up_ -= result.size();
  return result;
}

std::vector<submission> admission::take_lookups() {
  std::vector<submission> result;
  for (auto& kvp : lookups_)
    for (auto& sub : kvp.second)
      result.push_back(std::move(sub));
  lookups_.clear();
  looking_up_ = 0;
  return result;
}

} // namespace pool
