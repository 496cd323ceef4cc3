#include "pool/gatekeeper.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <vector>

#include <caf/actor_cast.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "pool/duration_text.hpp"
#include "pool/port_guard.hpp"
#include "pool/remote_session.hpp"

namespace pool {

namespace {

caf::error invalid(const char* field, std::string reason) {
  return caf::make_error(pool_errc::invalid_option, std::string{field},
                         std::move(reason));
}

std::string exit_text(const caf::error& reason) {
  return reason ? describe(reason) : std::string{"it stopped normally"};
}

/// Fronts a shepherd on the network. Class-based so that it can screen
/// messages before CAF's own handling (see `consume`).
class gatekeeper_actor : public caf::event_based_actor {
public:
  gatekeeper_actor(caf::actor_config& cfg, caf::actor pool, remote_options opts,
                   detail::result_check check, std::string result_type)
      : caf::event_based_actor(cfg), pool_(std::move(pool)),
        options_(std::move(opts)), log_(options_.log()),
        sessions_(detail::session_limits{options_.max_nodes(),
                                         options_.max_workers_per_node(),
                                         options_.quarantine_after(),
                                         options_.quarantine_for()},
                  options_.health(),
                  detail::stand_in_config{pool_,
                                          {},
                                          {},
                                          {},
                                          0,
                                          0,
                                          options_.attempt_timeout(),
                                          options_.join_timeout(),
                                          check,
                                          std::move(result_type)}),
        guard_(std::make_shared<detail::port_guard>(
            detail::guard_limits{
                options_.max_connections(), options_.handshake_timeout(),
                options_.token_timeout(), options_.max_message_size()},
            system().node())) {
    // nop
  }

  const char* name() const override {
    return "pool.gatekeeper";
  }

  /// CAF 0.17 ends an actor on any `exit_msg{kill}` before a handler sees
  /// it, and a peer on the network can send one: nothing legitimate sends
  /// the gatekeeper an exit (it stops when its pool stops), so all are
  /// dropped here. So are messages with a forwarding stack, which only a
  /// crafted message carries (the reply would go to the next stage).
  caf::invoke_message_result consume(caf::mailbox_element& x) override {
    if (x.content().type_token() == caf::make_type_token<caf::exit_msg>() ||
        !x.stages.empty()) {
      ++counters_.dropped;
      return caf::invoke_message_result::consumed;
    }
    return caf::event_based_actor::consume(x);
  }

  void on_exit() override {
    sessions_.end_all(this, caf::exit_reason::user_shutdown);
    pool_ = nullptr;
  }

