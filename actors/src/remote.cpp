#include "pool/remote.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>

#include <caf/actor_cast.hpp>
#include <caf/after.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include <fmt/format.h>

#include "pool/configure.hpp"

namespace pool {

// -- value types and errors ---------------------------------------------------

std::string to_string(const gatekeeper_stats& x) {
  return fmt::format("joins_accepted={} workers_joined={} joins_refused={} "
                     "controls_accepted={} controls_refused={} dropped={}",
                     x.joins_accepted, x.workers_joined, x.joins_refused,
                     x.controls_accepted, x.controls_refused, x.dropped);
}

std::string to_string(remote_errc x) {
  switch (x) {
    case remote_errc::none:
      return "none";
    case remote_errc::refused:
      return "refused";
  }
  return "remote_errc(" + std::to_string(static_cast<int>(x)) + ")";
}

std::string render_remote_error(uint8_t code, caf::atom_value category,
                                const caf::message& context) {
  std::string result = caf::to_string(category);
  result += '.';
  result += to_string(static_cast<remote_errc>(code));
  for (size_t i = 0; i < context.size(); ++i) {
    result += ": ";
    result += context.match_element<std::string>(i)
                  ? context.get_as<std::string>(i)
                  : context.stringify(i);
  }
  return result;
}

std::string describe_remote(const caf::error& err) {
  if (err && err.category() == remote_error_category)
    return render_remote_error(err.code(), err.category(), err.context());
  return describe(err);
}

namespace {

caf::error invalid(const char* field, std::string reason) {
  return caf::make_error(pool_errc::invalid_option, std::string{field},
                         std::move(reason));
}

/// An exit reason for log lines.
std::string exit_text(const caf::error& reason) {
  return reason ? describe(reason) : std::string{"it stopped normally"};
}

/// Compares in time that depends on the lengths only, never on how many
/// leading characters of a guess were right.
bool same_token(const std::string& given, const std::string& expected) {
  auto n = std::max(given.size(), expected.size());
  volatile unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    auto a = i < given.size() ? static_cast<unsigned char>(given[i]) : 0u;
    auto b = i < expected.size() ? static_cast<unsigned char>(expected[i]) : 0u;
    diff = diff | static_cast<unsigned char>(a ^ b);
  }
  return diff == 0;
}

/// The middleman actor that publishes and connects: CAF's plain one, or
/// the OpenSSL module's.
caf::io::middleman_actor middleman_of(caf::actor_system& sys, bool tls) {
  if (tls)
    return sys.openssl_manager().actor_handle();
  return sys.middleman().actor_handle();
}

caf::error check_network(caf::actor_system& sys, bool tls) {
  if (!sys.has_middleman())
    return invalid("middleman", "the actor system has no network module: "
                                "configure it with pool::configure_remote");
  if (tls && !sys.has_openssl_manager())
    return invalid("tls", "the actor system has no OpenSSL module: configure "
                          "it with pool::configure_remote_tls");
  return caf::none;
}

} // namespace

// -- options ------------------------------------------------------------------

log_hook remote_options::log() const {
  return log_ ? log_ : default_log_hook();
}

caf::error remote_options::validate() const {
  if (token_.empty())
    return invalid("token", "must not be empty: every node and operator "
                            "presents it");
  if (bind_address_.empty())
    return invalid("bind_address", "must not be empty (use 0.0.0.0 for "
                                   "every interface)");
  if (join_timeout_ <= caf::timespan{0})
    return invalid("join_timeout", "must be positive");
  if (tls_ && (tls_->certificate.empty() || tls_->key.empty()))
    return invalid("tls", "needs a certificate and a key");
  return caf::none;
}

log_hook node_options::log() const {
  return log_ ? log_ : default_log_hook();
}

caf::error node_options::validate() const {
  if (reconnect_initial_ <= caf::timespan{0})
    return invalid("reconnect", "initial delay must be positive");
  if (reconnect_max_ < reconnect_initial_)
    return invalid("reconnect", "max delay must not be below the initial one");
  if (join_timeout_ <= caf::timespan{0})
    return invalid("join_timeout", "must be positive");
  if (give_up_after_ && *give_up_after_ <= caf::timespan{0})
    return invalid("give_up_after", "must be positive");
  return caf::none;
}

