// Monitoring: subscribe to a pool's events and print live stats while an
// autoscaled pool works through a burst of jobs.
#include <chrono>
#include <iostream>
#include <thread>

#include <caf/all.hpp>
#include <pool/all.hpp>

using namespace std::chrono_literals;

struct config : caf::actor_system_config {
  config() {
    pool::configure(*this);
  }
};

// A burst of submits: more than the pool can do at once, so the backlog
// alarm is raised and the pool grows. Each caller gets its own reply.
void producer(caf::event_based_actor* self, caf::actor pool, size_t jobs) {
  for (size_t i = 0; i < jobs; ++i)
    self->request(pool, caf::infinite, pool::submit_atom_v, static_cast<int>(i))
        .then([](int) {});
}

// The monitor: prints health events as they come, a stats line every
// 100 ms, and drains the pool once `expected` operations have finished
// (counted from `completed` and `failed` events: outcomes as a stream).
caf::behavior monitor(caf::event_based_actor* self, caf::actor pool,
                      size_t expected) {
  auto finished = std::make_shared<size_t>(0);
  // Subscribe first, then start the work, so that no event is missed.
  self->request(pool, 1s, pool::subscribe_atom_v, caf::actor{self},
                pool::event_mask::all)
      .then([=] { self->spawn(producer, pool, expected); },
            [=](caf::error& err) {
              std::cerr << "cannot subscribe: " << pool::describe(err) << '\n';
              self->quit(err);
            });
  self->send(self, pool::pool_stats_atom_v);
  return {
      [=](pool::pool_event& ev) {
        if (ev.kind == pool::event_kind::completed ||
            ev.kind == pool::event_kind::failed) {
          if (++*finished < expected)
            return;
          // Everything is done: drain (stops the pool) and quit.
          self->request(pool, 10s, pool::drain_atom_v).then([=] {
            std::cout << "drained, pool stopped\n";
            self->quit();
          });
          return;
        }
        std::cout << "event: " << pool::to_string(ev) << '\n';
      },
      [=](pool::pool_stats_atom) {
        self->request(pool, 1s, pool::pool_stats_atom_v)
            .then(
                [=](const pool::pool_stats& st) {
                  std::cout << "stats: workers=" << st.workers
                            << " busy=" << st.busy
                            << " sleeping=" << st.sleeping
                            << " available=" << st.available
                            << " completed=" << st.completed
                            << " alarm=" << st.backlog_alarm << '\n';
                  self->delayed_send(self, 100ms, pool::pool_stats_atom_v);
                },
                [](caf::error&) {
                  // The pool has stopped: no more stats.
                });
      },
  };
}

void caf_main(caf::actor_system& sys, const config&) {
  // Jobs that wait like a database call, on dedicated threads.
  auto job = [](int x) {
    std::this_thread::sleep_for(2ms);
    return x;
  };
  auto opts = pool::pool_options{}
                  .kind(pool::worker_kind::dedicated)
                  .name("example")
                  .autoscale(1, 4, 50ms, 200ms)
                  .backlog_alarm(30ms)
                  .overload_warning(100, 1s);
  auto pool = pool::spawn_pool(sys, job, opts);
  if (!pool) {
    std::cerr << "cannot start pool: " << pool::describe(pool.error()) << '\n';
    return;
  }
  sys.spawn(monitor, *pool, size_t{300});
}

CAF_MAIN()