  caf::behavior make_behavior() override {
    monitor(pool_);
    if (tick_ > caf::timespan::zero())
      delayed_send(this, tick_, remote_tick_atom_v);
    set_down_handler(
        [this](caf::scheduled_actor*, caf::down_msg& msg) { on_down(msg); });
    set_error_handler(
        [this](caf::scheduled_actor*, caf::error&) { ++counters_.dropped; });
    set_default_handler(
        [this](caf::scheduled_actor*,
               caf::message_view&) -> caf::result<caf::message> {
          ++counters_.dropped;
          return answer(caf::make_error(caf::sec::unexpected_message));
        });
    return {
        [this](node_join_atom, std::string& token, uint32_t wanted)
            -> caf::result<caf::message> { return join(token, wanted); },
        [this](node_done_atom, std::string& secret, uint32_t slot,
               attempt_id& id, caf::message& result) {
          relay(secret, slot, id, false,
                caf::make_message(status_reply_atom_v, id, std::move(result)));
        },
        [this](node_done_atom, std::string& secret, uint32_t slot,
               attempt_id& id, caf::error& err) {
          relay(secret, slot, id, true,
                caf::make_message(status_reply_atom_v, id, std::move(err)));
        },
        [this](node_alive_atom, std::string& secret) {
          if (auto s = session_of(secret))
            sessions_.heard(*s);
        },
        [this](node_bye_atom, std::string& secret) {
          if (auto s = session_of(secret))
            end_session(s->node.address(), caf::exit_reason::user_shutdown,
                        "left");
        },
        [this](control_atom, std::string& token,
               pool_stats_atom) -> caf::result<caf::message> {
          if (!admit(token, "pool_stats"))
            return answer(refusal("pool_stats"));
          return ask<pool_stats>(options_.join_timeout(), pool_stats_atom_v);
        },
        [this](control_atom, std::string& token, resize_atom,
               uint64_t n) -> caf::result<caf::message> {
          if (!admit(token, "resize"))
            return answer(refusal("resize"));
          if (n > options_.max_resize()) {
            ++counters_.controls_refused;
            log_limited("refused resize to " + std::to_string(n) + " from " +
                        peer() + ": above max_resize");
            return answer(caf::make_error(
                remote_errc::limit, std::string{"resize"},
                "max_resize is " + std::to_string(options_.max_resize())));
          }
          return ask<void>(caf::infinite, resize_atom_v, n);
        },
        [this](control_atom, std::string& token,
               drain_atom) -> caf::result<caf::message> {
          if (!admit(token, "drain"))
            return answer(refusal("drain"));
          return ask<void>(caf::infinite, drain_atom_v);
        },
        [this](control_atom, std::string& token, drain_atom,
               caf::timespan deadline) -> caf::result<caf::message> {
          if (!admit(token, "drain"))
            return answer(refusal("drain"));
          return ask<void>(caf::infinite, drain_atom_v, deadline);
        },
        [this](control_atom, std::string& token, cancel_op_atom,
               uint64_t id) -> caf::result<caf::message> {
          if (!admit(token, "cancel_op"))
            return answer(refusal("cancel_op"));
          return ask<void>(options_.join_timeout(), cancel_op_atom_v, id);
        },
        [this](control_atom, std::string& token,
               gatekeeper_stats_atom) -> caf::result<caf::message> {
          if (!admit(token, "gk_stats"))
            return answer(refusal("gk_stats"));
          auto x = counters_;
          guard_->add_counters(x);
          return caf::make_message(x);
        },
        // -- local only: stand-ins, timers, publishing
        [this](remote_note_atom, uint64_t session, uint32_t slot,
               uint8_t what) {
          if (from_here())
            on_note(session, slot, static_cast<detail::attempt_note>(what));
          else
            ++counters_.dropped;
        },
        [this](remote_run_atom, uint64_t session, uint32_t slot,
               work_record& record) {
          if (!from_here()) {
            ++counters_.dropped;
            return;
          }
          auto stand_in = caf::actor_cast<caf::actor>(current_sender());
          if (sessions_.run(this, stand_in, session, slot, record))
            ++counters_.avoided;
        },
        [this](remote_tick_atom) {
          if (current_sender() == ctrl())
            on_tick();
          else
            ++counters_.dropped;
        },
        [this](remote_free_atom, uint64_t session) {
          if (current_sender() == ctrl())
            on_free(session);
          else
            ++counters_.dropped;
        },
        [this](remote_guard_atom) -> caf::result<caf::message> {
          if (!from_here()) {
            ++counters_.dropped;
            return answer(caf::make_error(caf::sec::unexpected_message));
          }
          return caf::make_message(guard_);
        },
    };
  }

private:
  // -- helpers ----------------------------------------------------------------

  void log(log_level level, const std::string& text) {
    if (log_)
      log_(level, options_.name(), text);
  }

  /// Refusals and drops: at most 10 lines per 10 s.
  void log_limited(std::string text) {
    if (auto line =
            limiter_.admit(detail::remote_clock::now(), std::move(text)))
      log(log_level::warning, *line);
  }

  /// Names the sender's node for log lines.
  std::string peer() {
    auto& src = current_sender();
    if (!src)
      return "an anonymous sender";
    return "node " + caf::to_string(src->node());
  }

  bool from_here() {
    auto& src = current_sender();
    return src != nullptr && src->node() == system().node();
  }

  /// Replies `err` to a request; an asynchronous message gets no answer
  /// (CAF would send the error to its sender as an ordinary message).
  caf::result<caf::message> answer(caf::error err) {
    auto* x = current_mailbox_element();
    if (x != nullptr && x->mid.is_request())
      return err;
    return caf::delegated<caf::message>{};
  }

  caf::error refusal(const char* what) {
    return caf::make_error(remote_errc::refused,
                           std::string{what} + ": wrong or missing token");
  }

