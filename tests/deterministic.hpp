#pragma once

// A fixture running CAF's testing scheduler: no threads, simulated time.
// `run()` executes every pending message one at a time and returns what was
// delivered, in order, so tests can assert on the protocol itself.

#include <algorithm>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <caf/all.hpp>
#include <pool/all.hpp>
#include <pool/detail/shepherd_effects.hpp>

namespace pool::test {

struct testing_config : caf::actor_system_config {
  testing_config() {
    set("scheduler.policy", caf::atom("testing"));
    set("logger.verbosity", caf::atom("quiet"));
    pool::configure(*this);
  }
};

/// One delivered message: receiver, sender and the leading atom (empty
/// when the message does not start with an atom, e.g. a plain reply).
struct event {
  caf::strong_actor_ptr from;
  caf::actor_addr to;
  std::string tag;
  caf::message content;
};

struct deterministic {
  testing_config cfg;
  caf::actor_system sys{cfg};
  caf::scheduler::test_coordinator& sched =
      dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  std::unique_ptr<caf::scoped_actor> self_ptr =
      std::make_unique<caf::scoped_actor>(sys);
  /// Plays the caller (and, where a test says so, a joined worker).
  caf::scoped_actor& self = *self_ptr;

  /// While not empty, `run()` leaves actors of this name alone (e.g.
  /// `"pool.worker"`): their messages wait, as if they were stuck in a job.
  std::string frozen;

  /// With `frozen`: those actors still take every message but `work_to_do`
  /// (woken, they ask for work; they never start it).
  bool frozen_work_only = false;

  /// Nothing runs by itself under the testing scheduler: drain every
  /// message and timer so that all actors can terminate before the actor
  /// system (which waits for them) is destroyed.
  ~deterministic() {
    frozen.clear();
    drain();
    self_ptr.reset();
    drain();
  }

  void drain() {
    for (int i = 0; i < 1000; ++i) {
      auto ran = !run().empty();
      if (sched.has_pending_timeout())
        sched.trigger_timeouts();
      else if (!ran && !sched.has_job())
        break;
    }
  }

  /// Runs until no message is pending (for actors that are not `frozen`);
  /// returns every delivered message.
  std::vector<event> run() {
    std::vector<event> result;
    while (next_runnable()) {
      auto& next = sched.next_job<caf::scheduled_actor>();
      if (auto ptr = next.mailbox().peek()) {
        event ev;
        ev.from = ptr->sender;
        ev.to = next.address();
        ev.content = ptr->copy_content_to_message();
        if (ev.content.match_element<caf::atom_value>(0))
          ev.tag = caf::to_string(ev.content.get_as<caf::atom_value>(0));
        else if (ev.content.match_elements<pool::timer_event>())
          ev.tag = to_string(ev.content.get_as<pool::timer_event>(0).kind);
        result.push_back(std::move(ev));
      }
      sched.run_once();
    }
    return result;
  }

  /// Moves the first job of an actor that is not frozen to the front.
  bool next_runnable() {
    auto& jobs = sched.jobs;
    auto i = std::find_if(jobs.begin(), jobs.end(), [&](caf::resumable* job) {
      auto actor = dynamic_cast<caf::scheduled_actor*>(job);
      if (frozen.empty() || actor == nullptr || frozen != actor->name())
        return true;
      if (!frozen_work_only)
        return false;
      auto next = actor->mailbox().peek();
      return next != nullptr && !is_work(next->content());
    });
    if (i == jobs.end())
      return false;
    auto job = *i;
    jobs.erase(i);
    jobs.push_front(job);
    return true;
  }

  static bool is_work(const caf::type_erased_tuple& content) {
    return content.match_element<caf::atom_value>(0) &&
           content.get_as<caf::atom_value>(0) == pool::work_to_do_atom::value;
  }

  /// Advances simulated time by `d`, then runs; returns what was delivered.
  std::vector<event> advance(caf::timespan d) {
    sched.advance_time(d);
    return run();
  }

  /// Spawns a pool of `workers` cooperative workers running `fn`.
  template <class F>
  caf::actor spawn(F fn, size_t workers) {
    auto pool = pool::spawn_pool(sys, std::move(fn),
                                 pool::pool_options{}.workers(workers));
    REQUIRE_MESSAGE(pool, caf::to_string(pool.error()));
    return *pool;
  }

  /// Spawns a pool of cooperative workers running `fn` with `opts`.
  template <class F>
  caf::actor spawn_with(F fn, pool::pool_options opts) {
    auto pool = pool::spawn_pool(sys, std::move(fn), std::move(opts));
    REQUIRE_MESSAGE(pool, caf::to_string(pool.error()));
    return *pool;
  }

