// The shepherd actor: turns messages into calls of `shepherd_core` and
// carries out what the core decides (docs/design.md). It keeps what only an
// actor can hold: the queue actor, the subscriber fan-out, timers, monitors
// and the reference that keeps a pool with waiting callers alive.
#include "pool/shepherd.hpp"

#include <algorithm>
#include <vector>

#include <caf/event_based_actor.hpp>
#include <caf/message_view.hpp>
#include <caf/result.hpp>
#include <caf/send.hpp>

#include "pool/batch_buffers.hpp"
#include "pool/queue.hpp"
#include "pool/detail/queue_link.hpp"
#include "pool/detail/shepherd_core.hpp"
#include "pool/spread.hpp"
#include "shepherd_jobs.hpp"
#include "subscribers.hpp"

namespace pool {

namespace {

class shepherd_actor final : public caf::event_based_actor,
                             private shepherd_effects {
public:
  shepherd_actor(caf::actor_config& actor_cfg, shepherd_config cfg)
      : caf::event_based_actor(actor_cfg), cfg_(std::move(cfg)),
        log_(cfg_.options.log()), clock_(clock()),
        core_(cfg_.options, cfg_.store->durable(), *this) {
    // nop
  }

  const char* name() const override {
    return "pool.shepherd";
  }

  caf::behavior make_behavior() override;

  void on_exit() override {
    // Every pending caller hears once why; nothing the pool spawned outlives
    // it. (When the pool became unreachable, no strong reference to it may
    // be made here: outcomes go out as anonymous messages then.)
    terminating_ = true;
    caf::error reason = core_.quit_reason();
    if (!reason)
      reason = fail_state();
    if (!reason && !quit_called_)
      reason = caf::make_error(caf::exit_reason::unreachable);
    core_.terminate(reason);
    if (queue_)
      caf::anon_send_exit(queue_, caf::exit_reason::user_shutdown);
    queue_ = nullptr;
    // A durable store has one owner: a stopped pool lets go of it now, not
    // when pending timeouts release this object.
    cfg_.store = nullptr;
    subscribers_.clear();
    keep_alive_ = nullptr;
    caf::event_based_actor::on_exit();
  }

private:
  using key_type = caf::actor_control_block*;

  /// Whoever sent the message being handled.
  const void* sender_key() {
    return current_sender().get();
  }

  bool from_self() {
    return current_sender() == ctrl();
  }

  /// Whether a reported result is the job's `Out`: checked for joined
  /// workers (the pool's own report what the job returned).
  bool result_ok(const caf::message& result) {
    if (!cfg_.result_ok)
      return true;
    auto worker = core_.roster().find(sender_key());
    auto slot = core_.roster().get(worker);
    return slot == nullptr || !slot->joined || cfg_.result_ok(result);
  }

  bool from_queue() {
    return queue_ && current_sender() == caf::actor_cast<key_type>(queue_);
  }

  void spawn_queue() {
    cfg_.store->set_priority_aging(cfg_.options.key_flow().priority_aging());
    if (cfg_.options.key_flow().limited())
      cfg_.store->set_key_limits(cfg_.options.key_flow());
    queue_ = spawn(queue_actor, cfg_.store, cfg_.options.commit_interval(),
                   address());
    monitor(queue_);
  }

  caf::result<caf::message> on_submit(caf::message_view& view);

  /// A plain submit's input, from the typed submit handler.
  void on_plain_submit(caf::message&& payload);

  static void plain_submit(void* self, caf::message&& payload) {
    static_cast<shepherd_actor*>(self)->on_plain_submit(std::move(payload));
  }

  void subscribe(caf::actor who, uint32_t mask, caf::response_promise rp);

  void unsubscribe(const caf::actor_addr& who) {
    subscribers_.remove(who);
  }

  // -- shepherd_effects -------------------------------------------------------

  time_point now() const override {
    return clock_.now(); // (Once per submit: no lookup of the clock.)
  }

  void to_queue(caf::message msg) override {
    send(queue_, std::move(msg));
  }

  void to_worker(const worker_slot& worker, caf::message msg) override {
    send_spread(this, worker.handle, std::move(msg));
  }

  void work_to_do(const worker_slot& worker, work_record record) override {
    send_spread(this, worker.handle, work_to_do_atom_v, std::move(record));
  }

  void work_batch(const worker_slot& worker, std::vector<work_record> batch,
                  bool each) override {
    send_spread(this, worker.handle, work_to_do_atom_v, std::move(batch),
                each);
  }

  void go_to_sleep(const worker_slot& worker) override {
    send_spread(this, worker.handle, go_to_sleep_atom_v);
  }

  worker_handle spawn_worker() override {
    auto worker = cfg_.spawn_worker(home_system());
    monitor(worker);
    auto key = caf::actor_cast<key_type>(worker);
    return worker_handle{std::move(worker), key};
  }

  void watch_worker(const caf::actor& worker) override {
    monitor(worker);
  }

  void stop_worker(const worker_handle& who, bool kill) override {
    auto& worker = who.actor;
    if (terminating_) {
      caf::anon_send_exit(worker, kill ? caf::exit_reason::kill
                                       : caf::exit_reason::user_shutdown);
    } else if (kill) {
      // Urgent: a worker running a batch attempt by attempt stops before
      // its next attempt, which the shepherd hands out again.
      worker->eq_impl(caf::make_message_id(caf::message_priority::high), ctrl(),
                      context(),
                      caf::exit_msg{address(), caf::exit_reason::kill});
    } else {
      send_exit(worker, caf::exit_reason::user_shutdown);
    }
  }

  void respond(const reply_to& to, caf::message&& msg) override {
    // What a response promise does, without making one.
    respond(to, prepared_reply{caf::make_mailbox_element(
                  nullptr, caf::make_message_id(), {}, std::move(msg))});
  }

  void respond(const reply_to& to, prepared_reply&& reply) override {
    // A worker's element as it is: no message of its own for the result.
    if (!to.source)
      return;
    auto element = reply.take();
    element->sender = keep_alive_
                          ? keep_alive_
                          : caf::actor_cast<caf::strong_actor_ptr>(this);
    element->mid = to.id.response_id();
    to.source->get()->enqueue(std::move(element), context());
  }

  void deliver(caf::response_promise& promise, caf::message msg) override {
    if (promise.pending())
      promise.deliver(std::move(msg));
  }

  void tell(const caf::strong_actor_ptr& to, caf::message msg) override {
    if (terminating_)
      caf::anon_send(caf::actor_cast<caf::actor>(to), std::move(msg));
    else
      send(caf::actor_cast<caf::actor>(to), std::move(msg));
  }

  void watch_caller(const caf::actor_addr& caller, bool on) override {
    if (on) {
      monitor(caf::actor_cast<caf::actor>(caller));
      return;
    }
    // CAF's demonitor removes every monitor on that actor: keep it while the
    // actor is also a subscriber or a worker.
    auto key = caf::actor_cast<key_type>(caller);
    if (!subscribers_.contains(caller) && !core_.roster().find(key))
      demonitor(caller);
  }

  void keep_alive(bool on) override {
    // A pool with requests to answer stays alive, whoever else still holds
    // its handle.
    keep_alive_ = on ? caf::actor_cast<caf::strong_actor_ptr>(this) : nullptr;
  }

  void schedule(caf::timespan delay, timer_event ev) override {
    if (delay <= caf::timespan::zero())
      send(this, ev);
    else
      delayed_send(this, delay, ev);
  }

  bool wants(event_kind kind) const override {
    return subscribers_.wants(kind);
  }

  void publish(pool_event ev) override {
    subscribers_.each(ev.kind, [&](const caf::actor& x) { send(x, ev); });
  }

  void log(log_level level, const std::string& text) override {
    if (!log_)
      return;
    try {
      log_(level, cfg_.options.name(), text);
    } catch (...) {
      // A failing log hook must not take the pool down.
    }
  }

  void quit(caf::error reason) override {
    quit_called_ = true;
    caf::event_based_actor::quit(std::move(reason));
  }

  shepherd_config cfg_;
  log_hook log_;
  caf::actor_clock& clock_;
  shepherd_core core_;
  caf::actor queue_;
  subscriber_list subscribers_;
  /// Holds the shepherd while a caller waits for a response.
  caf::strong_actor_ptr keep_alive_;
  bool quit_called_ = false;
  bool terminating_ = false;
};

caf::result<caf::message> shepherd_actor::on_submit(caf::message_view& view) {
  // Submits carry payloads of the pool's input type, which the type-erased
  // shepherd cannot name in a handler signature: they arrive here.
  auto& content = view.content();
  // The payload: the elements after the first `skip`, moved into a compact
  // message of its own (or, if they are not the pool's input, as they came,
  // for the error).
  auto payload = [&](size_t skip) {
    if (auto compact = cfg_.repack(content, skip))
      return std::move(*compact);
    return view.move_content_to_message().drop(skip);
  };
  submission sub;
  auto skip = read_submit_header(content, sub);
  if (!skip)
    return std::move(skip.error());
  sub.payload = payload(*skip);
  if (!cfg_.accepts(sub.payload))
    return wrong_input_type_error(cfg_.input_type, sub.payload);
  sub.sender = current_sender();
  sub.promise = make_response_promise();
  core_.submit(std::move(sub));
  return caf::delegated<caf::message>{};
}

void shepherd_actor::on_plain_submit(caf::message&& payload) {
  auto& elem = *current_mailbox_element();
  if (elem.stages.empty() && !elem.mid.is_answered() && core_.takes_plain()) {
    // Answered later with the outcome, from the caller's address and the
    // request's id (what a response promise would keep, without making
    // one).
    reply_to caller{elem.sender, elem.mid};
    elem.mid.mark_as_answered();
    core_.submit_plain(std::move(caller), std::move(payload));
    return;
  }
  submission sub;
  sub.payload = std::move(payload);
  sub.sender = current_sender();
  sub.promise = make_response_promise();
  core_.submit(std::move(sub));
}

void shepherd_actor::subscribe(caf::actor who, uint32_t mask,
                               caf::response_promise rp) {
  if (!who) {
    rp.deliver(caf::make_error(pool_errc::unexpected_message,
                               std::string{"pool_sub with an invalid actor"}));
    return;
  }
  if (mask == 0 || (mask & ~event_mask::all) != 0) {
    rp.deliver(caf::make_error(
        pool_errc::invalid_option, std::string{"mask"},
        "must name at least one event kind and no unknown ones (mask " +
            std::to_string(mask) + ")"));
    return;
  }
  if (subscribers_.add(who, mask))
    monitor(who);
  rp.deliver(caf::unit);
}

caf::behavior shepherd_actor::make_behavior() {
  if (cfg_.store->durable())
    core_.adopt(*cfg_.store); // before the queue actor uses the store
  spawn_queue();
  core_.start();
  set_down_handler([this](caf::down_msg& msg) {
    if (queue_ && msg.source == queue_.address()) {
      if (core_.queue_lost(msg.reason)) {
        spawn_queue();
        core_.queue_restarted();
      }
      return;
    }
    unsubscribe(msg.source); // (It may be a worker or a caller, too.)
    core_.down(msg.source, caf::actor_cast<key_type>(msg.source), msg.reason);
  });
  set_error_handler([this](caf::scheduled_actor*, caf::error& err) {
    if (from_queue())
      core_.on_queue_error(err);
  });
  set_default_handler([this](caf::scheduled_actor*, caf::message_view& view) {
    return on_submit(view);
  });
  caf::message_handler submits;
  if (cfg_.submit_handler)
    submits = cfg_.submit_handler(submit_sink{this, plain_submit});
  return submits.or_else(
      // -- workers
      [this](give_me_work_atom) { core_.give_work(sender_key()); },
      [this](status_reply_atom, const attempt_id& id, caf::message& result) {
        if (!result_ok(result)) {
          auto err = wrong_result_type_error("a worker's status_reply",
                                             cfg_.result_type, result);
          core_.status(sender_key(), id, nullptr, &err);
          return;
        }
        core_.status(sender_key(), id, &result, nullptr);
      },
      [this](status_reply_atom, const attempt_id& id, caf::error& failure) {
        core_.status(sender_key(), id, nullptr, &failure);
      },
      [this](status_reply_atom, std::vector<attempt_outcome>& outcomes,
             caf::timespan ran) {
        core_.status(sender_key(), outcomes, ran);
        batch_buffers::give(std::move(outcomes)); // (for a worker's next)
      },
      [this](status_reply_atom, std::vector<attempt_outcome>& outcomes) {
        core_.status(sender_key(), outcomes, std::nullopt);
      },
      [this](status_reply_atom, caf::timespan ran) {
        core_.slow_job(sender_key(), ran);
      },
      // -- answers from the queue, matched in order (from nobody else); with
      // the workers' reports, the messages of every batch: matched first
      [this](queue_counts& counts) {
        if (from_queue())
          core_.on_counts(counts);
      },
      [this](queue_msg::key_found_atom, uint64_t found) {
        if (from_queue())
          core_.on_key_found(found);
      },
      [this](operation_record& rec) {
        if (from_queue())
          core_.on_record(rec);
      },
      [this](std::vector<work_record>& records) {
        if (from_queue())
          core_.on_work(std::move(records));
      },
      [this](no_work_atom, caf::timespan wait) {
        if (from_queue())
          core_.on_no_work(wait);
      },
      // -- the shepherd's own timers (from nobody else)
      [this](const timer_event& ev) {
        if (from_self())
          core_.timer(ev);
      },
      // -- callers
      [this](pool_stats_atom) { return core_.stats(); },
      [this](pool_metrics_atom) { return core_.metrics(); },
      [this](list_jobs_atom, const job_filter& f) -> caf::result<job_page> {
        return detail::list_jobs(this, core_, queue_, f);
      },
      [this](retry_jobs_atom, const job_filter& f) -> caf::result<jobs_acted> {
        return detail::act_on_jobs(this, core_, queue_, f, false);
      },
      [this](discard_jobs_atom,
             const job_filter& f) -> caf::result<jobs_acted> {
        return detail::act_on_jobs(this, core_, queue_, f, true);
      },
      [this](resize_atom, uint64_t n) -> caf::result<void> {
        core_.resize(n, make_response_promise());
        return caf::delegated<void>{};
      },
      [this](op_status_atom, uint64_t id) -> caf::result<caf::message> {
        core_.op_status(id, make_response_promise());
        return caf::delegated<caf::message>{};
      },
      [this](cancel_op_atom, uint64_t id) -> caf::result<void> {
        if (auto err = core_.cancel(id))
          return err;
        return caf::unit;
      },
      [this](pause_atom) { core_.pause(); },
      [this](expect_total_atom, uint64_t n) { core_.expect_total(n); },
      [this](resume_atom) { core_.resume(); },
      [this](wait_idle_atom) -> caf::result<void> {
        core_.wait_idle(make_response_promise());
        return caf::delegated<void>{};
      },
      [this](drain_atom) -> caf::result<void> {
        core_.drain(std::nullopt, make_response_promise());
        return caf::delegated<void>{};
      },
      [this](drain_atom, caf::timespan deadline) -> caf::result<void> {
        core_.drain(deadline, make_response_promise());
        return caf::delegated<void>{};
      },
      [this](subscribe_atom, caf::actor& who) -> caf::result<void> {
        subscribe(std::move(who), event_mask::all, make_response_promise());
        return caf::delegated<void>{};
      },
      [this](subscribe_atom, caf::actor& who,
             uint32_t mask) -> caf::result<void> {
        subscribe(std::move(who), mask, make_response_promise());
        return caf::delegated<void>{};
      },
      [this](unsubscribe_atom, caf::actor& who) { unsubscribe(who.address()); },
      [this](join_pool_atom, caf::actor& worker) -> caf::result<void> {
        // Neither the pool itself nor its own queue can work for it.
        if (worker == caf::actor_cast<caf::actor>(this) || worker == queue_)
          return caf::make_error(pool_errc::unexpected_message,
                                 std::string{"join_pool with the pool's own "
                                             "shepherd or queue"});
        auto key = caf::actor_cast<key_type>(worker);
        if (auto err = core_.join(worker_handle{std::move(worker), key}))
          return err;
        return caf::unit;
      },
      // -- what a shared store learned, from the queue unasked
      [this](queue_msg::lost_atom, const std::vector<uint64_t>& ops) {
        if (from_queue())
          core_.leases_lost(ops);
      },
      [this](queue_msg::news_atom, bool work,
             const std::vector<uint64_t>& finished, bool missed) {
        if (from_queue())
          core_.store_news(work, finished, missed);
      });
}

} // namespace

caf::actor spawn_shepherd_actor(caf::actor_system& sys, shepherd_config cfg) {
  return sys.spawn<shepherd_actor>(std::move(cfg));
}

} // namespace pool
