#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/expected.hpp>
#include <caf/rtti_pair.hpp>
#include <caf/scoped_actor.hpp>

#include "pool/memory_store.hpp"
#include "pool/options.hpp"
#include "pool/shepherd.hpp"
#include "pool/sqlite_store.hpp"
#include "pool/worker.hpp"

namespace pool {

namespace detail {

/// Names of the types in `Ts...` that `sys` cannot serialize (not
/// registered), comma-separated; empty when all are known.
template <class... Ts>
std::string unserializable_types(caf::actor_system& sys,
                                 caf::detail::type_list<Ts...>) {
  std::string result;
  auto& types = sys.types();
  auto check = [&](auto rtti, const char* name) {
    if (&types.portable_name(rtti) == &types.default_type_name() ||
        types.portable_name(rtti) == types.default_type_name())
      result += (result.empty() ? "" : ", ") + std::string{name};
  };
  (check(caf::make_rtti_pair<Ts>(),
         caf::detail::pretty_type_name(typeid(Ts)).c_str()),
   ...);
  return result;
}

/// What a worker reports for a job returning `T` (`unit_t` for `void`).
template <class T>
using reported_t = std::conditional_t<std::is_void_v<T>, caf::unit_t, T>;

/// Validates `opts` and spawns a shepherd whose workers come from
/// `spawn_worker`, whose input is `Args` and whose result is `Out`.
template <class Args, class Out>
caf::expected<caf::actor> spawn_shepherd(
    caf::actor_system& sys, pool_options opts,
    std::shared_ptr<work_store> store,
    std::function<caf::actor(caf::actor_system&, bool, caf::timespan)> spawn) {
  if (auto err = opts.validate())
    return err;
  if (!store)
    return caf::make_error(pool_errc::invalid_option, std::string{"store"},
                           std::string{"must not be null"});
  if (store->durable()) {
    // Inputs are written to disk: CAF must know how to serialize them.
    auto unknown = unserializable_types(sys, Args{});
    if (!unknown.empty())
      return caf::make_error(
          pool_errc::invalid_option, std::string{"durable"},
          "cannot store inputs of type " + unknown +
              ": give the type an inspect overload and register it "
              "(CAF_ADD_TYPE_ID in a type-ID block, add_message_types)");
  }
  shepherd_config cfg;
  cfg.store = std::move(store);
  cfg.accepts = [](const caf::message& x) {
    return payload_matches(x, Args{});
  };
  cfg.repack = [](caf::type_erased_tuple& x, size_t skip) {
    return repack_payload(x, skip, Args{});
  };
  cfg.input_type = type_names(Args{});
  cfg.result_ok = [](const caf::message& x) { return x.match_elements<Out>(); };
  cfg.result_type = type_names(caf::detail::type_list<Out>{});
  auto dedicated = opts.kind() == worker_kind::dedicated;
  // Dedicated workers have a thread of their own: a long job slows no one.
  auto slow_after = dedicated ? caf::timespan{0} : opts.slow_job_warning();
  cfg.spawn_worker = [spawn, dedicated, slow_after](caf::actor_system& sys) {
    return spawn(sys, dedicated, slow_after);
  };
  cfg.options = std::move(opts);
  return spawn_shepherd_actor(sys, std::move(cfg));
}

} // namespace detail

/// Spawns a pool running `fn` on every submitted operation, its queue over
/// `store` (which outlives any one queue actor), and returns its handle: the
/// shepherd, an ordinary `caf::actor` that may be passed in messages,
/// monitored and linked. `fn` is `Out(In...)` or
/// `caf::expected<Out>(In...)`; a thrown exception or a returned error is a
/// failed attempt. Returns the validation error when `opts` is invalid.
///
/// Submit from an actor:
/// `self->request(pool, timeout, pool::submit_atom_v, in...)` replies `Out`
/// or a `caf::error`; `(pool::submit_after_atom_v, delay, in...)` does the
/// same but is not started before `delay` has passed.
/// The pool stops when its last handle is gone, or when it is sent an exit.
/// Does not block; callable from any thread.
template <class F>
caf::expected<caf::actor> spawn_pool(caf::actor_system& sys, F fn,
                                     pool_options opts,
                                     std::shared_ptr<work_store> store) {
  using traits = detail::job_traits<F>;
  return detail::spawn_shepherd<typename traits::args,
                                detail::reported_t<typename traits::result>>(
      sys, std::move(opts), std::move(store),
      [fn](caf::actor_system& sys, bool dedicated, caf::timespan slow) {
        if (dedicated)
          return sys.spawn<caf::detached>(worker_actor<F>, fn);
        return sys.spawn(timed_worker_actor<F>, fn, slow);
      });
}

/// Spawns a pool whose workers each own a resource (a connection, a licence
/// seat): `make()` creates it when a worker starts, it is released when the
/// worker stops, and jobs are `fn(resource&, in...)`. A job that throws
/// `pool::resource_broken` retires its worker and resource; the replacement
/// makes a fresh one. Otherwise as `spawn_pool`.
template <class Factory, class F>
caf::expected<caf::actor> spawn_resource_pool(
    caf::actor_system& sys, Factory make, F fn, pool_options opts = {},
    std::shared_ptr<work_store> store = std::make_shared<memory_store>()) {
  using traits = detail::resource_job_traits<F>;
  return detail::spawn_shepherd<typename traits::args,
                                detail::reported_t<typename traits::result>>(
      sys, std::move(opts), std::move(store),
      [make, fn](caf::actor_system& sys, bool dedicated, caf::timespan slow) {
        if (dedicated)
          return sys.spawn<caf::detached>(resource_worker_actor<Factory, F>,
                                          make, fn, slow);
        return sys.spawn(resource_worker_actor<Factory, F>, make, fn, slow);
      });
}

/// As above, with the store the options ask for: in memory by default, an
/// SQLite file with `opts.durable(path)` (an error if it cannot be opened).
/// Blocks while opening a durable store's file.
template <class F>
caf::expected<caf::actor> spawn_pool(caf::actor_system& sys, F fn,
                                     pool_options opts = {}) {
  auto store = store_for(sys, opts);
  if (!store)
    return std::move(store.error());
  return spawn_pool(sys, std::move(fn), std::move(opts), std::move(*store));
}

/// Submits `xs...` from non-actor code and blocks until the outcome is
/// known or `timeout` passed (then `caf::sec::request_timeout`). Safe from
/// any thread that is not a CAF scheduler thread.
template <class Out, class Rep, class Period, class... Ts>
caf::expected<Out>
blocking_submit(caf::actor_system& sys, const caf::actor& pool,
                std::chrono::duration<Rep, Period> timeout, Ts&&... xs) {
  caf::scoped_actor self{sys};
  caf::expected<Out> result{caf::sec::request_timeout};
  self->request(pool, std::chrono::duration_cast<caf::timespan>(timeout),
                submit_atom_v, std::forward<Ts>(xs)...)
      .receive([&](Out& x) { result = std::move(x); },
               [&](caf::error& err) { result = std::move(err); });
  return result;
}

/// Submits `xs...` from non-actor code and returns a future of the outcome.
/// Does not block; the future is always satisfied (with a result, the job's
/// error, or the pool's termination error). Callable from any thread.
template <class Out, class... Ts>
std::future<caf::expected<Out>>
submit_future(caf::actor_system& sys, const caf::actor& pool, Ts... xs) {
  auto promise = std::make_shared<std::promise<caf::expected<Out>>>();
  auto result = promise->get_future();
  sys.spawn([promise, pool, xs...](caf::event_based_actor* self) {
    self->request(pool, caf::infinite, submit_atom_v, xs...)
        .then(
            [promise](Out& x) { promise->set_value(std::move(x)); },
            [promise](caf::error& err) { promise->set_value(std::move(err)); });
  });
  return result;
}

} // namespace pool
