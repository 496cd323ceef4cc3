#include "pool/detail/durable_store.hpp"

#include <exception>
#include <utility>

#include <fmt/format.h>

#include "group_commit.hpp"
#include "pool/errors.hpp"
#include "store_codec.hpp"

namespace pool::detail {

namespace {

const std::string no_location;

} // namespace

durable_store::durable_store(caf::actor_system& sys) : sys_(sys) {
  // nop
}

durable_store::~durable_store() {
  // nop
}

void durable_store::set_group(std::unique_ptr<group_commit_base> group) {
  group_base_ = std::move(group);
}

void durable_store::close_group() noexcept {
  group_base_.reset();
}

const std::string& durable_store::location() const noexcept {
  return group_base_ ? group_base_->location() : no_location;
}

// -- the group ----------------------------------------------------------------

caf::error durable_store::commit() {
  try {
    return group_base_->commit();
  } catch (...) {
    return on_exception();
  }
}

void durable_store::discard() {
  try {
    pending_keys_.clear();
    pending_options_.clear();
    group_base_->discard();
  } catch (...) {
    static_cast<void>(on_exception());
  }
}

std::vector<attempt_id> durable_store::lost_pushes() const {
  auto result = group_base_->lost();
  result.insert(result.end(), given_up_.begin(), given_up_.end());
  return result;
}

// -- exceptions ---------------------------------------------------------------

std::string durable_store::exception_text() {
  std::string what = "unknown exception";
  try {
    throw;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    // keep the default text
  }
  return what;
}

caf::error durable_store::on_exception() noexcept {
  try {
    auto err = caf::make_error(pool_errc::store_failed, location(),
                               "unexpected exception: " + exception_text());
    try {
      if (!group_base_->broken())
        group_base_->abort(err);
    } catch (...) {
      group_base_->set_broken(err);
    }
    return err;
  } catch (...) {
    // Out of memory while reporting out of memory.
    std::terminate();
  }
}

// -- pushes -------------------------------------------------------------------

caf::error durable_store::set_options(uint64_t operation, job_options opts) {
  // (Only a first push carries options: no row to update.)
  pending_options_[operation] = std::move(opts);
  return caf::none;
}

caf::expected<durable_store::push_data>
durable_store::push_data_of(const work_record& x) {
  if (auto& broken = group_base_->broken())
    return broken;
  push_data result;
  result.what = "storing " + to_string(x.id);
  if (auto err = save(sys_, x.payload, result.payload))
    return caf::make_error(pool_errc::store_failed, location(),
                           fmt::format("{}: cannot serialize the payload: "
                                       "{}; a durable pool needs payload "
                                       "types that CAF can serialize",
                                       result.what, describe(err)));
  auto operation = x.id.operation;
  if (auto key = pending_keys_.find(operation); key != pending_keys_.end())
    result.key = &key->second;
  if (auto opts = pending_options_.find(operation);
      opts != pending_options_.end()) {
    std::vector<char> bytes;
    if (auto err = save(sys_, opts->second, bytes))
      return caf::make_error(
          pool_errc::store_failed, location(),
          result.what + ": cannot serialize its options: " + describe(err));
    result.options = std::move(bytes);
  }
  return result;
}

void durable_store::pushed(uint64_t operation) {
  if (!pending_keys_.empty())
    pending_keys_.erase(operation);
  if (!pending_options_.empty())
    pending_options_.erase(operation);
}

} // namespace pool::detail