void configure_remote(caf::actor_system_config& cfg) {
  configure(cfg);
  cfg.add_message_types<caf::id_block::pool_remote>();
  cfg.add_error_category(remote_error_category, render_remote_error);
  cfg.load<caf::io::middleman>();
  // Without heartbeats a peer that vanishes without closing its connection
  // (power loss, cable) is never noticed; an application may override both.
  cfg.set("middleman.heartbeat-interval",
          caf::timespan{std::chrono::seconds(1)});
  cfg.set("middleman.connection-timeout",
          caf::timespan{std::chrono::seconds(10)});
}

namespace detail {

caf::error unsendable_error(const char* field, const std::string& types) {
  return invalid(field, "cannot send values of type " + types +
                            " over the network: give the type an inspect "
                            "overload and register it (CAF_ADD_TYPE_ID in a "
                            "type-ID block, add_message_types)");
}

} // namespace detail

// -- gatekeeper ---------------------------------------------------------------

namespace {

/// Fronts a shepherd on the network: admits joins and control messages
/// that carry the token, drops everything else. Class-based so that it can
/// screen messages before CAF's own handling (see `consume`).
class gatekeeper_actor : public caf::event_based_actor {
public:
  gatekeeper_actor(caf::actor_config& cfg, caf::actor pool, remote_options opts)
      : caf::event_based_actor(cfg), pool_(std::move(pool)),
        options_(std::move(opts)), log_(options_.log()) {
    // nop
  }

  const char* name() const override {
    return "pool.gatekeeper";
  }

  /// CAF 0.17 ends an actor on any `exit_msg{kill}` before a handler sees
  /// it, and a peer on the network can send one. Nothing legitimate sends
  /// the gatekeeper an exit (it stops when its pool stops), so all are
  /// dropped here.
  caf::invoke_message_result consume(caf::mailbox_element& x) override {
    if (x.content().type_token() == caf::make_type_token<caf::exit_msg>()) {
      ++counters_.dropped;
      return caf::invoke_message_result::consumed;
    }
    return caf::event_based_actor::consume(x);
  }

  caf::behavior make_behavior() override {
    monitor(pool_);
    set_down_handler([this](caf::scheduled_actor*, caf::down_msg& msg) {
      // Only the pool's own down message counts, not a forged one.
      auto from_pool = current_sender() != nullptr &&
                       current_sender()->address() == pool_.address();
      if (!from_pool || msg.source != pool_.address()) {
        ++counters_.dropped;
        return;
      }
      log(log_level::info,
          "pool stopped (" + exit_text(msg.reason) + "), unpublishing");
      send(middleman_of(system(), options_.tls().has_value()),
           caf::unpublish_atom_v, address(), uint16_t{0});
      pool_ = nullptr;
      quit(msg.reason);
    });
    set_error_handler(
        [this](caf::scheduled_actor*, caf::error&) { ++counters_.dropped; });
    set_default_handler(
        [this](caf::scheduled_actor*,
               caf::message_view&) -> caf::result<caf::message> {
          ++counters_.dropped;
          return answer(caf::make_error(caf::sec::unexpected_message));
        });
    return {
        [this](node_join_atom, std::string& token,
               std::vector<caf::actor>& workers) -> caf::result<caf::message> {
          return join(token, workers);
        },
        [this](control_atom, std::string& token,
               pool_stats_atom) -> caf::result<caf::message> {
          return forward(token, "pool_stats", pool_stats_atom_v);
        },
        [this](control_atom, std::string& token, resize_atom,
               uint64_t n) -> caf::result<caf::message> {
          return forward(token, "resize", resize_atom_v, n);
        },
        [this](control_atom, std::string& token,
               drain_atom) -> caf::result<caf::message> {
          return forward(token, "drain", drain_atom_v);
        },
        [this](control_atom, std::string& token, drain_atom,
               caf::timespan deadline) -> caf::result<caf::message> {
          return forward(token, "drain", drain_atom_v, deadline);
        },
        [this](control_atom, std::string& token, cancel_op_atom,
               uint64_t id) -> caf::result<caf::message> {
          return forward(token, "cancel_op", cancel_op_atom_v, id);
        },
        [this](control_atom, std::string& token,
               gatekeeper_stats_atom) -> caf::result<gatekeeper_stats> {
          if (!admit(token, "gk_stats"))
            return answer<gatekeeper_stats>(refusal("gk_stats"));
          ++counters_.controls_accepted;
          return counters_;
        },
    };
  }

private:
  void log(log_level level, const std::string& text) {
    if (log_)
      log_(level, options_.name(), text);
  }

