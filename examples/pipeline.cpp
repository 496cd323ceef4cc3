// Pipeline: a producer enqueues 100 inputs, a consumer receives the
// outcomes as pool events and sums them; nothing blocks anywhere.
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>

#include <caf/all.hpp>
#include <pool/all.hpp>

using namespace std::chrono_literals;

struct config : caf::actor_system_config {
  config() {
    pool::configure(*this);
  }
};

constexpr int inputs = 100;

// Enqueues the inputs 1..100. The pool answers each enqueue with the
// operation's id at once and later sends the outcome as a message
// (op_done / op_failed); the consumer does the real work with the results,
// so the producer only counts them and quits when all have arrived.
caf::behavior producer(caf::event_based_actor* self, caf::actor pool) {
  auto ids = std::make_shared<int>(0);
  auto outcomes = std::make_shared<int>(0);
  auto done = [=] {
    if (*ids == inputs && *outcomes == inputs)
      self->quit();
  };
  for (int i = 1; i <= inputs; ++i)
    self->request(pool, 10s, pool::enqueue_atom_v, i)
        .then(
            [=](uint64_t) {
              ++*ids;
              done();
            },
            [=](caf::error& err) {
              // Not accepted: no outcome will follow for this input.
              std::cerr << "enqueue failed: " << pool::describe(err) << '\n';
              ++*ids;
              ++*outcomes;
              done();
            });
  return {
      [=](pool::op_done_atom, uint64_t, const caf::message&) {
        ++*outcomes;
        done();
      },
      [=](pool::op_failed_atom, uint64_t, const caf::error&) {
        ++*outcomes;
        done();
      },
  };
}

// Subscribes to the pool's outcome events, then starts the producer (so no
// event can be missed), sums the results and, once every input has an
// outcome, drains the pool and quits.
caf::behavior consumer(caf::event_based_actor* self, caf::actor pool) {
  struct totals {
    int completed = 0;
    int failed = 0;
    int64_t sum = 0;
  };
  auto st = std::make_shared<totals>();
  self->request(pool, 5s, pool::subscribe_atom_v, caf::actor{self},
                pool::event_mask::outcomes)
      .then([=] { self->spawn(producer, pool); },
            [=](caf::error& err) {
              std::cerr << "cannot subscribe: " << pool::describe(err) << '\n';
              self->quit(err);
            });
  return {
      [=](const pool::pool_event& ev) {
        if (ev.kind == pool::event_kind::completed) {
          // The result is the job's output, type-erased in a message.
          ++st->completed;
          if (ev.result.match_elements<int>())
            st->sum += ev.result.get_as<int>(0);
        } else {
          // The final error carries the attempt history; print the job's
          // own reason (the last attempt's).
          ++st->failed;
          auto history = pool::attempt_history(ev.error);
          std::cerr << "op#" << ev.operation << " failed: "
                    << pool::describe(history.empty() ? ev.error
                                                      : history.back().reason)
                    << '\n';
        }
        if (st->completed + st->failed < inputs)
          return;
        std::cout << st->completed << " completed, " << st->failed
                  << " failed, sum of results " << st->sum << '\n';
        // All outcomes are in: let the pool finish and stop, then quit.
        self->request(pool, 5s, pool::drain_atom_v)
            .then(
                [=] {
                  std::cout << "pool drained\n";
                  self->quit();
                },
                [=](caf::error& err) {
                  std::cerr << "drain failed: " << pool::describe(err) << '\n';
                  self->quit(err);
                });
      },
  };
}

void caf_main(caf::actor_system& sys, const config&) {
  // Squares its input; inputs divisible by 40 fail, to show failed outcomes.
  auto job = [](int x) -> caf::expected<int> {
    if (x % 40 == 0)
      return caf::make_error(caf::sec::runtime_error,
                             "refusing " + std::to_string(x));
    return x * x;
  };
  auto pool = pool::spawn_pool(sys, job, pool::pool_options{}.workers(4));
  if (!pool) {
    std::cerr << "cannot start pool: " << pool::describe(pool.error()) << '\n';
    return;
  }
  sys.spawn(consumer, *pool);
}

CAF_MAIN()
