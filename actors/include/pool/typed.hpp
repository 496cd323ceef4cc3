#pragma once

// The typed façade: a pool handle whose type says the job's signature, so
// the compiler checks every submit's inputs and every handler of its result,
// and typed outcome messages for operations enqueued through it.

#include <chrono>
#include <future>
#include <memory>
#include <type_traits>
#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/replies_to.hpp>
#include <caf/response_type.hpp>
#include <caf/typed_actor.hpp>

#include "pool/job_options.hpp"
#include "pool/spawn.hpp"
#include "pool/type_ids.hpp"

/// The compiler's message for inputs a typed pool's job does not take.
#define POOL_TYPED_INPUT_SENTENCE                                              \
  "pool: the job does not take these inputs: the submit's arguments must "   \
  "convert to the In... of the handle's typed_pool<Out(In...)>"

namespace pool {

namespace detail {

template <class Sig>
struct typed_pool_of;

template <class Out, class... In>
struct typed_pool_of<Out(In...)> {
  /// What a worker reports, so what a submit replies.
  using reply = reported_t<Out>;
  using type = caf::typed_actor<
      typename caf::replies_to<submit_atom, In...>::template with<reply>,
      typename caf::replies_to<submit_after_atom, caf::timespan,
                               In...>::template with<reply>,
      typename caf::replies_to<submit_with_atom, job_options,
                               In...>::template with<reply>,
      typename caf::replies_to<enqueue_typed_atom,
                               In...>::template with<uint64_t>,
      typename caf::replies_to<enqueue_typed_atom, job_options,
                               In...>::template with<uint64_t>>;
};

/// `Out(In...)` of a job `F` (a resource job without its resource).
template <class Traits, class Args = typename Traits::args>
struct signature_of;

template <class Traits, class... In>
struct signature_of<Traits, caf::detail::type_list<In...>> {
  using type = typename Traits::result(In...);
};

/// The job signature behind a typed pool handle.
template <class Handle>
struct typed_pool_traits;

template <class Reply, class... In, class... Rest>
struct typed_pool_traits<caf::typed_actor<
    caf::typed_mpi<caf::detail::type_list<submit_atom, In...>,
                   caf::output_tuple<Reply>>,
    Rest...>> {
  using reply = Reply;
  /// The result type as `blocking_submit` gives it (`void` for `unit_t`).
  using out = std::conditional_t<std::is_same_v<Reply, caf::unit_t>, void,
                                 Reply>;
};

/// Whether a typed handle accepts `(Ts...)`, as CAF's `request` checks.
template <class Handle, class... Ts>
constexpr bool typed_accepts_v = caf::response_type_unbox<
    caf::signatures_of_t<Handle>,
    caf::detail::type_list<typename caf::detail::implicit_conversions<
        std::decay_t<Ts>>::type...>>::valid;

} // namespace detail

/// A handle to a pool whose job is `Out(In...)`: a `caf::typed_actor`, so
/// `self->request(pool, timeout, pool::submit_atom_v, in...)` does not
/// compile with inputs the job does not take, and its `.then` handler must
/// take `Out` (`caf::unit_t` for a `void` job). It understands `submit`,
/// `sub_after`, `sub_with` and `enq_typed` (with or without `job_options`),
/// which replies the operation id at once and then sends the enqueuer
/// `(op_result, uint64_t id, Out)` or `(op_failed, uint64_t id,
/// caf::error)`; with a unique key that answers an existing operation's
/// id, only that operation's own enqueuer gets its outcome. For everything
/// else (stats, pause, drain, resize…) `pool::untyped(handle)` gives the
/// plain `caf::actor`.
template <class Sig>
using typed_pool = typename detail::typed_pool_of<Sig>::type;

/// The plain handle of a typed pool, for the pool's other messages.
template <class... Sigs>
caf::actor untyped(const caf::typed_actor<Sigs...>& handle) {
  return caf::actor_cast<caf::actor>(handle);
}

/// `spawn_pool`, returning a typed handle whose signature is `fn`'s.
template <class F, class... Rest>
auto spawn_typed_pool(caf::actor_system& sys, F fn, Rest&&... rest)
    -> caf::expected<typed_pool<
        typename detail::signature_of<detail::job_traits<F>>::type>> {
  using handle =
      typed_pool<typename detail::signature_of<detail::job_traits<F>>::type>;
  auto pool = spawn_pool(sys, std::move(fn), std::forward<Rest>(rest)...);
  if (!pool)
    return std::move(pool.error());
  return caf::actor_cast<handle>(std::move(*pool));
}

/// `spawn_resource_pool`, returning a typed handle whose signature is
/// `fn`'s without its resource.
template <class Factory, class F, class... Rest>
auto spawn_typed_resource_pool(caf::actor_system& sys, Factory make, F fn,
                               Rest&&... rest)
    -> caf::expected<typed_pool<typename detail::signature_of<
        detail::resource_job_traits<F>>::type>> {
  using handle = typed_pool<
      typename detail::signature_of<detail::resource_job_traits<F>>::type>;
  auto pool = spawn_resource_pool(sys, std::move(make), std::move(fn),
                                  std::forward<Rest>(rest)...);
  if (!pool)
    return std::move(pool.error());
  return caf::actor_cast<handle>(std::move(*pool));
}

/// `blocking_submit` on a typed pool: the result type comes from the
/// handle, and inputs the job does not take do not compile.
template <class... Sigs, class Rep, class Period, class... Ts>
auto blocking_submit(
    caf::actor_system& sys, const caf::typed_actor<Sigs...>& pool,
    std::chrono::duration<Rep, Period> timeout, Ts&&... xs)
    -> caf::expected<
        typename detail::typed_pool_traits<caf::typed_actor<Sigs...>>::out> {
  using out =
      typename detail::typed_pool_traits<caf::typed_actor<Sigs...>>::out;
  constexpr bool accepted = detail::typed_accepts_v<caf::typed_actor<Sigs...>,
                                                    submit_atom, Ts...>;
  static_assert(accepted, POOL_TYPED_INPUT_SENTENCE);
  caf::expected<out> result{caf::sec::request_timeout};
  if constexpr (accepted) {
    caf::scoped_actor self{sys};
    auto set = [&result](caf::expected<out> x) { result = std::move(x); };
    self->request(pool, std::chrono::duration_cast<caf::timespan>(timeout),
                  submit_atom_v, std::forward<Ts>(xs)...)
        .receive(detail::on_result<out>(set), [&](caf::error& err) {
          result = detail::submit_error<out>(std::move(err),
                                             "blocking_submit");
        });
  }
  return result;
}

/// `submit_future` on a typed pool: the result type comes from the handle.
template <class... Sigs, class... Ts>
auto submit_future(caf::actor_system& sys,
                   const caf::typed_actor<Sigs...>& pool, Ts... xs)
    -> std::future<caf::expected<
        typename detail::typed_pool_traits<caf::typed_actor<Sigs...>>::out>> {
  using out =
      typename detail::typed_pool_traits<caf::typed_actor<Sigs...>>::out;
  static_assert(detail::typed_accepts_v<caf::typed_actor<Sigs...>,
                                        submit_atom, Ts...>,
                POOL_TYPED_INPUT_SENTENCE);
  return submit_future<out>(sys, untyped(pool), std::move(xs)...);
}

} // namespace pool
