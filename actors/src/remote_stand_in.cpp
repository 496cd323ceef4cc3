#include "pool/remote_stand_in.hpp"

#include <optional>
#include <vector>

#include <caf/actor_cast.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include "pool/duration_text.hpp"
#include "pool/errors.hpp"
#include "pool/job_control.hpp"
#include "pool/protocol.hpp"
#include "pool/remote_types.hpp"

namespace pool::detail {

namespace {

struct stand_in_state {
  static inline const char* name = "pool.stand_in";
  stand_in_config cfg;
  worker_phase phase = worker_phase::sleeping;
  /// The attempt out on the node.
  std::optional<attempt_id> held;
  /// Numbers the attempt timers: only the newest one counts (0: none).
  uint64_t timer = 0;
  /// A `give_me_work` is unanswered: a `work_to_do` or `go_to_sleep` may
  /// be on its way.
  bool asked = false;
  /// Retiring with this reason (its node is quarantined or silent).
  caf::error retiring;
};

using stand_in_actor = caf::stateful_actor<stand_in_state>;

bool sent_by(stand_in_actor* self, const caf::actor& x) {
  auto& src = self->current_sender();
  return src != nullptr && x && src->address() == x.address();
}

/// Tells the gatekeeper how an attempt ended (for quarantine and stats).
void note(stand_in_actor* self, attempt_note what) {
  auto& cfg = self->state.cfg;
  self->send(cfg.gatekeeper, remote_note_atom_v, cfg.session, cfg.slot,
             static_cast<uint8_t>(what));
}

/// Gives the attempt held back to the queue, due after `delay`, without
/// using it up (a snooze: the next attempt number, not counted).
void give_back(stand_in_actor* self, caf::timespan delay) {
  auto& st = self->state;
  if (st.held)
    self->send(st.cfg.pool, status_reply_atom_v, *st.held, snooze(delay));
}

/// Sends toward the node with the gatekeeper as sender: the stand-in's own
/// handle never crosses the wire.
template <class... Ts>
void to_node(stand_in_actor* self, Ts&&... xs) {
  auto& cfg = self->state.cfg;
  if (cfg.node)
    cfg.node->eq_impl(caf::make_message_id(),
                      caf::actor_cast<caf::strong_actor_ptr>(cfg.gatekeeper),
                      self->context(), std::forward<Ts>(xs)...);
}

void start(stand_in_actor* self, work_record& record) {
  auto& st = self->state;
  st.held = record.id;
  st.phase = worker_phase::working;
  self->delayed_send(self, st.cfg.attempt_timeout, remote_timeout_atom_v,
                     record.id, ++st.timer);
  // Through the gatekeeper, which knows the node's health: it sends the
  // attempt on as `node_run`, or hands it back (`rmt_back`).
  self->send(st.cfg.gatekeeper, remote_run_atom_v, st.cfg.session, st.cfg.slot,
             std::move(record));
}

/// After a report: free for the next attempt. The shepherd drops a joined
/// worker whose attempt outlived the pool's own `attempt_timeout`; joining
/// again (a no-op for a member) brings the stand-in back in that case.
void finish(stand_in_actor* self) {
  auto& st = self->state;
  st.held.reset();
  ++st.timer;
  st.phase = worker_phase::waiting;
  self->request(st.cfg.pool, st.cfg.join_timeout, join_pool_atom_v,
                caf::actor_cast<caf::actor>(self))
      .then([] {}, [](caf::error&) {});
  st.asked = true;
  self->send(st.cfg.pool, give_me_work_atom_v);
}

/// Its node is quarantined or silent: the attempt it holds goes back
/// without using up an attempt, and so does any the shepherd sends it
/// before it ends. It ends once no answer of the shepherd can be on its
/// way, so that the shepherd never loses an attempt to its end.
void retire(stand_in_actor* self, caf::error reason) {
  auto& st = self->state;
  st.retiring = std::move(reason);
  if (st.held) {
    give_back(self, caf::timespan::zero());
    st.held.reset();
    ++st.timer;
  }
  if (!st.asked) {
    self->quit(st.retiring);
    return;
  }
  // (Bounded: the shepherd answers every give_me_work.)
  self->delayed_send(self, st.cfg.join_timeout, remote_timeout_atom_v,
                     attempt_id{}, uint64_t{0});
}

/// Whether `id` is the attempt out on the node; counts a stale one.
bool holds(stand_in_actor* self, const attempt_id& id) {
  if (self->state.held && *self->state.held == id)
    return true;
  note(self, attempt_note::stale);
  return false;
}

caf::behavior stand_in(stand_in_actor* self, stand_in_config cfg) {
  self->state.cfg = std::move(cfg);
  auto& st = self->state;
  self->monitor(st.cfg.gatekeeper);
  self->set_down_handler([self](caf::down_msg& msg) {
    if (msg.source == self->state.cfg.gatekeeper.address())
      self->quit(msg.reason);
  });
  // Stopped for its node's quarantine or silence: what it holds is not
  // the operation's fault and goes back without using up an attempt.
  self->set_exit_handler([self](caf::exit_msg& msg) {
    if (msg.reason == remote_errc::quarantined ||
        msg.reason == remote_errc::silent)
      retire(self, std::move(msg.reason));
    else if (msg.reason)
      self->quit(msg.reason);
  });
  self->set_default_handler(caf::drop);
  return {
      [self](wake_up_atom) {
        auto& st = self->state;
        // (The gatekeeper nudges it to take an operation another node
        // handed back.)
        if (!(sent_by(self, st.cfg.pool) || sent_by(self, st.cfg.gatekeeper)) ||
            st.phase != worker_phase::sleeping || st.retiring)
          return;
        st.phase = worker_phase::waiting;
        st.asked = true;
        self->send(st.cfg.pool, give_me_work_atom_v);
      },
      [self](go_to_sleep_atom) {
        auto& st = self->state;
        if (!sent_by(self, st.cfg.pool))
          return;
        st.asked = false;
        if (st.retiring)
          self->quit(st.retiring);
        else if (!st.held)
          st.phase = worker_phase::sleeping;
      },
      [self](work_to_do_atom, work_record& record) {
        auto& st = self->state;
        if (!sent_by(self, st.cfg.pool))
          return;
        st.asked = false;
        if (st.retiring) {
          self->send(st.cfg.pool, status_reply_atom_v, record.id,
                     snooze(caf::timespan::zero()));
          self->quit(st.retiring);
          return;
        }
        if (st.held) {
          self->send(st.cfg.pool, status_reply_atom_v, record.id,
                     caf::make_error(pool_errc::job_failed,
                                     std::string{"remote worker busy"}));
          return;
        }
        start(self, record);
      },
      // Entries handed ahead go to the pool's own workers only; a batch
      // goes back unstarted (the shepherd gives joined workers one at a
      // time).
      [](work_to_do_atom, work_record&, claim_ticket&) {},
      [self](work_to_do_atom, std::vector<work_record>&, bool) {
        auto& st = self->state;
        if (!sent_by(self, st.cfg.pool) || st.held)
          return;
        self->send(st.cfg.pool, status_reply_atom_v,
                   std::vector<attempt_outcome>{});
        self->send(st.cfg.pool, give_me_work_atom_v);
      },
      [self](status_reply_atom, attempt_id& id, caf::message& result) {
        auto& st = self->state;
        if (!sent_by(self, st.cfg.gatekeeper) || !holds(self, id))
          return;
        auto ok =
            st.cfg.check != nullptr ? st.cfg.check(result) : result.size() == 1;
        if (ok) {
          self->send(st.cfg.pool, status_reply_atom_v, id, std::move(result));
          note(self, attempt_note::answered);
        } else {
          self->send(st.cfg.pool, status_reply_atom_v, id,
                     caf::make_error(remote_errc::bad_result,
                                     st.cfg.result_type,
                                     to_string(result).substr(0, 200)));
          note(self, attempt_note::wrong_type);
        }
        finish(self);
      },
      [self](status_reply_atom, attempt_id& id, caf::error& err) {
        auto& st = self->state;
        if (!sent_by(self, st.cfg.gatekeeper) || !holds(self, id))
          return;
        self->send(st.cfg.pool, status_reply_atom_v, id,
                   sanitize_remote_error(err));
        note(self, attempt_note::answered);
        finish(self);
      },
      [self](remote_back_atom, attempt_id& id, caf::timespan delay) {
        auto& st = self->state;
        if (!sent_by(self, st.cfg.gatekeeper) || !st.held || *st.held != id)
          return;
        give_back(self, caf::timespan::zero());
        if (delay == caf::timespan::zero()) {
          finish(self);
          return;
        }
        // Its node must not run that operation: it asks again only after
        // `delay`, so that another worker takes it meanwhile.
        st.held.reset();
        ++st.timer;
        st.phase = worker_phase::waiting;
        st.asked = true;
        self->delayed_send(st.cfg.pool, delay, give_me_work_atom_v);
      },
      [self](remote_timeout_atom, attempt_id& id, uint64_t timer) {
        auto& st = self->state;
        if (self->current_sender() != self->ctrl())
          return;
        if (timer == 0 && st.retiring) {
          self->quit(st.retiring);
          return;
        }
        if (timer != st.timer || !st.held || *st.held != id)
          return;
        self->send(st.cfg.pool, status_reply_atom_v, id,
                   caf::make_error(pool_errc::timed_out,
                                   duration_text(st.cfg.attempt_timeout)));
        // The node's worker may be stuck in the job: it gets a fresh one.
        to_node(self, node_drop_atom_v, st.cfg.secret, st.cfg.slot);
        note(self, attempt_note::timed_out);
        finish(self);
      },
  };
}

} // namespace

caf::actor spawn_stand_in(caf::actor_system& sys, stand_in_config cfg) {
  return sys.spawn(stand_in, std::move(cfg));
}

// -- node sessions ------------------------------------------------------------

caf::expected<node_sessions::session*>
node_sessions::open(caf::event_based_actor* self, const caf::actor& node,
                    uint32_t wanted) {
  end(self, node.address(), caf::exit_reason::user_shutdown);
  auto admitted = book_.open(wanted);
  if (!admitted)
    return std::move(admitted.error());
  session s;
  s.id = admitted->first;
  s.workers = admitted->second;
  s.node = node;
  try {
    s.secret = make_session_secret();
  } catch (std::exception& ex) {
    book_.close(s.id);
    return caf::make_error(caf::sec::runtime_error,
                           std::string{"no session secret: "} + ex.what());
  }
  self->monitor(node);
  health_.add(s.id, remote_clock::now());
  by_id_[s.id] = node.address();
  return &sessions_.emplace(node.address(), std::move(s)).first->second;
}

void node_sessions::start(caf::event_based_actor* self, session& s) {
  for (uint32_t slot = 0; slot < s.workers; ++slot) {
    auto cfg = proto_;
    cfg.gatekeeper = caf::actor_cast<caf::actor>(self);
    cfg.node = s.node;
    cfg.secret = s.secret;
    cfg.session = s.id;
    cfg.slot = slot;
    auto stand_in = spawn_stand_in(self->system(), std::move(cfg));
    s.stand_ins.push_back(stand_in);
    self->request(proto_.pool, proto_.join_timeout, join_pool_atom_v, stand_in)
        .then([] {},
              [self, stand_in](caf::error&) {
                // The pool refused it (it is stopping): no work through it.
                self->send_exit(stand_in, caf::exit_reason::user_shutdown);
              });
  }
  running_ += s.stand_ins.size();
}

node_sessions::session* node_sessions::find(const caf::strong_actor_ptr& sender,
                                            const std::string& secret) {
  if (sender == nullptr)
    return nullptr;
  auto i = sessions_.find(sender->address());
  if (i == sessions_.end() || !same_secret(secret, i->second.secret))
    return nullptr;
  return &i->second;
}

void node_sessions::stop(session& s, const caf::error& reason) {
  // A quarantined or silent node's stand-ins retire in order with what the
  // shepherd sent them (see `retire`); others stop at once.
  auto in_order =
      reason == remote_errc::quarantined || reason == remote_errc::silent;
  auto priority =
      in_order ? caf::message_priority::normal : caf::message_priority::high;
  for (auto& stand_in : s.stand_ins)
    stand_in->eq_impl(caf::make_message_id(priority), nullptr, nullptr,
                      caf::exit_msg{stand_in.address(), reason});
  running_ -= s.stand_ins.size();
  s.stand_ins.clear();
}

bool node_sessions::end(caf::event_based_actor* self,
                        const caf::actor_addr& node, const caf::error& reason) {
  auto i = sessions_.find(node);
  if (i == sessions_.end())
    return false;
  stop(i->second, reason);
  self->demonitor(i->second.node);
  book_.close(i->second.id);
  health_.remove(i->second.id);
  by_id_.erase(i->second.id);
  sessions_.erase(i);
  return true;
}

void node_sessions::end_all(caf::event_based_actor* self,
                            const caf::error& reason) {
  while (!sessions_.empty())
    end(self, sessions_.begin()->first, reason);
}

node_sessions::session* node_sessions::note(caf::event_based_actor* self,
                                            uint64_t id, uint32_t slot,
                                            attempt_note what) {
  if (what == attempt_note::timed_out)
    health_.abandoned(id, slot);
  if (!book_.note(id, what, remote_clock::now()))
    return nullptr;
  auto& s = sessions_.at(by_id_.at(id));
  quarantined(self, s);
  return &s;
}

void node_sessions::quarantined(caf::event_based_actor* self, session& s) {
  health_.quarantine(s.id);
  stop(s,
       caf::make_error(remote_errc::quarantined, caf::to_string(s.node.node()),
                       duration_text(book_.limits().quarantine_for)));
  self->delayed_send(self, book_.limits().quarantine_for, remote_free_atom_v,
                     s.id);
}

node_sessions::session* node_sessions::release(caf::event_based_actor* self,
                                               uint64_t id) {
  auto key = by_id_.find(id);
  if (key == by_id_.end())
    return nullptr;
  auto now = remote_clock::now();
  if (!book_.release(id, now)) {
    if (book_.quarantined(id, now)) // (the timer came a little early)
      self->delayed_send(self, std::chrono::milliseconds(50),
                         remote_free_atom_v, id);
    return nullptr;
  }
  auto& s = sessions_.at(key->second);
  health_.release(id, now);
  start(self, s);
  return &s;
}

caf::error sanitize_remote_error(const caf::error& err) {
  if (!err)
    return caf::make_error(pool_errc::job_failed,
                           std::string{"a remote worker reported an empty "
                                       "error"});
  auto& context = err.context();
  caf::message parts;
  for (size_t i = 0; i < context.size() && i < 16; ++i) {
    // Values that name actors (or may hold some) become text; the rest,
    // e.g. a job's own result type in its error, stays as it came.
    if (context.match_element<caf::actor>(i) ||
        context.match_element<caf::strong_actor_ptr>(i) ||
        context.match_element<caf::actor_addr>(i) ||
        context.match_element<caf::message>(i) ||
        context.match_element<std::vector<caf::actor>>(i) ||
        context.match_element<std::vector<caf::strong_actor_ptr>>(i)) {
      auto text = context.stringify(i);
      if (text.size() > 4096)
        text.resize(4096);
      parts = caf::message::concat(parts, caf::make_message(std::move(text)));
    } else {
      parts = caf::message::concat(parts, context.slice(i, 1));
    }
  }
  return caf::error{err.code(), err.category(), std::move(parts)};
}

} // namespace pool::detail
