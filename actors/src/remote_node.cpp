#include "pool/remote_node.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include <caf/actor_cast.hpp>
#include <caf/after.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "pool/port_guard.hpp"
#include "pool/remote_session.hpp"

namespace pool {

namespace {

std::string exit_text(const caf::error& reason) {
  return reason ? describe_remote(reason) : std::string{"it stopped normally"};
}

/// Joins a pool and runs its attempts on local workers, which it alone
/// talks to: each `node_run` goes to the worker of its slot, each outcome
/// back to the gatekeeper with the session's secret. Class-based so that
/// it can screen exit messages before CAF acts on them (see `consume`).
class node_actor : public caf::event_based_actor {
public:
  node_actor(caf::actor_config& cfg, detail::node_config config,
             caf::actor first_outcome_to)
      : caf::event_based_actor(cfg), cfg_(std::move(config)),
        log_(cfg_.options.log()),
        first_outcome_to_(std::move(first_outcome_to)),
        delay_(cfg_.options.reconnect_initial()) {
    // nop
  }

  const char* name() const override {
    return "pool.node";
  }

  /// Exits are honoured only from local actors that name themselves: a
  /// network peer can send any exit (CAF acts on `kill` before handlers
  /// run) and can forge an anonymous one.
  caf::invoke_message_result consume(caf::mailbox_element& x) override {
    if (x.content().type_token() == caf::make_type_token<caf::exit_msg>() &&
        (x.sender == nullptr || x.sender->node() != system().node())) {
      dropped("an exit message from " + who(x.sender));
      return caf::invoke_message_result::consumed;
    }
    return caf::event_based_actor::consume(x);
  }

  void on_exit() override {
    // Killed (no handler sees `kill`): best effort.
    for (auto& worker : workers_)
      caf::anon_send_exit(worker, caf::exit_reason::kill);
    workers_.clear();
    stopping_.clear();
    gatekeeper_ = nullptr;
  }

  caf::behavior make_behavior() override {
    set_down_handler(
        [this](caf::scheduled_actor*, caf::down_msg& msg) { on_down(msg); });
    set_exit_handler([this](caf::scheduled_actor*, caf::exit_msg& msg) {
      if (!msg.reason || failed_)
        return;
      log(log_level::info,
          "stopping on an exit (" + exit_text(msg.reason) + ")");
      fail_node(std::move(msg.reason));
    });
    set_error_handler([this](caf::scheduled_actor*, caf::error&) {});
    set_default_handler(
        [this](caf::scheduled_actor*,
               caf::message_view&) -> caf::result<caf::message> {
          dropped("an unexpected message from " + who(current_sender()));
          return caf::make_error(caf::sec::unexpected_message);
        });
    try_join();
    return {
        [this](rejoin_atom) {
          if (current_sender() == ctrl())
            try_join();
        },
        [this](node_leave_atom) -> caf::result<void> {
          if (!from_here())
            return caf::make_error(caf::sec::unexpected_message);
          if (leaving_)
            return caf::make_error(caf::sec::runtime_error,
                                   std::string{"already leaving"});
          log(log_level::info, "leaving the pool at " + endpoint());
          leaving_ = make_response_promise();
          auto result = *leaving_;
          say_bye();
          stop_workers();
          finish();
          return result;
        },
        [this](node_run_atom, std::string& secret, uint32_t slot,
               work_record& record) { run(secret, slot, record); },
        [this](node_alive_atom) {
          if (current_sender() == ctrl())
            heartbeat();
        },
        [this](node_bye_atom, std::string& secret) {
          if (!from_pool(secret))
            return;
          log(log_level::warning, "the pool at " + endpoint() +
                                      " ended this node's session, rejoining");
          demonitor(gatekeeper_);
          gatekeeper_ = nullptr;
          secret_.clear();
          stop_workers();
          lost_since_ = clock().now();
          retry_later();
        },
        [this](node_drop_atom, std::string& secret, uint32_t slot) {
          if (!from_pool(secret) || slot >= workers_.size())
            return;
          log(log_level::warning, "attempt timed out on worker " +
                                      std::to_string(slot) + ", replacing it");
          replace_worker(slot);
        },
        [this](status_reply_atom, attempt_id& id, caf::message& result) {
          report(id, std::move(result));
        },
        [this](status_reply_atom, attempt_id& id, caf::error& err) {
          report(id, std::move(err));
        },
        [](give_me_work_atom) {
          // A worker is free again; work comes from the pool.
        },
    };
  }

private:
  void log(log_level level, const std::string& text) {
    if (log_)
      log_(level, cfg_.options.name(), text);
  }

