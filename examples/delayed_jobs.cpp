// Delayed jobs: operations that must not start before a given delay.
#include <chrono>

#include <caf/all.hpp>
#include <pool/all.hpp>

using namespace std::chrono;

struct config : caf::actor_system_config {
  config() {
    pool::configure(*this);
  }
};

void caf_main(caf::actor_system& sys, const config&) {
  auto started = steady_clock::now();
  // The job reports how long after start it ran, in milliseconds.
  auto job = [started](const std::string& name) {
    auto ms = duration_cast<milliseconds>(steady_clock::now() - started);
    return name + " ran after " + std::to_string(ms.count()) + " ms";
  };
  auto pool = pool::spawn_pool(sys, job, pool::pool_options{}.workers(2));
  if (!pool) {
    std::cerr << "cannot start pool: " << pool::describe(pool.error()) << '\n';
    return;
  }
  sys.spawn([pool = *pool](caf::event_based_actor* self) {
    auto print = [](const std::string& line) { std::cout << line << '\n'; };
    auto fail = [](caf::error& err) {
      std::cerr << "failed: " << pool::describe(err) << '\n';
    };
    // Submitted first, but due last: results arrive as "now", "soon", "late".
    self->request(pool, seconds(10), pool::submit_after_atom_v,
                  caf::timespan{milliseconds(300)}, std::string{"late"})
        .then(print, fail);
    self->request(pool, seconds(10), pool::submit_after_atom_v,
                  caf::timespan{milliseconds(100)}, std::string{"soon"})
        .then(print, fail);
    self->request(pool, seconds(10), pool::submit_atom_v, std::string{"now"})
        .then(print, fail);
  });
}

CAF_MAIN()
