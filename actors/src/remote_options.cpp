#include "pool/remote_options.hpp"

#include <caf/io/middleman.hpp>

#include <fmt/format.h>

#include "pool/configure.hpp"
#include "pool/gatekeeper.hpp"
#include "pool/remote_types.hpp"

namespace pool {

// -- value types and errors ---------------------------------------------------

std::string to_string(const gatekeeper_stats& x) {
  return fmt::format(
      "joins_accepted={} workers_joined={} joins_refused={} joins_limited={} "
      "workers_limited={} controls_accepted={} controls_refused={} "
      "sessions={} remote_workers={} forged={} stale_results={} "
      "wrong_results={} timeouts={} quarantines={} outliers={} given_back={} "
      "avoided={} silent={} dropped={} connections={} "
      "connections_accepted={} connections_refused={} closed_no_handshake={} "
      "closed_no_token={} closed_protocol={}",
      x.joins_accepted, x.workers_joined, x.joins_refused, x.joins_limited,
      x.workers_limited, x.controls_accepted, x.controls_refused, x.sessions,
      x.remote_workers, x.forged, x.stale_results, x.wrong_results, x.timeouts,
      x.quarantines, x.outliers, x.given_back, x.avoided, x.silent, x.dropped,
      x.connections, x.connections_accepted, x.connections_refused,
      x.closed_no_handshake, x.closed_no_token, x.closed_protocol);
}

std::string to_string(remote_errc x) {
  switch (x) {
    case remote_errc::none:
      return "none";
    case remote_errc::refused:
      return "refused";
    case remote_errc::limit:
      return "limit";
    case remote_errc::bad_result:
      return "bad_result";
    case remote_errc::quarantined:
      return "quarantined";
    case remote_errc::silent:
      return "silent";
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

bool positive(caf::timespan x) {
  return x > caf::timespan{0};
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
  if (max_connections_ == 0)
    return invalid("max_connections", "must be at least 1");
  if (!positive(handshake_timeout_) || !positive(token_timeout_))
    return invalid("connection_deadlines", "must be positive");
  if (token_timeout_ < handshake_timeout_)
    return invalid("connection_deadlines",
                   "the token deadline must not be below the handshake one");
  if (max_message_size_ < 1024)
    return invalid("max_message_size", "must be at least 1024 bytes");
  if (max_nodes_ == 0)
    return invalid("max_nodes", "must be at least 1");
  if (max_workers_per_node_ == 0)
    return invalid("max_workers_per_node", "must be at least 1");
  if (!positive(attempt_timeout_))
    return invalid("attempt_timeout", "must be positive");
  if (quarantine_after_ == 0 || !positive(quarantine_for_))
    return invalid("quarantine", "needs at least 1 fault and a positive "
                                 "duration");
  if (auto field = health_.invalid_field()) {
    if (std::string{field} == "silent_after")
      return invalid("silent_after", "must not be negative (0: never)");
    return invalid("health", std::string{field} +
                                 ": needs window >= 1, 1 <= min_sample <= "
                                 "window and 0 < margin <= 1");
  }
  if (!positive(join_timeout_))
    return invalid("join_timeout", "must be positive");
  return caf::none;
}

log_hook node_options::log() const {
  return log_ ? log_ : default_log_hook();
}

caf::error node_options::validate() const {
  if (!positive(reconnect_initial_))
    return invalid("reconnect", "initial delay must be positive");
  if (reconnect_max_ < reconnect_initial_)
    return invalid("reconnect", "max delay must not be below the initial one");
  if (!positive(join_timeout_))
    return invalid("join_timeout", "must be positive");
  if (give_up_after_ && !positive(*give_up_after_))
    return invalid("give_up_after", "must be positive");
  if (!positive(heartbeat_))
    return invalid("heartbeat", "must be positive");
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

} // namespace pool