  void dropped(std::string what) {
    if (auto line = limiter_.admit(detail::remote_clock::now(),
                                   "dropped " + std::move(what)))
      log(log_level::warning, *line);
  }

  std::string who(const caf::strong_actor_ptr& x) {
    return x ? "node " + caf::to_string(x->node()) : "an anonymous sender";
  }

  std::string endpoint() const {
    return cfg_.host + ":" + std::to_string(cfg_.port);
  }

  bool from_here() {
    auto& src = current_sender();
    return src != nullptr && src->node() == system().node();
  }

  /// Whether the message comes from the pool's gatekeeper in this session.
  bool from_pool(const std::string& secret) {
    auto& src = current_sender();
    if (gatekeeper_ && src != nullptr &&
        src->address() == gatekeeper_.address() &&
        detail::same_secret(secret, secret_))
      return true;
    dropped("a message without this node's session from " + who(src));
    return false;
  }

  // -- workers ----------------------------------------------------------------

  void spawn_worker(size_t slot) {
    auto worker = cfg_.spawn_worker(system());
    monitor(worker);
    if (slot == workers_.size()) {
      workers_.push_back(worker);
      running_.emplace_back();
    } else {
      workers_[slot] = worker;
      running_[slot].reset();
    }
  }

  /// Stops the current workers; they stay monitored until they terminate.
  void stop_workers() {
    for (auto& worker : workers_) {
      send_exit(worker, caf::exit_reason::kill);
      stopping_.push_back(std::move(worker));
    }
    workers_.clear();
    running_.clear();
  }

  /// A worker that may be stuck in a job gets a fresh successor.
  void replace_worker(size_t slot) {
    send_exit(workers_[slot], caf::exit_reason::kill);
    stopping_.push_back(std::move(workers_[slot]));
    spawn_worker(slot);
  }

  void run(const std::string& secret, uint32_t slot, work_record& record) {
    if (!from_pool(secret))
      return;
    if (slot >= workers_.size() || running_[slot]) {
      send(gatekeeper_, node_done_atom_v, secret_, slot, record.id,
           caf::make_error(pool_errc::job_failed, "no free worker " +
                                                      std::to_string(slot) +
                                                      " on this node"));
      return;
    }
    running_[slot] = record.id;
    send(workers_[slot], work_to_do_atom_v, std::move(record));
    if (!beating_) {
      beating_ = true;
      delayed_send(this, cfg_.options.heartbeat(), node_alive_atom_v);
    }
  }

  /// While a worker runs an attempt, the pool hears from the node every
  /// `heartbeat` (a long job is not silence: docs/remote.md, "Node
  /// health").
  void heartbeat() {
    auto busy = std::any_of(running_.begin(), running_.end(),
                            [](auto& x) { return x.has_value(); });
    beating_ = busy && gatekeeper_;
    if (!beating_)
      return;
    send(gatekeeper_, node_alive_atom_v, secret_);
    delayed_send(this, cfg_.options.heartbeat(), node_alive_atom_v);
  }

