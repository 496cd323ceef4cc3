#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/message.hpp>
#include <caf/message_handler.hpp>
#include <caf/type_erased_tuple.hpp>

#include "pool/options.hpp"
#include "pool/protocol.hpp"
#include "pool/work_store.hpp"

namespace pool {

/// Where the typed submit handler hands a plain submit's input: the
/// shepherd actor that runs the handler (`fn(self, payload)`).
struct submit_sink {
  void* self = nullptr;
  void (*fn)(void* self, caf::message&& payload) = nullptr;

  void operator()(caf::message&& payload) const {
    fn(self, std::move(payload));
  }
};

/// What the typed façade hands to the type-erased shepherd.
struct shepherd_config {
  pool_options options;
  /// The queue's storage; outlives the queue actor.
  std::shared_ptr<work_store> store;
  /// Spawns one local worker. Called from inside the shepherd.
  std::function<caf::actor(caf::actor_system&)> spawn_worker;
  /// Whether a submitted payload is the pool's input.
  std::function<bool(const caf::message&)> accepts;
  /// The elements after the first `skip` of a submit's content, moved into
  /// a compact message of the pool's input, or none if they are not the
  /// input (or not serializable: the submit is then kept as it came).
  std::function<std::optional<caf::message>(caf::type_erased_tuple&, size_t)>
      repack;
  /// The handler of `(submit, In...)` for the pool's input type: it packs
  /// the input into a message of its own and hands it to the sink. A plain
  /// submit is the one a pool sees most, so it is matched first, by type,
  /// instead of after every other handler (the default handler takes the
  /// rest). Empty when the input cannot be packed (neither serializable nor
  /// allowed as an unsafe message type).
  std::function<caf::message_handler(submit_sink)> submit_handler;
  /// The input type(s) as text, for error messages.
  std::string input_type;
  /// Whether a result reported by a joined worker is the job's `Out`
  /// (the pool's own workers report what the job returns).
  std::function<bool(const caf::message&)> result_ok;
  /// The result type as text, for error messages.
  std::string result_type;
};

/// Spawns the shepherd actor (named `"pool.shepherd"`): a thin adapter
/// that turns messages into calls of `shepherd_core` and carries out its
/// effects (docs/design.md). It spawns the queue over `cfg.store` and the
/// workers. Does not block.
caf::actor spawn_shepherd_actor(caf::actor_system& sys, shepherd_config cfg);

} // namespace pool