  /// Checks the token; counts and logs a refusal. An accepted token keeps
  /// the peer's connection open past the guard's token deadline.
  bool admit(const std::string& token, const char* what) {
    if (detail::same_secret(token, options_.token())) {
      if (std::string{what} != "node_join")
        ++counters_.controls_accepted;
      if (auto& src = current_sender(); src && src->node() != system().node())
        guard_->authenticated(system(), src->node());
      return true;
    }
    if (std::string{what} == "node_join")
      ++counters_.joins_refused;
    else
      ++counters_.controls_refused;
    log_limited(std::string{"refused "} + what + " from " + peer() +
                ": wrong or missing token");
    return false;
  }

  /// Asks the shepherd (the operator's request never reaches it: the
  /// gatekeeper is its sender) and answers with its reply or error.
  template <class T, class Timeout, class... Ts>
  caf::result<caf::message> ask(Timeout timeout, Ts... xs) {
    log(log_level::info, peer() + " sent control command " +
                             caf::deep_to_string(std::make_tuple(xs...)));
    auto promise = make_response_promise();
    auto fail = [promise](caf::error& err) mutable {
      promise.deliver(std::move(err));
    };
    if constexpr (std::is_void_v<T>)
      request(pool_, timeout, std::move(xs)...)
          .then([promise]() mutable { promise.deliver(caf::unit); }, fail);
    else
      request(pool_, timeout, std::move(xs)...)
          .then([promise](T& x) mutable { promise.deliver(std::move(x)); },
                fail);
    return promise;
  }

  /// A down message is genuine when it comes from the actor that died,
  /// which CAF has cleaned up; a forged one (a `down_msg` sent as a plain
  /// message) comes from a live sender.
  bool genuine(const caf::down_msg& msg) {
    auto& src = current_sender();
    return src != nullptr && src->address() == msg.source &&
           src->get()->getf(caf::abstract_actor::is_cleaned_up_flag);
  }

  // -- sessions ---------------------------------------------------------------

  caf::result<caf::message> join(const std::string& token, uint32_t wanted) {
    if (!admit(token, "node_join"))
      return answer(refusal("node_join"));
    auto& src = current_sender();
    if (!src) {
      ++counters_.dropped;
      return answer(invalid("node_join", "needs a sender (the node actor)"));
    }
    auto opened =
        sessions_.open(this, caf::actor_cast<caf::actor>(src), wanted);
    if (!opened) {
      ++counters_.joins_limited;
      log_limited("refused node_join from " + peer() + ": " +
                  describe_remote(opened.error()));
      count_sessions();
      return answer(std::move(opened.error()));
    }
    auto& s = **opened;
    counters_.workers_limited += wanted - s.workers;
    ++counters_.joins_accepted;
    counters_.workers_joined += s.workers;
    log(log_level::info,
        peer() + " joins with " + std::to_string(s.workers) + " workers" +
            (s.workers < wanted ? " (of " + std::to_string(wanted) +
                                      " asked: max_workers_per_node)"
                                : ""));
    // The answer leaves before the stand-ins join: the node must know its
    // session before the first `node_run` reaches it.
    auto promise = make_response_promise();
    promise.deliver(caf::make_message(node_join_atom_v, s.secret, s.workers));
    sessions_.start(this, s);
    count_sessions();
    return promise;
  }

  void count_sessions() {
    counters_.sessions = sessions_.size();
    counters_.remote_workers = sessions_.stand_ins();
  }

  /// The session the sender belongs to, if `secret` is its secret; counts
  /// and logs a forged message otherwise.
  detail::node_sessions::session* session_of(const std::string& secret) {
    if (auto s = sessions_.find(current_sender(), secret))
      return s;
    ++counters_.forged;
    log_limited("dropped a message with an unknown session from " + peer());
    return nullptr;
  }

  /// A result from a node: to the stand-in of its worker, or given back
  /// there (node health) when the failure is the node's.
  void relay(const std::string& secret, uint32_t slot, const attempt_id& id,
             bool failed, caf::message msg) {
    auto s = session_of(secret);
    if (s == nullptr)
      return;
    if (slot >= s->stand_ins.size()) {
      ++counters_.stale_results; // quarantined, or no such worker
      return;
    }
    auto stand_in = s->stand_ins[slot];
    auto verdict = sessions_.outcome(this, *s, slot, id, failed);
    if (verdict.give_back) {
      ++counters_.given_back;
      send(stand_in, remote_back_atom_v, id, caf::timespan::zero());
    } else {
      send(stand_in, std::move(msg));
    }
    if (verdict.quarantine) {
      ++counters_.outliers;
      quarantined(*s, "fails far more often than the other nodes");
    }
  }

