#pragma once

// A small world around `shepherd_core`, without an actor system: a queue
// (the queue actor's own core, `queue_core`, over a memory_store), workers that follow the
// worker state machine, and the shepherd's own mailbox, each a FIFO. A test
// (or the random model test) decides who takes the next step, so that every
// interleaving of messages can happen. Time is the fake clock.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include <caf/detail/invoke_result_visitor.hpp>
#include <caf/make_message.hpp>

#include <pool/memory_store.hpp>
#include <pool/detail/queue_core.hpp>
#include <pool/detail/shepherd_core.hpp>
#include <pool/type_ids.hpp>

#include "fake_effects.hpp"

namespace pool::test {

struct core_sim {
  /// A message to the shepherd, with who sent it (a worker key number, or
  /// 0 for the test itself).
  struct to_shepherd {
    uint64_t from = 0;
    caf::message msg;
  };

  struct sim_worker {
    uint64_t key = 0;
    worker_phase phase = worker_phase::sleeping;
    std::deque<caf::message> mailbox;
    /// What it runs (a batch in order), not yet reported.
    std::vector<work_record> running;
    /// Reports each attempt of a batch on its own.
    bool each = false;
    /// Got one entry on its own (not a batch): reports it on its own.
    bool single = false;
    bool alive = true;
  };

  /// The queue's effects: its answers go to the shepherd's mailbox, its
  /// notes to itself to its own (after their delay, on the fake clock).
  struct queue_side : queue_effects {
    core_sim* sim = nullptr;
    uint64_t tickets = 0;
    time_point now() override;
    uint64_t hold() override { return ++tickets; }
    void answer(uint64_t ticket, caf::message msg) override;
    void to_self(caf::timespan delay, caf::message msg) override;
    void to_owner(caf::message msg) override;
  };

  fake_effects fx;
  shepherd_core core;
  std::shared_ptr<memory_store> store = std::make_shared<memory_store>();
  queue_side qfx;
  queue_core queue{store, caf::timespan{0}, qfx};
  caf::message_handler queue_handlers = queue.handlers();
  std::deque<caf::message> queue_box;
  /// The queue's notes to itself, by due time.
  std::multimap<caf::actor_clock::time_point, caf::message> queue_timers;
  std::deque<to_shepherd> shepherd_box;
  std::map<uint64_t, sim_worker> workers;
  /// Timers armed, by due time.
  std::multimap<caf::actor_clock::time_point, timer_event> timers;
  /// Outcomes sent to callers of `enqueue`, by operation id.
  std::map<uint64_t, std::vector<caf::message>> outcomes;
  /// Answers through promises (ids of accepted tracked submits, errors).
  std::vector<caf::message> delivered;
  /// Operation id -> the submit's number (its payload).
  std::map<uint64_t, int> accepted;
  size_t seen = 0;

  explicit core_sim(pool_options opts) : core(std::move(opts), false, fx) {
    qfx.sim = this;
    queue.start();
    core.start();
    collect();
  }

  // -- the test's own messages ------------------------------------------------

  /// An `enqueue` of `x` (due after `delay`), into the shepherd's mailbox.
  void enqueue(int x, caf::timespan delay = {}, std::string key = {}) {
    shepherd_box.push_back(
        {0, caf::make_message(enqueue_atom_v, x, delay, std::move(key))});
  }

  /// An `enq_with` of `x` with `opts`, into the shepherd's mailbox.
  void enqueue_with(int x, job_options opts) {
    shepherd_box.push_back(
        {0, caf::make_message(enqueue_with_atom_v, x, std::move(opts))});
  }

  /// Calls `f(key, record)` for every entry a worker starts (receives), in
  /// order, before the worker runs it.
  std::function<void(uint64_t, const std::vector<work_record>&)> on_start;

  /// `(pause)` or `(resume)`, into the shepherd's mailbox.
  void pause(bool on) {
    shepherd_box.push_back({0, on ? caf::make_message(pause_atom_v)
                                  : caf::make_message(resume_atom_v)});
  }

  // -- steps ------------------------------------------------------------------

  /// Handles the shepherd's next message; false if there is none.
  bool shepherd_step();

  /// Handles the queue's next message; false if there is none.
  bool queue_step();

  /// Worker `key` handles its next message; false if it has none.
  bool worker_step(uint64_t key);