  /// An outcome from a local worker, to the gatekeeper.
  template <class T>
  void report(const attempt_id& id, T outcome) {
    auto& src = current_sender();
    auto i = std::find_if(
        workers_.begin(), workers_.end(), [&](const caf::actor& x) {
          return src != nullptr && x.address() == src->address();
        });
    if (i == workers_.end())
      return; // A replaced worker's late outcome.
    auto slot = static_cast<size_t>(i - workers_.begin());
    if (!running_[slot] || *running_[slot] != id || !gatekeeper_)
      return;
    running_[slot].reset();
    send(gatekeeper_, node_done_atom_v, secret_, static_cast<uint32_t>(slot),
         id, std::move(outcome));
  }

  // -- joining and leaving ----------------------------------------------------

  void say_bye() {
    if (gatekeeper_)
      send(gatekeeper_, node_bye_atom_v, secret_);
  }

  /// Ends the node once every worker terminated, so that the actor system
  /// may be destroyed at once.
  void finish() {
    if ((!leaving_ && !pool_stopped_ && !failed_) || !workers_.empty() ||
        !stopping_.empty() || finished_)
      return;
    finished_ = true;
    report_first(failed_);
    if (leaving_) {
      leaving_->deliver(caf::unit);
      leaving_.reset();
    }
    quit(failed_);
  }

  /// Ends the node for good with `err`, once its workers terminated.
  void fail_node(caf::error err) {
    failed_ = std::move(err);
    say_bye();
    stop_workers();
    finish();
  }

  /// Reports the first join's outcome to `join_remote_pool`, once.
  void report_first(const caf::error& err) {
    if (auto to = std::move(first_outcome_to_))
      send(to, node_join_atom_v, err);
  }

  void try_join() {
    if (trying_ || gatekeeper_ || leaving_ || failed_)
      return;
    trying_ = true;
    request(system().middleman().actor_handle(), cfg_.options.join_timeout(),
            caf::connect_atom_v, cfg_.host, cfg_.port)
        .then(
            [this](const caf::node_id&, caf::strong_actor_ptr& gk,
                   const std::set<std::string>&) {
              if (!gk) {
                join_failed(caf::make_error(
                    caf::sec::no_actor_published_at_port, endpoint()));
                return;
              }
              join(caf::actor_cast<caf::actor>(std::move(gk)));
            },
            [this](caf::error& err) { join_failed(std::move(err)); });
  }

  void join(caf::actor gk) {
    auto wanted =
        static_cast<uint32_t>(std::min<size_t>(cfg_.workers, UINT32_MAX));
    request(gk, cfg_.options.join_timeout(), node_join_atom_v, cfg_.token,
            wanted)
        .then(
            [this, gk, wanted](node_join_atom, std::string& secret,
                               uint32_t granted) {
              trying_ = false;
              gatekeeper_ = gk;
              secret_ = std::move(secret);
              if (leaving_ || failed_) {
                say_bye();
                finish();
                return;
              }
              monitor(gk);
              for (uint32_t slot = 0; slot < granted; ++slot)
                spawn_worker(slot);
              delay_ = cfg_.options.reconnect_initial();
              lost_since_.reset();
              log(log_level::info,
                  "joined the pool at " + endpoint() + " with " +
                      std::to_string(granted) + " workers" +
                      (granted < wanted ? " (the pool's limit)" : ""));
              report_first(caf::none);
            },
            [this](caf::error& err) { join_failed(std::move(err)); });
  }

