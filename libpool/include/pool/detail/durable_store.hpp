#pragma once

// Machinery of the durable stores (`sqlite_store`, `pg_store`): installed
// because their public headers derive from it; a user never names it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <caf/fwd.hpp>
#include <caf/message.hpp>

#include "pool/job_options.hpp"
#include "pool/work_record.hpp"
#include "pool/work_store.hpp"

namespace pool::detail {

class group_commit_base;

/// What the durable stores share: the group commit over their connection
/// (owned here, written by the store), the key and options that wait for an
/// operation's first push, the pushes a store gave up, and the path from an
/// exception to an error. Not thread-safe: used as its store is.
class durable_store : public work_store {
public:
  ~durable_store() override;

  durable_store(const durable_store&) = delete;

  durable_store& operator=(const durable_store&) = delete;

  bool durable() const noexcept override {
    return true;
  }

  /// Ends the open group. A store with more to write at a commit overrides
  /// it.
  caf::error commit() override;

  /// Drops the open group and the keys and options that wait for a push.
  void discard() override;

  /// The pushes the group's last commit lost, then those the store gave up
  /// (`given_up_`).
  std::vector<attempt_id> lost_pushes() const override;

  /// Kept for the operation's first push (only a first push carries
  /// options: there is no row to update).
  caf::error set_options(uint64_t operation, job_options opts) override;

protected:
  /// What a push stores, serialized.
  struct push_data {
    /// "storing <attempt>", for errors.
    std::string what;
    std::vector<char> payload;
    /// The operation's unique key (`set_key`), if one waits for its first
    /// push.
    const std::string* key = nullptr;
    /// The operation's options (`set_options`), if they wait.
    std::optional<std::vector<char>> options;
  };

  explicit durable_store(caf::actor_system& sys);

  /// Takes `group` over (once, before the store is used) and returns it
  /// for the store's own writes.
  template <class Group>
  Group* own_group(std::unique_ptr<Group> group) {
    auto result = group.get();
    set_group(std::move(group));
    return result;
  }

  /// Destroys the group (before the connection it writes to closes).
  void close_group() noexcept;

  /// The file or server of the store, for errors.
  const std::string& location() const noexcept;

  /// Turns the exception being handled into a `store_failed` error and
  /// rolls the group back (the store reloads its state), or marks the store
  /// broken if that throws too.
  caf::error on_exception() noexcept;

  /// The text of the exception being handled ("unknown exception" for one
  /// that is no `std::exception`).
  static std::string exception_text();

  /// What a push of `x` stores: the error that broke the store, or
  /// `store_failed` when the payload or the options do not serialize. The
  /// key stays valid until `pushed`.
  caf::expected<push_data> push_data_of(const work_record& x);

  /// A push of `operation` was written: its key and options were stored.
  void pushed(uint64_t operation);

  caf::actor_system& sys_;
  /// Keys set for operations that have no row yet.
  std::unordered_map<uint64_t, std::string> pending_keys_;
  /// Options set for operations that have no row yet.
  std::unordered_map<uint64_t, job_options> pending_options_;
  /// The pushes the store gave up at its last commit (see `lost_pushes`).
  std::vector<attempt_id> given_up_;

private:
  void set_group(std::unique_ptr<group_commit_base> group);

  std::unique_ptr<group_commit_base> group_base_;
};

} // namespace pool::detail