  /// Worker `key` finishes its current attempt (or batch): reports it and
  /// asks for more. `fail`: the job returned an error.
  bool finish(uint64_t key, bool fail = false);

  /// Worker `key` dies (its down message goes to the shepherd).
  void kill(uint64_t key);

  /// Moves the clock and queues the timers that came due.
  void advance(caf::timespan d);

  /// Runs every mailbox until nothing moves (jobs stay running).
  void settle();

  /// Whether anything is queued anywhere.
  bool busy() const;

  /// Keys of live workers in `phase` as the workers themselves see it.
  std::vector<uint64_t> in_phase(worker_phase phase) const;

private:
  /// Routes the effects recorded since the last call.
  void collect();

  void to_worker(uint64_t key, caf::message msg);
};

// -- implementation
// -------------------------------------------------------------

namespace sim_msg {

/// The queue's answers travel through the shepherd's mailbox like any other.
constexpr uint64_t from_queue = ~uint64_t{0};
using down_atom = caf::atom_constant<caf::atom("sim_down")>;

} // namespace sim_msg

inline bool core_sim::busy() const {
  if (!queue_box.empty() || !shepherd_box.empty())
    return true;
  for (auto& kvp : workers)
    if (kvp.second.alive && kvp.second.phase != worker_phase::working &&
        !kvp.second.mailbox.empty())
      return true;
  return false;
}

inline std::vector<uint64_t> core_sim::in_phase(worker_phase phase) const {
  std::vector<uint64_t> result;
  for (auto& kvp : workers)
    if (kvp.second.alive && kvp.second.phase == phase)
      result.push_back(kvp.first);
  return result;
}

inline void core_sim::collect() {
  for (; seen < fx.log_.size(); ++seen) {
    auto& e = fx.log_[seen];
    if (e.what == "queue") {
      queue_box.push_back(e.msg);
    } else if (e.what == "worker") {
      to_worker(e.who, e.msg);
    } else if (e.what == "tell") {
      outcomes[e.msg.get_as<uint64_t>(1)].push_back(e.msg);
    } else if (e.what == "deliver") {
      delivered.push_back(e.msg);
      if (e.msg.match_elements<uint64_t>()) {
        auto id = e.msg.get_as<uint64_t>(0);
        if (auto op = core.table().find(id))
          accepted.emplace(id, op->payload.get_as<int>(0));
      }
    } else if (e.what == "stop" || e.what == "kill") {
      // It terminates; the shepherd monitors it.
      auto& w = workers[e.who];
      if (w.alive)
        shepherd_box.push_back(
            {e.who, caf::make_message(sim_msg::down_atom{})});
      w.alive = false;
    }
  }
  for (auto& t : fx.timers)
    timers.emplace(fx.clock + t.first, t.second);
  fx.timers.clear();
  for (uint64_t k = 1; k <= fx.spawned; ++k)
    if (workers.count(k) == 0)
      workers[k].key = k;
}

inline void core_sim::to_worker(uint64_t key, caf::message msg) {
  auto i = workers.find(key);
  if (i != workers.end() && i->second.alive)
    i->second.mailbox.push_back(std::move(msg));
}

inline core_sim::queue_side::time_point core_sim::queue_side::now() {
  return sim->fx.clock;
}

inline void core_sim::queue_side::answer(uint64_t, caf::message msg) {
  sim->shepherd_box.push_back({sim_msg::from_queue, std::move(msg)});
}

inline void core_sim::queue_side::to_self(caf::timespan delay,
                                          caf::message msg) {
  if (delay <= caf::timespan::zero())
    sim->queue_box.push_back(std::move(msg));
  else
    sim->queue_timers.emplace(sim->fx.clock + delay, std::move(msg));
}

inline void core_sim::queue_side::to_owner(caf::message msg) {
  sim->shepherd_box.push_back({sim_msg::from_queue, std::move(msg)});
}

namespace sim_msg {

/// What a queue handler returned: an answer now, or nothing (a note to
/// itself, or an answer held for a commit: `queue_side::answer` sends it).
struct queue_answer : caf::detail::invoke_result_visitor {
  std::optional<caf::message> msg;
  void operator()() override {}
  void operator()(caf::error& x) override { msg = caf::make_message(x); }
  void operator()(caf::message& x) override {
    if (!x.empty())
      msg = std::move(x);
  }
  void operator()(const caf::none_t&) override {}
};

} // namespace sim_msg

inline bool core_sim::queue_step() {
  if (queue_box.empty())
    return false;
  auto msg = std::move(queue_box.front());
  queue_box.pop_front();
  sim_msg::queue_answer res;
  if (queue_handlers(res, msg) == caf::match_case::no_match)
    throw std::logic_error("the queue has no handler for "
                           + caf::to_string(msg));
  if (res.msg)
    shepherd_box.push_back({sim_msg::from_queue, std::move(*res.msg)});
  return true;
}

inline bool core_sim::shepherd_step() {
  if (shepherd_box.empty())
    return false;
  auto next = std::move(shepherd_box.front());
  shepherd_box.pop_front();
  auto& msg = next.msg;
  auto key = fake_effects::fake_key(next.from);
  if (next.from == sim_msg::from_queue) {
    if (msg.match_elements<queue_counts>())
      core.on_counts(msg.get_as<queue_counts>(0));
    else if (msg.match_elements<std::vector<work_record>>())
      core.on_work(msg.get_as<std::vector<work_record>>(0));
    else if (msg.match_elements<no_work_atom, caf::timespan>())
      core.on_no_work(msg.get_as<caf::timespan>(1));
  } else if (msg.match_elements<enqueue_atom, int, caf::timespan,
                                std::string>()) {
    submission sub;
    sub.payload = caf::make_message(msg.get_as<int>(1));
    sub.delay = msg.get_as<caf::timespan>(2);
    sub.key = msg.get_as<std::string>(3);
    sub.tracked = true;
    core.submit(std::move(sub));
  } else if (msg.match_elements<enqueue_with_atom, int, job_options>()) {
    auto& opts = msg.get_as<job_options>(2);
    submission sub;
    sub.payload = caf::make_message(msg.get_as<int>(1));
    sub.delay = opts.delay();
    sub.key = opts.unique_key();
    sub.policy = policy_of(opts);
    sub.concurrency_key = opts.concurrency_key();
    sub.tracked = true;
    core.submit(std::move(sub));
  } else if (msg.match_elements<give_me_work_atom>()) {
    core.give_work(key);
  } else if (msg.match_elements<status_reply_atom, attempt_id,
                                caf::message>()) {
    auto result = msg.get_as<caf::message>(2);
    core.status(key, msg.get_as<attempt_id>(1), &result, nullptr);
  } else if (msg.match_elements<status_reply_atom, attempt_id, caf::error>()) {
    auto err = msg.get_as<caf::error>(2);
    core.status(key, msg.get_as<attempt_id>(1), nullptr, &err);
  } else if (msg.match_elements<status_reply_atom,
                                std::vector<attempt_outcome>>()) {
    auto outcomes = msg.get_as<std::vector<attempt_outcome>>(1);
    core.status(key, outcomes, std::nullopt);
  } else if (msg.match_elements<status_reply_atom,
                                std::vector<attempt_outcome>,
                                caf::timespan>()) {
    auto outcomes = msg.get_as<std::vector<attempt_outcome>>(1);
    core.status(key, outcomes, msg.get_as<caf::timespan>(2));
  } else if (msg.match_elements<timer_event>()) {
    core.timer(msg.get_as<timer_event>(0));
  } else if (msg.match_elements<sim_msg::down_atom>()) {
    core.down(caf::actor_addr{}, key, caf::make_error(caf::exit_reason::kill));
  } else if (msg.match_elements<cancel_op_atom, uint64_t>()) {
    static_cast<void>(core.cancel(msg.get_as<uint64_t>(1)));
  } else if (msg.match_elements<resize_atom, uint64_t>()) {
    core.resize(msg.get_as<uint64_t>(1), caf::response_promise{});
  } else if (msg.match_elements<pause_atom>()) {
    core.pause();
  } else if (msg.match_elements<resume_atom>()) {
    core.resume();
  } else if (msg.match_elements<drain_atom>()) {
    core.drain(std::nullopt, caf::response_promise{});
  }
  collect();
  return true;
}

inline bool core_sim::worker_step(uint64_t key) {
  auto& w = workers[key];
  if (!w.alive || w.mailbox.empty() || w.phase == worker_phase::working)
    return false;
  auto msg = std::move(w.mailbox.front());
  w.mailbox.pop_front();
  auto run = [&](std::vector<work_record> batch, bool each,
                 bool single = false) {
    if (on_start)
      on_start(key, batch);
    w.running = std::move(batch);
    w.each = each;
    w.single = single;
    w.phase = worker_phase::working;
  };
  if (msg.match_elements<wake_up_atom>()) {
    if (w.phase == worker_phase::sleeping) {
      w.phase = worker_phase::waiting;
      shepherd_box.push_back({key, caf::make_message(give_me_work_atom_v)});
    }
  } else if (msg.match_elements<work_to_do_atom, work_record>()) {
    run({msg.get_as<work_record>(1)}, false, true);
  } else if (msg.match_elements<work_to_do_atom, std::vector<work_record>,
                                bool>()) {
    run(msg.get_as<std::vector<work_record>>(1), msg.get_as<bool>(2));
  } else if (msg.match_elements<work_to_do_atom, std::vector<work_record>,
                                bool, claim_ticket>()) {
    // Sent ahead: run unless withdrawn.
    auto ticket = msg.get_as<claim_ticket>(3);
    auto id = reinterpret_cast<uintptr_t>(fake_effects::fake_key(key));
    if (ticket.take(id))
      run(msg.get_as<std::vector<work_record>>(1), msg.get_as<bool>(2));
  } else if (msg.match_elements<go_to_sleep_atom>()) {
    if (w.phase == worker_phase::waiting)
      w.phase = worker_phase::sleeping;
  } else if (msg.match_elements<left_pool_atom, caf::error>()) {
    w.alive = false;
  }
  return true;
}

inline bool core_sim::finish(uint64_t key, bool fail) {
  auto& w = workers[key];
  if (!w.alive || w.phase != worker_phase::working || w.running.empty())
    return false;
  auto outcome_of = [&](const work_record& x) {
    attempt_outcome out{x.id, {}, {}, {}};
    if (fail)
      out.error = caf::make_error(pool_errc::job_failed, std::string{"sim"});
    else
      out.result = caf::make_message(x.payload.get_as<int>(0) * 2);
    return out;
  };
  auto report_one = [&](const work_record& x) {
    auto out = outcome_of(x);
    if (out.failed())
      shepherd_box.push_back(
          {key, caf::make_message(status_reply_atom_v, x.id, out.error)});
    else
      shepherd_box.push_back(
          {key, caf::make_message(status_reply_atom_v, x.id, out.result)});
  };
  if (w.single || w.each) {
    report_one(w.running.front());
    w.running.erase(w.running.begin());
  } else {
    // As the pool's workers report a batch: with the time its jobs ran.
    std::vector<attempt_outcome> all;
    for (auto& x : w.running)
      all.push_back(outcome_of(x));
    shepherd_box.push_back(
        {key, caf::make_message(status_reply_atom_v, std::move(all),
                                caf::timespan{1000})});
    w.running.clear();
  }
  if (w.running.empty()) {
    w.phase = worker_phase::waiting;
    shepherd_box.push_back({key, caf::make_message(give_me_work_atom_v)});
  }
  return true;
}

inline void core_sim::kill(uint64_t key) {
  auto& w = workers[key];
  if (!w.alive)
    return;
  w.alive = false;
  w.mailbox.clear();
  w.running.clear();
  shepherd_box.push_back({key, caf::make_message(sim_msg::down_atom{})});
}

inline void core_sim::advance(caf::timespan d) {
  fx.clock += d;
  while (!timers.empty() && timers.begin()->first <= fx.clock) {
    shepherd_box.push_back({0, caf::make_message(timers.begin()->second)});
    timers.erase(timers.begin());
  }
  while (!queue_timers.empty() && queue_timers.begin()->first <= fx.clock) {
    queue_box.push_back(std::move(queue_timers.begin()->second));
    queue_timers.erase(queue_timers.begin());
  }
}

inline void core_sim::settle() {
  advance(caf::timespan{0});
  for (int guard = 0; guard < 100000 && busy(); ++guard) {
    advance(caf::timespan{0});
    while (shepherd_step())
      ;
    while (queue_step())
      ;
    for (auto& kvp : workers)
      while (worker_step(kvp.first))
        ;
  }
}

} // namespace pool::test