  /// As `spawn`, without the short cuts: the pattern's plain sequence.
  template <class F>
  caf::actor spawn_plain(F fn, size_t workers) {
    auto pool = pool::spawn_pool(
        sys, std::move(fn),
        pool::pool_options{}.workers(workers).short_cuts(false));
    REQUIRE_MESSAGE(pool, caf::to_string(pool.error()));
    return *pool;
  }

  /// Adds the scoped actor to `pool` as a worker speaking the protocol.
  void join_as_worker(const caf::actor& pool) {
    self->send(pool, pool::join_pool_atom_v, caf::actor_cast<caf::actor>(self));
    run();
  }

  /// As a joined worker that was just woken: asks for work and returns
  /// the attempt it was given (without answering it).
  pool::work_record take_work(const caf::actor& pool) {
    self->receive([](pool::wake_up_atom) {});
    self->send(pool, pool::give_me_work_atom_v);
    run();
    pool::work_record result;
    self->receive([&](pool::work_to_do_atom, pool::work_record& x) {
      result = std::move(x);
    });
    return result;
  }

  /// Asks `pool` for its stats and runs until the answer is there.
  pool::pool_stats stats_of(const caf::actor& pool) {
    pool::pool_stats result;
    auto query = self->request(pool, caf::infinite, pool::pool_stats_atom_v);
    run();
    query.receive([&](pool::pool_stats& st) { result = st; },
                  [](caf::error& err) { FAIL(pool::describe(err)); });
    return result;
  }

  /// Sends `msg` to `dest` as a request, runs, and returns the error of
  /// the reply: `caf::none` for an empty reply. An error reply without a
  /// code is reported as `sec::unexpected_response`, not as success.
  /// Messages the request caused to the scoped actor before the reply (e.g.
  /// `op_failed` of a cancelled operation) stay in its mailbox.
  caf::error ask(const caf::actor& dest, caf::message msg) {
    caf::error result;
    auto answer = self->request(dest, caf::infinite, std::move(msg));
    run();
    answer.receive([] {},
                   [&](caf::error& err) {
                     result =
                         err ? std::move(err)
                             : caf::make_error(caf::sec::unexpected_response);
                   });
    return result;
  }

  /// Enqueues the inputs 0 .. n - 1 one at a time, running after each,
  /// and returns their operation ids, in order.
  std::vector<uint64_t> enqueue_ids(const caf::actor& pool, int n) {
    std::vector<uint64_t> ids;
    for (int i = 0; i < n; ++i) {
      auto answer = self->request(pool, caf::infinite, pool::enqueue_atom_v, i);
      run();
      answer.receive([&](uint64_t id) { ids.push_back(id); },
                     [](caf::error& err) { FAIL(pool::describe(err)); });
    }
    return ids;
  }

  /// Number of messages waiting in the scoped actor's mailbox.
  size_t replies() {
    return self->mailbox().size();
  }

  /// Leading atoms of `events`, in order.
  static std::vector<std::string> tags(const std::vector<event>& events) {
    std::vector<std::string> result;
    for (auto& ev : events)
      if (!ev.tag.empty())
        result.push_back(ev.tag);
    return result;
  }

  static size_t count(const std::vector<event>& events, const char* tag) {
    size_t n = 0;
    for (auto& ev : events)
      n += ev.tag == tag ? 1 : 0;
    return n;
  }
};

/// Receives the outcome of one `submit` request of a pool of `int`: the
/// int, or the error.
inline caf::expected<int> outcome_of(deterministic& t) {
  caf::expected<int> result{caf::error{}};
  t.self->receive([&](int x) { result = x; },
                  [&](caf::error& err) { result = std::move(err); });
  return result;
}

/// Receives up to `n` integer replies that are there now, in the order
/// they arrived.
inline std::vector<int> results(caf::scoped_actor& self, size_t n) {
  using namespace std::chrono_literals;
  std::vector<int> result;
  for (size_t i = 0; i < n; ++i)
    self->receive([&](int y) { result.push_back(y); },
                  [&](caf::error& err) { FAIL(pool::describe(err)); },
                  caf::after(0s) >> [] {});
  return result;
}

/// 2 * x for x in `from` .. `to - 1`: what a doubling job answers.
inline std::vector<int> doubled(int from, int to) {
  std::vector<int> result;
  for (int x = from; x < to; ++x)
    result.push_back(2 * x);
  return result;
}

} // namespace pool::test