  /// Names the sender's node for log lines.
  std::string peer() {
    auto& src = current_sender();
    if (!src)
      return "an anonymous sender";
    return "node " + caf::to_string(src->node());
  }

  /// Replies `err` to a request; an asynchronous message gets no answer
  /// (CAF would send the error to its sender as an ordinary message).
  template <class T = caf::message>
  caf::result<T> answer(caf::error err) {
    auto* x = current_mailbox_element();
    if (x != nullptr && x->mid.is_request())
      return err;
    return caf::delegated<T>{};
  }

  caf::error refusal(const char* what) {
    return caf::make_error(remote_errc::refused,
                           std::string{what} + ": wrong or missing token");
  }

  /// Checks the token; counts and logs a refusal.
  bool admit(const std::string& token, const char* what) {
    if (same_token(token, options_.token()))
      return true;
    if (std::string{what} == "node_join")
      ++counters_.joins_refused;
    else
      ++counters_.controls_refused;
    log(log_level::warning, std::string{"refused "} + what + " from " + peer() +
                                ": wrong or missing token");
    return false;
  }

  caf::result<caf::message> join(const std::string& token,
                                 std::vector<caf::actor>& workers) {
    if (!admit(token, "node_join"))
      return answer(refusal("node_join"));
    workers.erase(std::remove(workers.begin(), workers.end(), nullptr),
                  workers.end());
    if (workers.empty()) {
      ++counters_.dropped;
      return answer(invalid("workers", "node_join without a valid worker"));
    }
    ++counters_.joins_accepted;
    counters_.workers_joined += workers.size();
    log(log_level::info,
        peer() + " joins with " + std::to_string(workers.size()) + " workers");
    // Answer once the shepherd accepted every worker (or with its first
    // error).
    struct progress {
      caf::response_promise promise;
      size_t pending;
      caf::error failure;
    };
    auto state = std::make_shared<progress>(
        progress{make_response_promise(), workers.size(), caf::none});
    auto done = [state] {
      if (--state->pending > 0 || state->promise.async())
        return;
      if (state->failure)
        state->promise.deliver(std::move(state->failure));
      else
        state->promise.deliver(caf::unit);
    };
    for (auto& worker : workers)
      request(pool_, options_.join_timeout(), join_pool_atom_v, worker)
          .then([done] { done(); },
                [state, done](caf::error& err) {
                  if (!state->failure)
                    state->failure = std::move(err);
                  done();
                });
    return state->promise;
  }

  /// Forwards a control command to the shepherd, whose answer (or error)
  /// goes straight back to the operator.
  template <class... Ts>
  caf::result<caf::message> forward(const std::string& token, const char* what,
                                    Ts... xs) {
    if (!admit(token, what))
      return answer(refusal(what));
    ++counters_.controls_accepted;
    log(log_level::info, peer() + " sent control command " + what);
    auto promise = make_response_promise();
    promise.delegate(pool_, std::move(xs)...);
    return promise;
  }

  caf::actor pool_;
  remote_options options_;
  log_hook log_;
  gatekeeper_stats counters_;
};

} // namespace

