#include <caf/all.hpp>

#include "http_state.hpp"
#include "pool/protocol.hpp"

namespace pool::http_detail {

namespace {

using tick_atom = caf::atom_constant<caf::atom("http_tick")>;

struct sampler_state {
  std::shared_ptr<http_state> shared;
  caf::timespan interval;
  /// Per pool: a sample request is outstanding (never more than one).
  std::vector<bool> asking;
  /// The pools' addresses, in order.
  std::vector<caf::actor_addr> addrs;
  static inline const char* name = "pool.http_sampler";
};

using sampler_actor = caf::stateful_actor<sampler_state>;

// The index of the pool `addr` names, or npos.
size_t index_of(const sampler_state& st, const caf::actor_addr& addr) {
  for (size_t i = 0; i < st.addrs.size(); ++i)
    if (st.addrs[i] == addr)
      return i;
  return std::string::npos;
}

void sample(sampler_actor* self) {
  auto& st = self->state;
  for (size_t i = 0; i < st.asking.size(); ++i) {
    caf::actor pool;
    {
      std::lock_guard<std::mutex> guard{st.shared->mtx};
      if (st.shared->pools[i].down)
        continue;
      if (st.asking[i]) {
        ++st.shared->pools[i].missed;
        continue;
      }
      pool = st.shared->pools[i].pool;
    }
    st.asking[i] = true;
    self->request(pool, st.interval * 10, pool_metrics_atom_v)
        .then(
            [self, i](pool_metrics& m) {
              auto& st = self->state;
              st.asking[i] = false;
              std::lock_guard<std::mutex> guard{st.shared->mtx};
              st.shared->pools[i].history.add(caf::make_timestamp(),
                                              std::move(m));
            },
            [self, i](caf::error&) { self->state.asking[i] = false; });
  }
}

caf::behavior sampler(sampler_actor* self, std::shared_ptr<http_state> shared,
                      caf::timespan interval) {
  auto& st = self->state;
  st.shared = std::move(shared);
  st.interval = interval;
  std::vector<caf::actor> pools;
  {
    std::lock_guard<std::mutex> guard{st.shared->mtx};
    for (auto& p : st.shared->pools)
      pools.push_back(p.pool);
  }
  st.asking.assign(pools.size(), false);
  for (auto& pool : pools) {
    st.addrs.push_back(pool.address());
    self->monitor(pool);
  }
  self->set_down_handler([self](const caf::down_msg& msg) {
    auto i = index_of(self->state, msg.source);
    if (i == std::string::npos)
      return;
    std::lock_guard<std::mutex> guard{self->state.shared->mtx};
    self->state.shared->pools[i].down = true;
  });
  sample(self);
  self->delayed_send(self, interval, tick_atom::value);
  return {
    [self](tick_atom) {
      sample(self);
      self->delayed_send(self, self->state.interval, tick_atom::value);
    },
    [self](const pool_event& ev) {
      auto i = index_of(self->state, self->current_sender()
                                         ? self->current_sender()->address()
                                         : caf::actor_addr{});
      if (i == std::string::npos)
        return;
      std::lock_guard<std::mutex> guard{self->state.shared->mtx};
      self->state.shared->pools[i].events.note(ev, caf::make_timestamp());
    },
  };
}

} // namespace

caf::error subscribe_sampler(caf::actor_system& sys, const caf::actor& sampler,
                             const std::vector<http_pool>& pools) {
  // Every kind but `completed` and `idle`: one message per successful
  // operation (or per lull of a lightly used pool) would cost the pool
  // more than the page is worth. Histories of operations that retried and
  // then succeeded are forgotten oldest first instead.
  constexpr auto mask = event_mask::all & ~event_bit(event_kind::completed) &
                        ~event_bit(event_kind::idle);
  caf::scoped_actor self{sys};
  caf::error result;
  for (auto& p : pools) {
    self->request(p.pool, std::chrono::seconds(10), subscribe_atom_v, sampler,
                  mask)
        .receive([] {},
                 [&](caf::error& err) {
                   result = caf::make_error(
                       pool_errc::invalid_option,
                       "http: pool '" + p.name +
                           "' did not accept the subscription: " +
                           describe(err));
                 });
    if (result)
      break;
  }
  return result;
}

caf::actor spawn_sampler(caf::actor_system& sys,
                         std::shared_ptr<http_state> state,
                         const http_options& opts) {
  return sys.spawn(sampler, std::move(state), opts.sample_interval);
}

} // namespace pool::http_detail
