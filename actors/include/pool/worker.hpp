#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <caf/actor_cast.hpp>
#include <caf/actor_registry.hpp>
#include <caf/actor_system.hpp>
#include <caf/detail/pretty_type_name.hpp>
#include <caf/detail/type_traits.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/expected.hpp>
#include <caf/rtti_pair.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/type_nr.hpp>

#include "pool/batch_buffers.hpp"
#include "pool/errors.hpp"
#include "pool/job_control.hpp"
#include "pool/protocol.hpp"
#include "pool/spread.hpp"

namespace pool {

namespace detail {

template <class T>
struct unwrap_expected {
  using type = T;
  static constexpr bool is_expected = false;
};

template <class T>
struct unwrap_expected<caf::expected<T>> {
  using type = T;
  static constexpr bool is_expected = true;
};

/// Whether `F` has the one call signature that the pool reads its input
/// and result types from: a function (pointer), or a class with exactly
/// one non-template `operator()`, such as a lambda with typed parameters.
template <class F, class = void>
struct has_one_call_operator : std::false_type {};

template <class F>
struct has_one_call_operator<F, std::void_t<decltype(&F::operator())>>
    : std::true_type {};

template <class F>
constexpr bool is_plain_job_v =
    std::is_function_v<std::remove_pointer_t<std::decay_t<F>>> ||
    has_one_call_operator<std::decay_t<F>>::value;

/// Compile-time facts about a job function `Out(In...)` or
/// `caf::expected<Out>(In...)`.
template <class F>
struct job_traits {
  using trait = caf::detail::get_callable_trait<F>;
  using args =
      typename caf::detail::tl_map<typename trait::arg_types, std::decay>::type;
  using raw_result = typename trait::result_type;
  using result = typename unwrap_expected<raw_result>::type;
  static constexpr bool returns_expected =
      unwrap_expected<raw_result>::is_expected;
};

template <class... Ts>
bool payload_matches(const caf::message& x, caf::detail::type_list<Ts...>) {
  if constexpr (sizeof...(Ts) <= 5 && ((caf::type_nr<Ts>::value != 0) && ...)) {
    // Up to five types CAF numbers (ints, strings, ...): the message's type
    // token says exactly whether it holds them, in one call instead of one
    // virtual check per element.
    return x.type_token() == caf::make_type_token<Ts...>();
  } else {
    return x.match_elements<Ts...>();
  }
}

/// A message holding just the elements of `x` after the first `skip`, if
/// they are `Ts...`, moved out of `x` (a submit's content, straight from the
/// mailbox): one compact tuple, made with one allocation. None if they are
/// not `Ts...`, or if they are neither serializable nor allowed as unsafe
/// message types (`make_message` takes no others); the caller then keeps
/// the whole message (see `shepherd`).
template <class... Ts, size_t... Is>
std::optional<caf::message>
repack_payload(caf::type_erased_tuple& x, size_t skip,
               caf::detail::type_list<Ts...>, std::index_sequence<Is...>) {
  if constexpr ((caf::is_serializable_or_whitelisted<Ts>::value && ...)) {
    if (x.size() != skip + sizeof...(Ts) ||
        !(x.match_element<Ts>(skip + Is) && ...))
      return std::nullopt;
    return caf::make_message(x.move_if_unshared<Ts>(skip + Is)...);
  } else {
    return std::nullopt;
  }
}

template <class... Ts>
std::optional<caf::message> repack_payload(caf::type_erased_tuple& x,
                                           size_t skip,
                                           caf::detail::type_list<Ts...> ts) {
  return repack_payload(x, skip, ts, std::index_sequence_for<Ts...>{});
}

/// The names of `Ts...` as error messages spell them (`int32_t, ...`),
/// the same names `type_names_of` gives a message's elements.
template <class... Ts>
std::string type_names(caf::detail::type_list<Ts...>) {
  std::string result;
  ((result += (result.empty() ? "" : ", "),
    result += type_name_of(caf::make_rtti_pair<Ts>())),
   ...);
  return result;
}

template <class F, class... Ts, size_t... Is>
decltype(auto) call_with(F& fn, const caf::message& x,
                         caf::detail::type_list<Ts...>,
                         std::index_sequence<Is...>) {
  return fn(x.get_as<Ts>(Is)...);
}

/// Compile-time facts about a job `Out(R&, In...)` of a worker that owns
/// a resource `R`: the inputs are the arguments after the first.
template <class F>
struct resource_job_traits : job_traits<F> {
  using args =
      typename caf::detail::tl_tail<typename job_traits<F>::args>::type;
};

/// Packs a job's result as a message.
struct pack_message {
  template <class T>
  caf::message operator()(T&& x) const {
    return caf::make_message(std::forward<T>(x));
  }
};

/// Packs a job's result as its caller's reply (`prepared_reply`).
struct pack_reply {
  template <class T>
  prepared_reply operator()(T&& x) const {
    return prepared_reply{caf::make_mailbox_element(
      nullptr, caf::make_message_id(), {}, std::forward<T>(x))};
  }
};

/// Runs `fn` on the payload and packs the outcome for a status reply:
/// the result as `Pack` packs it (a message by default), or an error when
/// the job threw or returned one. `Traits` names the inputs and the result
/// type of `fn`.
template <class Traits, class Pack = pack_message, class F>
caf::expected<std::invoke_result_t<Pack, caf::unit_t>>
run_job(F& fn, const caf::message& payload) {
  using traits = Traits;
  Pack pack;
  using args = typename traits::args;
  if (!payload_matches(payload, args{}))
    return wrong_input_type_error(type_names(args{}), payload);
  try {
    auto idx = std::make_index_sequence<caf::detail::tl_size<args>::value>{};
    if constexpr (std::is_void_v<typename traits::raw_result>) {
      call_with(fn, payload, args{}, idx);
      return pack(caf::unit);
    } else if constexpr (traits::returns_expected) {
      auto res = call_with(fn, payload, args{}, idx);
      if (!res) {
        if (!res.error()) // (An empty error is no reason: say so.)
          return caf::make_error(pool_errc::job_failed,
                                 std::string{"empty error"},
                                 std::string{"the job returned an empty "
                                             "caf::error instead of a reason"});
        return std::move(res.error());
      }
      return pack(std::move(*res));
    } else {
      return pack(call_with(fn, payload, args{}, idx));
    }
  } catch (resource_broken&) {
    throw; // The worker stops; see worker_actor.
  } catch (discard_job& ex) {
    return discard(ex.what());
  } catch (snooze_job& ex) {
    return snooze(ex.delay());
  } catch (std::exception& ex) {
    return caf::make_error(pool_errc::job_failed, std::string{"exception"},
                           std::string{ex.what()});
  } catch (...) {
    return caf::make_error(pool_errc::job_failed, std::string{"exception"},
                           std::string{"unknown exception type"});
  }
}

} // namespace detail

/// State of a worker: where it is in its state machine, and its two
/// behaviors (kept here, not in each other's closures, so nothing leaks).
struct worker_state {
  static inline const char* name = "pool.worker";
  worker_phase phase = worker_phase::sleeping;
  /// Who sent the last batch: where the reports of its attempts go when
  /// the worker sent the rest of it, or a batch sent ahead, to itself. (A
  /// weak handle: a worker keeps no shepherd alive.)
  caf::actor_addr batch_from;
  /// Whether the rest of that batch waits in the mailbox (sent to itself):
  /// a batch sent ahead goes behind it.
  bool rest_pending = false;
  /// A job that runs longer than this is reported to the shepherd as
  /// `(status_rep, run time)` before its outcome (0 = never). Set for
  /// cooperative workers: they measure on their own thread, so time spent
  /// waiting for a scheduler thread does not count.
  caf::timespan slow_after{0};
  /// When the running job started (only kept with `slow_after`).
  std::chrono::steady_clock::time_point job_started;
  caf::behavior sleeping;
  caf::behavior waiting;
};

namespace detail {

/// The worker state machine around `fn`, whose inputs and result `Traits`
/// names. See `worker_actor`.
template <class Traits, class F>
caf::behavior worker_behavior(caf::stateful_actor<worker_state>* self, F f) {
  // One function object for every handler: a stateful job keeps one state.
  auto fn = std::make_shared<F>(std::move(f));
  // Runs one job. A broken resource comes back as `broken` (and as the
  // outcome): the worker reports it, then stops, and the shepherd replaces
  // it. With a slow-job threshold, a job's time is measured from
  // `job_started` (set as a handler starts, and by each job's end for the
  // next job of a batch): one clock read per job.
  auto attempt = [self, fn](const caf::actor& shepherd, work_record& record,
                            caf::error& broken, auto pack) {
    using result_type = std::invoke_result_t<decltype(pack), caf::unit_t>;
    auto ran = [&] {
      auto& st = self->state;
      if (st.slow_after <= caf::timespan::zero())
        return;
      auto end = std::chrono::steady_clock::now();
      auto took =
          std::chrono::duration_cast<caf::timespan>(end - st.job_started);
      st.job_started = end;
      if (took > st.slow_after)
        self->send(shepherd, status_reply_atom_v, took);
    };
    try {
      job_scope scope{record}; // current_job() while it runs
      auto result = run_job<Traits, decltype(pack)>(*fn, record.payload);
      ran();
      return result;
    } catch (resource_broken& ex) {
      ran();
      broken =
          caf::make_error(pool_errc::resource_broken, std::string{ex.what()});
      return caf::expected<result_type>{broken};
    }
  };
  // Starts the clock of the next job, if jobs are timed.
  auto start_clock = [self] {
    if (self->state.slow_after > caf::timespan::zero())
      self->state.job_started = std::chrono::steady_clock::now();
  };
  // Reports one attempt as `(status_rep, id, result | error)`.
  auto report = [self](const caf::actor& shepherd, const attempt_id& id,
                       caf::expected<caf::message> outcome) {
    if (outcome)
      send_spread(self, shepherd, status_reply_atom_v, id,
                  std::move(*outcome));
    else
      send_spread(self, shepherd, status_reply_atom_v, id,
                  std::move(outcome.error()));
  };
  auto run = [self, attempt, report, start_clock](work_record& record) {
    auto shepherd = caf::actor_cast<caf::actor>(self->current_sender());
    self->state.phase = worker_phase::working;
    start_clock();
    caf::error broken;
    report(shepherd, record.id,
           attempt(shepherd, record, broken, pack_message{}));
    if (broken) {
      self->quit(std::move(broken));
      return;
    }
    self->state.phase = worker_phase::waiting;
    send_spread(self, shepherd, give_me_work_atom_v);
  };
  // A batch: each job in order. Without `each`, all in this handler and
  // reported in one `(status_rep, outcomes)`. With `each`, one job per
  // message: its outcome goes out as `(status_rep, id, ...)` at once, and
  // the rest of the batch comes back to this worker as a message of its
  // own, so an exit (a timeout's kill) takes effect between two jobs.
  // A broken resource ends the batch: the outcomes not yet reported, the
  // broken one last, go in one `(status_rep, outcomes)` (the attempts after
  // it are left out, so the shepherd hands them out again) and the worker
  // stops.
  auto run_batch = [self, attempt, report,
                    start_clock](std::vector<work_record>& batch, bool each) {
    auto& st = self->state;
    if (self->current_sender() != self->ctrl())
      st.batch_from = caf::actor_cast<caf::actor_addr>(self->current_sender());
    auto shepherd = caf::actor_cast<caf::actor>(st.batch_from);
    st.phase = worker_phase::working;
    start_clock();
    auto n = each ? std::min<size_t>(batch.size(), 1) : batch.size();
    auto outcomes = batch_buffers::outcomes(n);
    // The batch's own run time goes with its report: the shepherd sizes
    // batches by it, and time spent in mailboxes or waiting for a thread
    // (a loaded machine) must not shrink them.
    auto began = each ? caf::actor_clock::time_point{} : self->clock().now();
    for (size_t i = 0; i < n; ++i) {
      auto& record = batch[i];
      caf::error broken;
      if (each) {
        auto outcome = attempt(shepherd, record, broken, pack_message{});
        if (broken)
          outcomes.push_back({record.id, caf::message{}, broken, {}});
        else
          report(shepherd, record.id, std::move(outcome));
      } else {
        // The result as its caller's reply: one allocation, not two.
        auto outcome = attempt(shepherd, record, broken, pack_reply{});
        // (Built in place: one move of the result, not two.)
        auto& out = outcomes.emplace_back();
        out.id = record.id;
        if (outcome)
          out.reply = std::move(*outcome);
        else
          out.error = std::move(outcome.error());
      }
      if (broken) {
        self->send(shepherd, status_reply_atom_v, std::move(outcomes));
        self->quit(std::move(broken));
        return;
      }
    }
    if (each && batch.size() > 1) {
      batch.erase(batch.begin());
      self->send(self, work_to_do_atom_v, std::move(batch), true);
      st.rest_pending = true;
      return;
    }
    st.rest_pending = false;
    if (!each)
      send_spread(self, shepherd, status_reply_atom_v, std::move(outcomes),
                  caf::timespan{self->clock().now() - began});
    batch_buffers::give(std::move(batch)); // (for the queue's next batch)
    st.phase = worker_phase::waiting;
    send_spread(self, shepherd, give_me_work_atom_v);
  };
  // A batch sent ahead (docs/protocol.md "Lookahead") runs unless the
  // shepherd withdrew it; behind the rest of a batch reported attempt by
  // attempt, it waits its turn (it goes to the back of the mailbox again).
  auto run_ahead = [self, run_batch](std::vector<work_record>& batch,
                                     bool each, claim_ticket& ticket) {
    if (self->state.rest_pending) {
      // (From the shepherd that sent the batch now running.)
      self->send(self, work_to_do_atom_v, std::move(batch), each,
                 std::move(ticket));
      return;
    }
    if (ticket.take(self->id()))
      run_batch(batch, each);
  };
  self->state.sleeping = caf::behavior{
      [self](wake_up_atom) {
        self->state.phase = worker_phase::waiting;
        self->send(caf::actor_cast<caf::actor>(self->current_sender()),
                   give_me_work_atom_v);
        self->become(self->state.waiting);
      },
      [self, run](work_to_do_atom, work_record& record) {
        // Work while asleep (a shepherd may skip the wake-up): run it, then
        // the worker is waiting like after any attempt.
        run(record);
        self->become(self->state.waiting);
      },
      [self, run_batch](work_to_do_atom, std::vector<work_record>& batch,
                        bool each) {
        run_batch(batch, each);
        self->become(self->state.waiting);
      },
      [self, run_ahead](work_to_do_atom, std::vector<work_record>& batch,
                        bool each, claim_ticket& ticket) {
        run_ahead(batch, each, ticket);
        self->become(self->state.waiting);
      },
      [](go_to_sleep_atom) {},
      [self](left_pool_atom, caf::error& reason) {
        self->quit(std::move(reason)); // Whoever joined it may join another.
      },
  };
  self->state.waiting = caf::behavior{
      [](wake_up_atom) {},
      [run](work_to_do_atom, work_record& record) { run(record); },
      [run_batch](work_to_do_atom, std::vector<work_record>& batch, bool each) {
        run_batch(batch, each);
      },
      [run_ahead](work_to_do_atom, std::vector<work_record>& batch, bool each,
                  claim_ticket& ticket) {
        run_ahead(batch, each, ticket);
      },
      [self](go_to_sleep_atom) {
        self->state.phase = worker_phase::sleeping;
        self->become(self->state.sleeping);
      },
      [self](left_pool_atom, caf::error& reason) {
        self->quit(std::move(reason)); // Whoever joined it may join another.
      },
  };
  return self->state.sleeping;
}

} // namespace detail

/// A worker running `fn` on each `work_to_do`. Starts sleeping; a
/// `wake_up` makes it ask the sender (the shepherd) for work; a `wake_up`
/// while waiting or working changes nothing. Replies go to whoever sent the
/// work, so a worker needs no handle on its shepherd (and keeps none alive).
template <class F>
caf::behavior worker_actor(caf::stateful_actor<worker_state>* self, F fn) {
  return detail::worker_behavior<detail::job_traits<F>>(self, std::move(fn));
}

/// As `worker_actor`, reporting each job that runs longer than `slow_after`
/// (see `worker_state::slow_after`). The pools' cooperative workers.
template <class F>
caf::behavior timed_worker_actor(caf::stateful_actor<worker_state>* self, F fn,
                                 caf::timespan slow_after) {
  self->state.slow_after = slow_after;
  return detail::worker_behavior<detail::job_traits<F>>(self, std::move(fn));
}

/// A worker that owns a resource: `make()` creates it when the worker
/// starts; it is released when the worker stops (its state is destroyed on
/// exit). Each job is `fn(resource, in...)`. A job that throws
/// `pool::resource_broken` stops the worker, releasing the resource; the
/// shepherd's replacement makes a fresh one.
template <class Factory, class F>
caf::behavior resource_worker_actor(caf::stateful_actor<worker_state>* self,
                                    Factory make, F fn,
                                    caf::timespan slow_after) {
  self->state.slow_after = slow_after;
  using resource_type = std::decay_t<decltype(make())>;
  std::shared_ptr<resource_type> resource;
  try {
    resource = std::make_shared<resource_type>(make());
  } catch (std::exception& ex) {
    // (The database is down, say.) The worker stops with the cause; the
    // shepherd logs it, replaces the worker and, past the restart
    // intensity, gives up naming it.
    self->quit(caf::make_error(pool_errc::resource_broken,
                               "the resource factory threw: " +
                                   std::string{ex.what()}));
    return {};
  } catch (...) {
    self->quit(caf::make_error(pool_errc::resource_broken,
                               std::string{"the resource factory threw an "
                                           "unknown exception"}));
    return {};
  }
  auto bound = [resource, fn](auto&&... xs) mutable -> decltype(auto) {
    return fn(*resource, std::forward<decltype(xs)>(xs)...);
  };
  return detail::worker_behavior<detail::resource_job_traits<F>>(
      self, std::move(bound));
}

} // namespace pool