caf::expected<caf::actor> spawn_gatekeeper(caf::actor_system& sys,
                                           const caf::actor& pool,
                                           remote_options opts) {
  if (auto err = opts.validate())
    return err;
  if (!pool)
    return invalid("pool", "must be a valid actor");
  return sys.spawn<gatekeeper_actor>(pool, std::move(opts));
}

caf::expected<uint16_t> publish_gatekeeper(caf::actor_system& sys,
                                           const caf::actor& gatekeeper,
                                           const remote_options& opts) {
  if (auto err = opts.validate())
    return err;
  if (!gatekeeper)
    return invalid("gatekeeper", "must be a valid actor");
  auto tls = opts.tls().has_value();
  if (auto err = check_network(sys, tls))
    return err;
  if (tls) {
    // CAF's OpenSSL module reads its files from the system's configuration.
    auto& cfg = sys.config();
    auto& files = *opts.tls();
    if (cfg.openssl_certificate != files.certificate ||
        cfg.openssl_key != files.key || cfg.openssl_cafile != files.cafile)
      return invalid("tls", "the actor system was configured with other "
                            "certificate files: pass the same ones to "
                            "pool::configure_remote_tls");
  }
  caf::scoped_actor self{sys};
  caf::expected<uint16_t> result{caf::sec::request_timeout};
  self->request(
          middleman_of(sys, tls), std::chrono::seconds(10), caf::publish_atom_v,
          opts.port(), caf::actor_cast<caf::strong_actor_ptr>(gatekeeper),
          std::set<std::string>{}, opts.bind_address(), opts.reuse_address())
      .receive([&](uint16_t port) { result = port; },
               [&](caf::error& err) { result = std::move(err); });
  return result;
}

// -- node ---------------------------------------------------------------------

namespace {

struct node_state {
  static inline const char* name = "pool.node";

  ~node_state() {
    // Killed (no exit handler sees `kill`): best effort, see finish_leave.
    for (auto& worker : workers)
      caf::anon_send_exit(worker, caf::exit_reason::kill);
    if (sys != nullptr)
      for (auto id : spawned)
        sys->registry().erase(id);
  }