  void quarantined(const detail::node_sessions::session& s,
                   const std::string& why) {
    ++counters_.quarantines;
    log_limited("node " + caf::to_string(s.node.node()) + " quarantined for " +
                duration_text(sessions_.limits().quarantine_for) + ": " + why);
    count_sessions();
  }

  void on_tick() {
    for (auto& node : sessions_.drop_silent(this)) {
      ++counters_.silent;
      log_limited("node " + caf::to_string(node.node()) + " dropped: silent " +
                  duration_text(sessions_.health().limits().silent_after) +
                  " with attempts out, which go back unstarted");
    }
    count_sessions();
    delayed_send(this, tick_, remote_tick_atom_v);
  }

  void end_session(const caf::actor_addr& key, const caf::error& reason,
                   const std::string& why) {
    if (sessions_.end(this, key, reason))
      log(log_level::info, "node " + caf::to_string(key.node()) + " " + why);
    count_sessions();
  }

  void on_note(uint64_t id, uint32_t slot, detail::attempt_note what) {
    switch (what) {
      case detail::attempt_note::timed_out:
        ++counters_.timeouts;
        break;
      case detail::attempt_note::wrong_type:
        ++counters_.wrong_results;
        break;
      case detail::attempt_note::stale:
        ++counters_.stale_results;
        break;
      case detail::attempt_note::answered:
        break;
    }
    if (auto s = sessions_.note(this, id, slot, what))
      quarantined(*s, std::to_string(sessions_.limits().quarantine_after) +
                          " faults in a row (the last: " +
                          (what == detail::attempt_note::timed_out
                               ? "a timeout"
                               : "a result of the wrong type") +
                          ")");
  }

  void on_free(uint64_t id) {
    if (auto s = sessions_.release(this, id)) {
      log(log_level::info,
          "node " + caf::to_string(s->node.node()) + " gets work again");
      count_sessions();
    }
  }

  void on_down(caf::down_msg& msg) {
    if (!genuine(msg)) {
      ++counters_.dropped;
      log_limited("dropped a forged down message from " + peer());
      return;
    }
    if (pool_ && msg.source == pool_.address()) {
      log(log_level::info,
          "pool stopped (" + exit_text(msg.reason) + "), unpublishing");
      send(system().middleman().actor_handle(), caf::unpublish_atom_v,
           address(), uint16_t{0});
      sessions_.end_all(this, msg.reason);
      count_sessions();
      quit(msg.reason);
      return;
    }
    end_session(msg.source, caf::exit_reason::remote_link_unreachable,
                "is gone (" + exit_text(msg.reason) + ")");
  }

  caf::actor pool_;
  remote_options options_;
  log_hook log_;
  detail::node_sessions sessions_;
  std::shared_ptr<detail::port_guard> guard_;
  detail::log_limiter limiter_;
  gatekeeper_stats counters_;
  /// How often to look for silent nodes (none: never).
  caf::timespan
      tick_ = options_.silent_after() > caf::timespan::zero()
                  ? std::clamp<caf::timespan>(options_.silent_after() / 4,
                                              std::chrono::milliseconds(1),
                                              std::chrono::seconds(1))
                  : caf::timespan::zero();
};

} // namespace

namespace detail {

caf::expected<caf::actor> spawn_gatekeeper(caf::actor_system& sys,
                                           const caf::actor& pool,
                                           remote_options opts,
                                           result_check check,
                                           std::string result_type) {
  if (auto err = opts.validate())
    return err;
  if (!pool)
    return invalid("pool", "must be a valid actor");
  return sys.spawn<gatekeeper_actor>(pool, std::move(opts), check,
                                     std::move(result_type));
}

} // namespace detail

caf::expected<caf::actor> spawn_gatekeeper(caf::actor_system& sys,
                                           const caf::actor& pool,
                                           remote_options opts) {
  return detail::spawn_gatekeeper(sys, pool, std::move(opts), nullptr,
                                  "one value");
}

} // namespace pool
