// Retried jobs: a flaky job succeeds on its third attempt, a broken one
// fails for good and its attempt history is printed, and one submit is
// delayed.
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include <caf/all.hpp>
#include <pool/all.hpp>

using namespace std::chrono;
using namespace std::chrono_literals;

struct config : caf::actor_system_config {
  config() {
    pool::configure(*this);
  }
};

// How often each input has been tried. Attempts of one operation may run on
// different workers (threads), so the map is shared and guarded.
struct attempt_counter {
  std::mutex mtx;
  std::map<std::string, int> tries;

  int next(const std::string& key) {
    std::lock_guard<std::mutex> guard{mtx};
    return ++tries[key];
  }
};

void caf_main(caf::actor_system& sys, const config&) {
  auto started = steady_clock::now();
  auto counter = std::make_shared<attempt_counter>();
  // Returning an error or throwing both fail the attempt; the shepherd then
  // retries with backoff while attempts are left.
  auto job = [started,
              counter](const std::string& name) -> caf::expected<std::string> {
    auto attempt = counter->next(name);
    if (name == "broken")
      throw std::runtime_error("disk full"); // Fails every attempt.
    if (name == "flaky" && attempt <= 2)
      return caf::make_error(caf::sec::runtime_error,
                             "transient failure on attempt " +
                                 std::to_string(attempt));
    auto ms = duration_cast<milliseconds>(steady_clock::now() - started);
    return name + ": succeeded on attempt " + std::to_string(attempt) +
           " after " + std::to_string(ms.count()) + " ms";
  };
  // Up to 4 attempts; retry n+1 waits 20 ms * 2^(n-1), at most 200 ms,
  // plus up to 20 % random jitter.
  auto opts = pool::pool_options{}
                  .workers(2)
                  .max_attempts(4)
                  .backoff(20ms, 200ms)
                  .jitter(0.2);
  auto pool = pool::spawn_pool(sys, job, opts);
  if (!pool) {
    std::cerr << "cannot start pool: " << pool::describe(pool.error()) << '\n';
    return;
  }
  sys.spawn([pool = *pool](caf::event_based_actor* self) {
    auto print = [](const std::string& line) { std::cout << line << '\n'; };
    auto fail = [](caf::error& err) {
      if (!pool::is(err, pool::pool_errc::operation_failed)) {
        std::cerr << "failed: " << pool::describe(err) << '\n';
        return;
      }
      // Every attempt failed: the error carries each attempt's reason.
      auto history = pool::attempt_history(err);
      std::cerr << "failed for good after " << history.size() << " attempts:\n";
      for (auto& attempt : history)
        std::cerr << "  " << pool::to_string(attempt) << '\n';
    };
    self->request(pool, 10s, pool::submit_atom_v, std::string{"flaky"})
        .then(print, fail);
    self->request(pool, 10s, pool::submit_atom_v, std::string{"broken"})
        .then(print, fail);
    // Not started before 150 ms have passed.
    self->request(pool, 10s, pool::submit_after_atom_v, caf::timespan{150ms},
                  std::string{"delayed"})
        .then(print, fail);
  });
}

CAF_MAIN()