  caf::actor_system* sys = nullptr;
  detail::node_config cfg;
  log_hook log;
  /// Told the outcome of the first join, then reset.
  caf::actor first_outcome_to;
  /// The pool's gatekeeper while joined.
  caf::actor gatekeeper;
  /// This node's workers (joined, or on their way).
  std::vector<caf::actor> workers;
  /// Workers told to stop that have not terminated yet.
  std::vector<caf::actor> stopping;
  /// Every worker this node spawned, for the registry sweep.
  std::vector<caf::actor_id> spawned;
  /// Delay before the next reconnect.
  caf::timespan delay{0};
  /// Since when the node has been without a pool.
  std::optional<caf::actor_clock::time_point> lost_since;
  /// A connect or join is under way.
  bool trying = false;
  /// `node_leave` arrived: answer it once every worker terminated.
  std::optional<caf::response_promise> leaving;
  /// The pool stopped on purpose (`leave_when_pool_stops`): end once every
  /// worker terminated.
  bool pool_stopped = false;
  /// The node failed for good (a refused or a first join): it ends with
  /// this error once every worker terminated.
  caf::error failed;
  /// The gatekeeper of a join that failed without a refusal: it may have
  /// taken the workers anyway, so their last messages are flushed through
  /// it before the node ends.
  caf::actor flush_via;
};

using node_actor = caf::stateful_actor<node_state>;

void node_log(node_actor* self, log_level level, const std::string& text) {
  if (self->state.log)
    self->state.log(level, self->state.cfg.options.name(), text);
}

std::string endpoint(node_actor* self) {
  return self->state.cfg.host + ":" + std::to_string(self->state.cfg.port);
}

/// Stops the current workers; they stay monitored until they terminate.
void stop_workers(node_actor* self) {
  auto& st = self->state;
  for (auto& worker : st.workers) {
    self->send_exit(worker, caf::exit_reason::kill);
    st.stopping.push_back(std::move(worker));
  }
  st.workers.clear();
}

caf::actor spawn_node_worker(node_actor* self) {
  auto worker = self->state.cfg.spawn_worker(self->system());
  self->monitor(worker);
  self->state.workers.push_back(worker);
  self->state.spawned.push_back(worker.id());
  return worker;
}

/// CAF 0.17.6 puts every actor it sends over the network into its registry
/// (CAF issues #1110, #1196; fixed in 0.18): the node's workers are erased
/// from it by hand once they terminated, so nothing of the node stays.
void forget_workers(node_actor* self) {
  auto& registry = self->system().registry();
  for (auto id : self->state.spawned)
    registry.erase(id);
}

void report_first(node_actor* self, caf::error err);

/// Ends a `node_leave` once every worker terminated: first a round trip to
/// the gatekeeper over the same connection, so that the workers' last
/// messages have left (and registered them), then the registry sweep.
/// A node that failed for good ends the same way, with its error: reported
/// only now, since the caller may shut the actor system down at once, and
/// a worker still stopping then could send its down message to the network
/// layer's broker (which monitors the workers it sent out) after that
/// broker stopped; the message kept the worker alive and the system's
/// destructor waited for it forever.
void finish_leave(node_actor* self) {
  auto& st = self->state;
  if ((!st.leaving && !st.pool_stopped && !st.failed) ||
      !st.workers.empty() || !st.stopping.empty())
    return;
  auto done = [self] {
    auto& st = self->state;
    forget_workers(self);
    if (st.failed)
      report_first(self, st.failed);
    if (st.leaving) {
      st.leaving->deliver(caf::unit);
      st.leaving.reset();
    }
    self->quit(std::move(st.failed));
  };
  // A failed node asks the gatekeeper it may have given workers to.
  auto via = st.failed ? std::move(st.flush_via) : st.gatekeeper;
  if (!via) {
    done();
    return;
  }
  self->request(via, st.cfg.options.join_timeout(), control_atom_v,
                st.cfg.token, gatekeeper_stats_atom_v)
      .then([done](gatekeeper_stats&) { done(); },
            [done](caf::error&) { done(); });
}

/// Ends the node for good with `err`, once its workers terminated (see
/// finish_leave); their last messages go through `via` first, if set.
void fail_node(node_actor* self, caf::error err, caf::actor via) {
  auto& st = self->state;
  st.flush_via = std::move(via);
  st.failed = std::move(err);
  stop_workers(self);
  finish_leave(self); // Or the workers' down messages do.
}

/// Reports the first join's outcome to `join_remote_pool`, once.
void report_first(node_actor* self, caf::error err) {
  if (auto to = std::move(self->state.first_outcome_to))
    self->send(to, node_join_atom_v, std::move(err));
}

void try_join(node_actor* self);

/// A connect or join failed: the first one ends the node; later ones are
/// retried with backoff until `give_up_after`.
void join_failed(node_actor* self, caf::error err, caf::actor gk = {}) {
  auto& st = self->state;
  st.trying = false;
  stop_workers(self);
  if (st.leaving || st.failed) {
    finish_leave(self);
    return;
  }
  auto refused = err.category() == remote_error_category;
  if (st.first_outcome_to || refused) {
    node_log(self, log_level::error,
             "cannot join the pool at " + endpoint(self) + ": " +
                 describe_remote(err));
    fail_node(self, std::move(err), refused ? caf::actor{} : std::move(gk));
    return;
  }
  auto give_up = st.cfg.options.give_up_after();
  if (give_up && st.lost_since &&
      self->clock().now() - *st.lost_since >= *give_up) {
    node_log(self, log_level::error,
             "giving up on the pool at " + endpoint(self) + ": " +
                 describe_remote(err));
    fail_node(self, std::move(err), std::move(gk)); // (not refused)
    return;
  }
  node_log(self, log_level::warning,
           "cannot rejoin the pool at " + endpoint(self) + " (" +
               describe_remote(err) + "), retrying in " +
               std::to_string(st.delay.count() / 1000000) + " ms");
  self->delayed_send(self, st.delay, rejoin_atom_v);
  st.delay = std::min(st.delay * 2, st.cfg.options.reconnect_max());
}

/// Joins the gatekeeper `gk` with fresh workers.
void join(node_actor* self, caf::actor gk) {
  auto& st = self->state;
  stop_workers(self);
  for (size_t i = 0; i < st.cfg.workers; ++i)
    spawn_node_worker(self);
  self->request(gk, st.cfg.options.join_timeout(), node_join_atom_v,
                st.cfg.token, st.workers)
      .then(
          [self, gk] {
            auto& st = self->state;
            st.trying = false;
            st.gatekeeper = gk;
            if (st.leaving || st.failed) {
              if (st.failed && !st.flush_via)
                st.flush_via = gk;
              stop_workers(self);
              return;
            }
            self->monitor(gk);
            st.delay = st.cfg.options.reconnect_initial();
            st.lost_since.reset();
            node_log(self, log_level::info,
                     "joined the pool at " + endpoint(self) + " with " +
                         std::to_string(st.workers.size()) + " workers");
            report_first(self, caf::none);
          },
          [self, gk](caf::error& err) {
            join_failed(self, std::move(err), gk);
          });
}

/// Connects to the pool's gatekeeper, then joins.
void try_join(node_actor* self) {
  auto& st = self->state;
  if (st.trying || st.gatekeeper || st.leaving || st.failed)
    return;
  st.trying = true;
  self->request(middleman_of(self->system(), st.cfg.options.tls()),
                st.cfg.options.join_timeout(), caf::connect_atom_v, st.cfg.host,
                st.cfg.port)
      .then(
          [self](const caf::node_id&, caf::strong_actor_ptr& gk,
                 const std::set<std::string>&) {
            if (!gk) {
              join_failed(self,
                          caf::make_error(caf::sec::no_actor_published_at_port,
                                          endpoint(self)));
              return;
            }
            join(self, caf::actor_cast<caf::actor>(std::move(gk)));
          },
          [self](caf::error& err) { join_failed(self, std::move(err)); });
}

caf::behavior node(node_actor* self, detail::node_config cfg,
                   caf::actor first_outcome_to) {
  auto& st = self->state;
  st.sys = &self->system();
  st.log = cfg.options.log();
  st.delay = cfg.options.reconnect_initial();
  st.cfg = std::move(cfg);
  st.first_outcome_to = std::move(first_outcome_to);
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    if (st.gatekeeper && msg.source == st.gatekeeper.address()) {
      st.gatekeeper = nullptr;
      stop_workers(self);
      if (st.leaving)
        return; // The workers' down messages finish the leave.
      if (st.cfg.options.leave_when_pool_stops() &&
          (!msg.reason || msg.reason == caf::exit_reason::user_shutdown)) {
        node_log(self, log_level::info,
                 "the pool at " + endpoint(self) + " stopped (" +
                     exit_text(msg.reason) + "), leaving");
        st.pool_stopped = true;
        finish_leave(self); // Or the workers' down messages do.
        return;
      }
      node_log(self, log_level::warning,
               "lost the pool at " + endpoint(self) + " (" +
                   exit_text(msg.reason) + "), rejoining");
      st.lost_since = self->clock().now();
      self->delayed_send(self, st.delay, rejoin_atom_v);
      st.delay = std::min(st.delay * 2, st.cfg.options.reconnect_max());
      return;
    }
    auto same = [&](const caf::actor& x) { return x.address() == msg.source; };
    if (auto i = std::find_if(st.stopping.begin(), st.stopping.end(), same);
        i != st.stopping.end()) {
      st.stopping.erase(i);
      finish_leave(self);
      return;
    }
    auto i = std::find_if(st.workers.begin(), st.workers.end(), same);
    if (i == st.workers.end())
      return;
    st.workers.erase(i);
    if (!st.gatekeeper || st.leaving)
      return; // Not joined: the next join brings fresh workers.
    node_log(self, log_level::warning,
             "a worker stopped (" + exit_text(msg.reason) +
                 "), joining a replacement");
    auto worker = spawn_node_worker(self);
    self->request(st.gatekeeper, st.cfg.options.join_timeout(),
                  node_join_atom_v, st.cfg.token,
                  std::vector<caf::actor>{worker})
        .then([] {},
              [self](caf::error& err) {
                node_log(self, log_level::warning,
                         "replacement worker not joined: " +
                             describe_remote(err));
              });
  });
  // An exit from outside (any but `kill`, which no handler sees) ends the
  // node as a leave does: its workers stop first, so the actor system may
  // be destroyed as soon as the node is gone.
  self->set_exit_handler([self](caf::exit_msg& msg) {
    auto& st = self->state;
    if (!msg.reason || st.failed)
      return;
    node_log(self, log_level::info,
             "stopping on an exit (" + exit_text(msg.reason) + ")");
    fail_node(self, std::move(msg.reason), st.gatekeeper);
  });
  // Only the pool and this node's own workers matter; stray errors do not
  // end the node.
  self->set_error_handler([](caf::error&) {});
  try_join(self);
  return {
      [self](rejoin_atom) { try_join(self); },
      [self](node_leave_atom) -> caf::result<void> {
        auto& st = self->state;
        if (st.leaving)
          return caf::make_error(caf::sec::runtime_error,
                                 std::string{"already leaving"});
        node_log(self, log_level::info,
                 "leaving the pool at " + endpoint(self));
        st.leaving = self->make_response_promise();
        auto result = *st.leaving;
        stop_workers(self);
        finish_leave(self);
        return result;
      },
  };
}

} // namespace