  /// A connect or join failed: the first one ends the node, as does a
  /// refused token; later ones are retried with backoff until
  /// `give_up_after`.
  void join_failed(caf::error err) {
    trying_ = false;
    if (leaving_ || failed_) {
      finish();
      return;
    }
    auto refused = err.category() == remote_error_category &&
                   err.code() == static_cast<uint8_t>(remote_errc::refused);
    if (first_outcome_to_ || refused) {
      log(log_level::error, "cannot join the pool at " + endpoint() + ": " +
                                describe_remote(err));
      fail_node(std::move(err));
      return;
    }
    auto give_up = cfg_.options.give_up_after();
    if (give_up && lost_since_ && clock().now() - *lost_since_ >= *give_up) {
      log(log_level::error, "giving up on the pool at " + endpoint() + ": " +
                                describe_remote(err));
      fail_node(std::move(err));
      return;
    }
    log(log_level::warning, "cannot rejoin the pool at " + endpoint() + " (" +
                                describe_remote(err) + "), retrying in " +
                                std::to_string(delay_.count() / 1000000) +
                                " ms");
    retry_later();
  }

  void retry_later() {
    delayed_send(this, delay_, rejoin_atom_v);
    delay_ = std::min(delay_ * 2, cfg_.options.reconnect_max());
  }

  void on_down(caf::down_msg& msg) {
    auto& src = current_sender();
    if (src == nullptr || src->address() != msg.source ||
        !src->get()->getf(caf::abstract_actor::is_cleaned_up_flag)) {
      dropped("a forged down message from " + who(src));
      return;
    }
    if (gatekeeper_ && msg.source == gatekeeper_.address()) {
      gatekeeper_ = nullptr;
      secret_.clear();
      stop_workers();
      if (leaving_ || failed_) {
        finish();
        return;
      }
      if (cfg_.options.leave_when_pool_stops() &&
          (!msg.reason || msg.reason == caf::exit_reason::user_shutdown)) {
        log(log_level::info, "the pool at " + endpoint() + " stopped (" +
                                 exit_text(msg.reason) + "), leaving");
        pool_stopped_ = true;
        finish();
        return;
      }
      log(log_level::warning, "lost the pool at " + endpoint() + " (" +
                                  exit_text(msg.reason) + "), rejoining");
      lost_since_ = clock().now();
      retry_later();
      return;
    }
    auto same = [&](const caf::actor& x) { return x.address() == msg.source; };
    if (auto i = std::find_if(stopping_.begin(), stopping_.end(), same);
        i != stopping_.end()) {
      stopping_.erase(i);
      finish();
      return;
    }
    auto i = std::find_if(workers_.begin(), workers_.end(), same);
    if (i == workers_.end())
      return;
    auto slot = static_cast<size_t>(i - workers_.begin());
    log(log_level::warning, "worker " + std::to_string(slot) + " stopped (" +
                                exit_text(msg.reason) + "), replacing it");
    if (running_[slot] && gatekeeper_)
      send(gatekeeper_, node_done_atom_v, secret_, static_cast<uint32_t>(slot),
           *running_[slot],
           caf::make_error(pool_errc::worker_down, exit_text(msg.reason)));
    spawn_worker(slot);
  }

  detail::node_config cfg_;
  log_hook log_;
  detail::log_limiter limiter_;
  /// Told the outcome of the first join, then reset.
  caf::actor first_outcome_to_;
  /// The pool's gatekeeper while joined, and the session's secret.
  caf::actor gatekeeper_;
  std::string secret_;
  /// The workers by slot, and the attempt each one runs.
  std::vector<caf::actor> workers_;
  std::vector<std::optional<attempt_id>> running_;
  /// Workers told to stop that have not terminated yet.
  std::vector<caf::actor> stopping_;
  caf::timespan delay_;
  std::optional<caf::actor_clock::time_point> lost_since_;
  bool trying_ = false;
  /// The heartbeat timer is armed.
  bool beating_ = false;
  std::optional<caf::response_promise> leaving_;
  bool pool_stopped_ = false;
  caf::error failed_;
  bool finished_ = false;
};

} // namespace

namespace detail {

caf::actor spawn_node_actor(caf::actor_system& sys, node_config cfg,
                            caf::actor first_outcome_to) {
  return sys.spawn<node_actor>(std::move(cfg), std::move(first_outcome_to));
}

} // namespace detail

} // namespace pool
