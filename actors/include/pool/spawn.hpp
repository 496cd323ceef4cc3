#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/expected.hpp>
#include <caf/make_message.hpp>
#include <caf/message_handler.hpp>
#include <caf/rtti_pair.hpp>
#include <caf/scoped_actor.hpp>

#include "pool/memory_store.hpp"
#include "pool/options.hpp"
#include "pool/shepherd.hpp"
#include "pool/store_factory.hpp"
#include "pool/dedicated_worker.hpp"
#include "pool/worker.hpp"

/// The compiler's message for a job without one fixed signature.
#define POOL_PLAIN_JOB_SENTENCE                                                \
  "pool: the job needs one fixed signature, such as "                          \
  "[](int32_t x) { return x * 2; }. A generic lambda (auto parameters) or "    \
  "an object with several operator() does not tell the pool which input "      \
  "and result types it has: write the parameter types out."

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

/// The shepherd's handler of `(submit, Ts...)`: the input moves into a
/// message of its own for `sink` (see `shepherd_config::submit_handler`);
/// empty when `make_message` takes no `Ts` (neither serializable nor
/// allowed as unsafe message types).
template <class Sink, class... Ts>
caf::message_handler submit_handler(Sink sink, caf::detail::type_list<Ts...>) {
  if constexpr ((caf::is_serializable_or_whitelisted<Ts>::value && ...)) {
    return caf::message_handler{[sink](submit_atom, Ts&... xs) {
      sink(caf::make_message(std::move(xs)...));
    }};
  } else {
    return {};
  }
}

/// The store `opts` names, once `opts` passed validation (bad options
/// touch no store). Blocks while opening a durable store.
inline caf::expected<std::shared_ptr<work_store>>
checked_store(caf::actor_system& sys, const pool_options& opts) {
  if (auto err = opts.validate())
    return err;
  return store_for(sys, opts);
}

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
  cfg.submit_handler = [](submit_sink sink) {
    return submit_handler(sink, Args{});
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
  static_assert(detail::is_plain_job_v<F>, POOL_PLAIN_JOB_SENTENCE);
  if constexpr (detail::is_plain_job_v<F>) {
    using traits = detail::job_traits<F>;
    return detail::spawn_shepherd<typename traits::args,
                                  detail::reported_t<typename traits::result>>(
        sys, std::move(opts), std::move(store),
        [fn](caf::actor_system& sys, bool dedicated, caf::timespan slow) {
          if (dedicated)
            return spawn_dedicated_worker(sys, [fn](auto* self) {
              return worker_actor<F>(self, fn);
            });
          // Asleep until its first message, it needs no scheduling before:
          // growing by 1,000,000 queues none of them on a scheduler thread.
          return sys.spawn<caf::lazy_init>(timed_worker_actor<F>, fn, slow);
        });
  } else {
    return caf::make_error(pool_errc::invalid_option, std::string{"job"});
  }
}

/// Spawns a pool whose workers each own a resource (a connection, a licence
/// seat): `make()` creates it when a worker starts, it is released when the
/// worker stops, and jobs are `fn(resource&, in...)`. A job that throws
/// `pool::resource_broken` retires its worker and resource; the replacement
/// makes a fresh one. Otherwise as `spawn_pool`.
template <class Factory, class F>
caf::expected<caf::actor>
spawn_resource_pool(caf::actor_system& sys, Factory make, F fn,
                    pool_options opts, std::shared_ptr<work_store> store) {
  static_assert(detail::is_plain_job_v<F>, POOL_PLAIN_JOB_SENTENCE);
  if constexpr (detail::is_plain_job_v<F>) {
    using traits = detail::resource_job_traits<F>;
    return detail::spawn_shepherd<typename traits::args,
                                  detail::reported_t<typename traits::result>>(
        sys, std::move(opts), std::move(store),
        [make, fn](caf::actor_system& sys, bool dedicated, caf::timespan slow) {
          if (dedicated)
            return spawn_dedicated_worker(sys, [make, fn, slow](auto* self) {
              return resource_worker_actor<Factory, F>(self, make, fn, slow);
            });
          return sys.spawn(resource_worker_actor<Factory, F>, make, fn, slow);
        });
  } else {
    return caf::make_error(pool_errc::invalid_option, std::string{"job"});
  }
}