namespace detail {

caf::expected<caf::actor> start_node(caf::actor_system& sys, node_config cfg) {
  if (auto err = cfg.options.validate())
    return err;
  if (cfg.host.empty())
    return invalid("host", "must not be empty");
  if (cfg.port == 0)
    return invalid("port", "must not be 0");
  if (cfg.token.empty())
    return invalid("token", "must not be empty");
  if (cfg.workers == 0)
    return invalid("workers", "must be at least 1");
  if (auto err = check_network(sys, cfg.options.tls()))
    return err;
  auto wait = 2 * cfg.options.join_timeout() + std::chrono::seconds(1);
  caf::scoped_actor self{sys};
  auto handle =
      sys.spawn(node, std::move(cfg), caf::actor_cast<caf::actor>(self));
  self->monitor(handle);
  caf::error outcome = caf::make_error(caf::sec::request_timeout);
  auto timed_out = false;
  self->receive(
      [&](node_join_atom, caf::error& err) { outcome = std::move(err); },
      [&](caf::down_msg& msg) {
        outcome = msg.reason ? msg.reason
                             : caf::make_error(caf::sec::request_receiver_down);
      },
      caf::after(wait) >> [&] { timed_out = true; });
  if (timed_out) {
    // Not answered in time: the node leaves, which stops its workers
    // before it ends (see finish_leave), so the caller may destroy the
    // actor system right after; it is killed only if that stalls too.
    self->send(handle, node_leave_atom_v);
    self->receive([](caf::down_msg&) {},
                  caf::after(wait) >> [&] {
                    caf::anon_send_exit(handle, caf::exit_reason::kill);
                  });
  }
  if (outcome) {
    caf::anon_send_exit(handle, caf::exit_reason::kill);
    return outcome;
  }
  self->demonitor(handle);
  return handle;
}

} // namespace detail

caf::error leave_remote_pool(caf::actor_system& sys, const caf::actor& node,
                             caf::timespan timeout) {
  if (!node)
    return invalid("node", "must be a valid actor");
  caf::scoped_actor self{sys};
  self->monitor(node);
  caf::error result = caf::make_error(caf::sec::request_timeout);
  self->request(node, timeout, node_leave_atom_v)
      .receive([&] { result = caf::none; },
               [&](caf::error& err) { result = std::move(err); });
  if (result)
    return result;
  // The node quits right after answering; wait for it (bounded).
  self->receive([](caf::down_msg&) {}, caf::after(timeout) >> [] {});
  return caf::none;
}

} // namespace pool
