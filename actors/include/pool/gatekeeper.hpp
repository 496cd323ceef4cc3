#pragma once

// The pool's side of the remote layer: a gatekeeper in front of a shepherd,
// the only actor of the pool's process that is ever addressable over the
// network. It admits nodes and operators that present the token, runs each
// node's workers through local stand-ins (see remote_stand_in.hpp), answers
// operators itself, and is published behind the port guard
// (port_guard.hpp). See docs/remote.md.

#include <string>
#include <type_traits>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/detail/pretty_type_name.hpp>
#include <caf/expected.hpp>

#include "pool/remote_options.hpp"
#include "pool/remote_stand_in.hpp"
#include "pool/remote_types.hpp"
#include "pool/spawn.hpp"
#include "pool/worker.hpp"

namespace pool {

namespace detail {

/// The result type of a job `Job` (a callable type or a signature
/// `Out(In...)`) as it travels: `caf::unit_t` for `void`.
template <class Job>
using remote_result_t =
    std::conditional_t<std::is_void_v<typename job_traits<Job>::result>,
                       caf::unit_t, typename job_traits<Job>::result>;

/// Inputs and result of `Job` that `sys` cannot serialize, comma-separated;
/// empty when all can cross the network.
template <class Job>
std::string unsendable_types(caf::actor_system& sys) {
  auto result = unserializable_types(sys, typename job_traits<Job>::args{});
  auto output =
      unserializable_types(sys, caf::detail::type_list<remote_result_t<Job>>{});
  if (!output.empty())
    result += (result.empty() ? "" : ", ") + output;
  return result;
}

/// The error for `unsendable_types`, naming `field`.
caf::error unsendable_error(const char* field, const std::string& types);

/// Spawns a gatekeeper whose stand-ins accept results that pass `check`
/// (named `result_type` in errors).
caf::expected<caf::actor> spawn_gatekeeper(caf::actor_system& sys,
                                           const caf::actor& pool,
                                           remote_options opts,
                                           result_check check,
                                           std::string result_type);

} // namespace detail

/// Returns `pool.invalid_option` naming the types when the inputs or the
/// result of `Job` (a callable type or a signature `Out(In...)`) cannot
/// cross the network because `sys` cannot serialize them; none otherwise.
/// Safe from any thread.
template <class Job>
caf::error check_sendable(caf::actor_system& sys) {
  auto unknown = detail::unsendable_types<Job>(sys);
  if (!unknown.empty())
    return detail::unsendable_error("publish", unknown);
  return caf::none;
}

/// Spawns a gatekeeper in front of `pool` (a shepherd running jobs of type
/// `Job`): it admits `node_join`s and `pool_ctl`s carrying `opts.token()`
/// and drops everything else; remote results that are not `Job`'s result
/// type fail their attempt. It keeps the pool alive and stops (unpublishing
/// itself) when the pool terminates. Not published yet: use
/// `publish_gatekeeper`, or `publish_pool` for both steps. Does not block.
template <class Job>
caf::expected<caf::actor> spawn_gatekeeper(caf::actor_system& sys,
                                           const caf::actor& pool,
                                           remote_options opts) {
  using out = detail::remote_result_t<Job>;
  return detail::spawn_gatekeeper(sys, pool, std::move(opts),
                                  &detail::result_is<out>,
                                  caf::detail::pretty_type_name(typeid(out)));
}

/// As `spawn_gatekeeper<Job>`, for a caller that cannot name the job type:
/// remote results are only checked to be one value, not its type. Prefer
/// the typed overload.
caf::expected<caf::actor> spawn_gatekeeper(caf::actor_system& sys,
                                           const caf::actor& pool,
                                           remote_options opts);

/// Publishes `gatekeeper` on `opts.bind_address()` : `opts.port()` behind
/// the port guard (`max_connections`, `connection_deadlines`,
/// `max_message_size`; docs/remote.md) and returns the bound port. Also
/// removes CAF's "SpawnServ" and "ConfigServ" from the actor registry
/// (remote spawning and CAF's configuration server are then off in this
/// process). Blocks for one round trip to the gatekeeper (at most 10 s);
/// do not call from an actor.
caf::expected<uint16_t> publish_gatekeeper(caf::actor_system& sys,
                                           const caf::actor& gatekeeper,
                                           const remote_options& opts);

/// Publishes `pool` (a shepherd running jobs of type `Job`) behind a new
/// gatekeeper and returns the bound port. `Job` is the job's type
/// (`decltype(fn)`) or just its signature (`int64_t(int32_t)`): its inputs
/// and result cross the network, so each must be known to `sys` (an
/// `inspect` overload and a type ID registered with the config); otherwise
/// this refuses with `pool.invalid_option` naming the types. Also refuses
/// invalid options. Blocks while publishing (at most 10 s); do not call
/// from an actor.
template <class Job>
caf::expected<uint16_t> publish_pool(caf::actor_system& sys,
                                     const caf::actor& pool,
                                     remote_options opts) {
  if (auto err = check_sendable<Job>(sys))
    return err;
  auto gatekeeper = spawn_gatekeeper<Job>(sys, pool, opts);
  if (!gatekeeper)
    return std::move(gatekeeper.error());
  // On failure, dropping the only handle ends the gatekeeper.
  return publish_gatekeeper(sys, *gatekeeper, opts);
}

} // namespace pool
