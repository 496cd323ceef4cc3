#pragma once

// What the HTTP endpoint's sampler actor and its request threads share.

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "pool/http.hpp"
#include "pool/metrics_history.hpp"

namespace pool::http_detail {

/// One served pool: its samples and events. Guarded by `http_state::mtx`.
struct served_pool {
  std::string name;
  caf::actor pool;
  metrics_history history;
  event_log events;
  /// The pool terminated; its last figures stay on show.
  bool down = false;
  /// Samples the pool did not answer within the interval.
  uint64_t missed = 0;
};

struct http_state {
  std::mutex mtx;
  std::vector<served_pool> pools;
};

/// Whether a request whose `Host` header is `header` addresses the endpoint
/// listening on `port`: a name in `allowed` (`NAME`: any port; `NAME:PORT`:
/// that port), or `localhost` or an IP address with the endpoint's port
/// (80 when left out). Any other name may be a web page's own, rebound to
/// this host's address (DNS rebinding).
bool host_allowed(const std::string& header,
                  const std::vector<std::string>& allowed, uint16_t port);

/// What is wrong with an `allowed_hosts` entry; empty when nothing.
std::string check_allowed_host(const std::string& entry);

/// Spawns the actor that asks every pool for its figures each
/// `opts.sample_interval` and subscribes to their events, writing both into
/// `state`.
caf::actor spawn_sampler(caf::actor_system& sys,
                         std::shared_ptr<http_state> state,
                         const http_options& opts);

/// Subscribes `sampler` to the events of every pool and waits for each
/// pool's confirmation (at most 10 s each).
caf::error subscribe_sampler(caf::actor_system& sys, const caf::actor& sampler,
                             const std::vector<http_pool>& pools);

} // namespace pool::http_detail
