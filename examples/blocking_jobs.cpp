// Blocking or CPU-heavy jobs: dedicated workers, each on a thread of its
// own, so that a job that blocks or computes for long never holds up CAF.
#include <chrono>
#include <cstdint>
#include <future>
#include <thread>
#include <vector>

#include <caf/all.hpp>
#include <pool/all.hpp>

struct config : caf::actor_system_config {
  config() {
    pool::configure(*this);
  }
};

// Blocks its thread for 50 ms (think: a query on a database connection),
// then counts the primes below n (CPU work).
int64_t count_primes(int32_t n) {
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  int64_t count = 0;
  for (int32_t i = 2; i < n; ++i) {
    bool prime = true;
    for (int32_t d = 2; d * d <= i && prime; ++d)
      prime = i % d != 0;
    count += prime ? 1 : 0;
  }
  return count;
}

void caf_main(caf::actor_system& sys, const config&) {
  // Cooperative workers (the default) share CAF's scheduler threads: a job
  // like this one would stall every actor while it runs. Dedicated ones
  // don't; their default count is the number of cores - 1 (at least 1).
  auto opts = pool::pool_options{}.kind(pool::worker_kind::dedicated);
  auto pool = pool::spawn_pool(sys, count_primes, opts.workers(2));
  if (!pool) {
    std::cerr << "cannot start pool: " << pool::describe(pool.error()) << '\n';
    return;
  }
  std::vector<int32_t> inputs{1000, 10000, 100000, 200000};
  std::vector<std::future<caf::expected<int64_t>>> results;
  for (auto n : inputs)
    results.push_back(pool::submit_future<int64_t>(sys, *pool, n));
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto result = results[i].get();
    std::cout << "primes below " << inputs[i] << ": "
              << (result ? std::to_string(*result)
                         : pool::describe(result.error()))
              << '\n';
  }
  caf::scoped_actor self{sys};
  self->request(*pool, std::chrono::seconds(10), pool::pool_stats_atom_v)
      .receive(
          [](pool::pool_stats& st) { std::cout << pool::summary(st) << '\n'; },
          [](caf::error& err) { std::cerr << pool::describe(err) << '\n'; });
}

CAF_MAIN()