/// As above, with the store the options ask for: in memory by default, an
/// SQLite file with `opts.durable(path)`, PostgreSQL with
/// `opts.postgres(conninfo)` (an error if it cannot be opened; bad options
/// are refused before any store is touched). Blocks while opening a
/// durable store.
template <class F>
caf::expected<caf::actor> spawn_pool(caf::actor_system& sys, F fn,
                                     pool_options opts = {}) {
  auto store = detail::checked_store(sys, opts);
  if (!store)
    return std::move(store.error());
  return spawn_pool(sys, std::move(fn), std::move(opts), std::move(*store));
}

/// `spawn_resource_pool` with the store the options ask for, as above: in
/// memory by default, an SQLite file with `opts.durable(path)`, PostgreSQL
/// with `opts.postgres(conninfo)`. Blocks while opening a durable store.
template <class Factory, class F>
caf::expected<caf::actor> spawn_resource_pool(caf::actor_system& sys,
                                              Factory make, F fn,
                                              pool_options opts = {}) {
  auto store = detail::checked_store(sys, opts);
  if (!store)
    return std::move(store.error());
  return spawn_resource_pool(sys, std::move(make), std::move(fn),
                             std::move(opts), std::move(*store));
}

namespace detail {

/// Names the caller for errors: `blocking_submit<std::string>`.
template <class Out>
std::string submit_call(const char* function) {
  if constexpr (std::is_void_v<Out>)
    return std::string{function} + "<void>";
  else
    return std::string{function} + '<' +
           type_name_of(caf::make_rtti_pair<Out>()) + '>';
}

/// The outcome of a submit for `Out` from the error a response handler
/// got: CAF's `unexpected_response` (a reply of another type than `Out`)
/// becomes `pool.wrong_result_type`, naming both types.
template <class Out>
caf::error submit_error(caf::error err, const char* function) {
  if (err == caf::sec::unexpected_response) {
    std::string wanted = "no value";
    if constexpr (!std::is_void_v<Out>)
      wanted = type_name_of(caf::make_rtti_pair<Out>());
    return wrong_result_type_error(submit_call<Out>(function),
                                   std::move(wanted), err.context());
  }
  return err;
}

/// A response handler for the result of a job returning `Out`: a void
/// job replies `caf::unit_t`.
template <class Out, class Set>
auto on_result(Set set) {
  if constexpr (std::is_void_v<Out>)
    return [set](caf::unit_t) mutable { set(caf::expected<void>{}); };
  else
    return [set](Out& x) mutable { set(caf::expected<Out>{std::move(x)}); };
}

} // namespace detail

/// Submits `xs...` from non-actor code and blocks until the outcome is
/// known or `timeout` passed (then `caf::sec::request_timeout`). `Out` is
/// the job's result type, `void` for a job that returns nothing (the
/// result is then `caf::expected<void>`); another type than the job's
/// gives `pool.wrong_result_type`. Safe from any thread that is not a CAF
/// scheduler thread.
template <class Out, class Rep, class Period, class... Ts>
caf::expected<Out>
blocking_submit(caf::actor_system& sys, const caf::actor& pool,
                std::chrono::duration<Rep, Period> timeout, Ts&&... xs) {
  caf::scoped_actor self{sys};
  caf::expected<Out> result{caf::sec::request_timeout};
  auto set = [&result](caf::expected<Out> x) { result = std::move(x); };
  self->request(pool, std::chrono::duration_cast<caf::timespan>(timeout),
                submit_atom_v, std::forward<Ts>(xs)...)
      .receive(detail::on_result<Out>(set), [&](caf::error& err) {
        result = detail::submit_error<Out>(std::move(err), "blocking_submit");
      });
  return result;
}

/// Submits `xs...` from non-actor code and returns a future of the outcome
/// (`Out` as for `blocking_submit`). Does not block; the future is always
/// satisfied (with a result, the job's error, or the pool's termination
/// error). Callable from any thread.
template <class Out, class... Ts>
std::future<caf::expected<Out>>
submit_future(caf::actor_system& sys, const caf::actor& pool, Ts... xs) {
  auto promise = std::make_shared<std::promise<caf::expected<Out>>>();
  auto result = promise->get_future();
  sys.spawn([promise, pool, xs...](caf::event_based_actor* self) {
    auto set = [promise](caf::expected<Out> x) {
      promise->set_value(std::move(x));
    };
    self->request(pool, caf::infinite, submit_atom_v, xs...)
        .then(detail::on_result<Out>(set), [promise](caf::error& err) {
          promise->set_value(
              detail::submit_error<Out>(std::move(err), "submit_future"));
        });
  });
  return result;
}

} // namespace pool
