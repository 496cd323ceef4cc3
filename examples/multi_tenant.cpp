// A multi-tenant pool: three render slots shared by tenants. Every tenant
// may run at most two renders at once, the free tier one at a time and at
// most five per second; paying tenants' jobs go first, and a tenant with
// a long backlog does not starve one with a single job (the pool takes
// turns between tenants). Submits go through a typed handle, and the
// outcomes come back typed.
#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <caf/all.hpp>
#include <pool/all.hpp>

using namespace std::chrono;

struct config : caf::actor_system_config {
  config() {
    pool::configure(*this);
  }
};

namespace {

/// How many renders of each tenant run now, and the most seen at once.
struct tenant_meter {
  std::mutex mtx;
  std::map<std::string, int> running;
  std::map<std::string, int> most;

  void enter(const std::string& tenant) {
    std::lock_guard<std::mutex> guard{mtx};
    auto n = ++running[tenant];
    most[tenant] = std::max(most[tenant], n);
  }

  void leave(const std::string& tenant) {
    std::lock_guard<std::mutex> guard{mtx};
    --running[tenant];
  }
};

} // namespace

void caf_main(caf::actor_system& sys, const config&) {
  auto meter = std::make_shared<tenant_meter>();
  // The job: renders one page of a tenant's document (here: sleeps 20 ms).
  auto render = [meter](std::string tenant, int32_t page) {
    meter->enter(tenant);
    std::this_thread::sleep_for(milliseconds(20));
    meter->leave(tenant);
    return tenant + " page " + std::to_string(page);
  };
  // Per-tenant limits: two at once for everyone; the free tier one at a
  // time and five starts per second.
  auto limits =
      pool::key_flow_options{}
          .every_key(pool::key_limit{2, std::nullopt})
          .key("free-tier",
               pool::key_limit{1, pool::start_rate{5, seconds(1)}});
  auto opts = pool::pool_options{}
                  .workers(3)
                  .kind(pool::worker_kind::dedicated)
                  .key_flow(limits);
  // pool: pool::typed_pool<std::string(std::string, int32_t)>.
  auto pool = pool::spawn_typed_pool(sys, render, opts);
  if (!pool) {
    std::cerr << "cannot start pool: " << pool::describe(pool.error()) << '\n';
    return;
  }
  auto enqueue_all = [pool = *pool](caf::event_based_actor* self) {
    auto submit = [&](const std::string& tenant, int32_t priority,
                      int32_t pages) {
      auto opts = pool::job_options{}.concurrency_key(tenant).priority(
          priority);
      for (int32_t page = 1; page <= pages; ++page)
        self->send(pool, pool::enqueue_typed_atom_v, opts, tenant, page);
    };
    // (The first pages of bulk-import start before acme's arrive.)
    submit("bulk-import", 0, 12); // a long backlog
    submit("free-tier", 0, 7); // the 6th waits for the rate: ~1 s
    submit("acme", 5, 3);     // paying: priority 5
    submit("tiny-shop", 0, 1); // one job, behind the backlog
  };
  auto total = 12 + 7 + 3 + 1;
  auto started = steady_clock::now();
  sys.spawn([=](caf::event_based_actor* self) -> caf::behavior {
    enqueue_all(self);
    auto left = std::make_shared<int>(total);
    auto done = [self, left, pool = *pool] {
      if (--*left > 0)
        return;
      self->send_exit(pool::untyped(pool), caf::exit_reason::user_shutdown);
      self->quit();
    };
    return {
      [](uint64_t) {}, // the id of an accepted operation
      [=](pool::op_result_atom, uint64_t, const std::string& what) {
        auto ms = duration_cast<milliseconds>(steady_clock::now() - started);
        std::cout << ms.count() << " ms: " << what << '\n';
        done();
      },
      [=](pool::op_failed_atom, uint64_t id, const caf::error& err) {
        std::cerr << "op " << id << " failed: " << pool::describe(err) << '\n';
        done();
      },
    };
  });
  sys.await_all_actors_done();
  std::cout << "most renders at once per tenant:";
  for (auto& [tenant, n] : meter->most)
    std::cout << ' ' << tenant << ' ' << n;
  std::cout << '\n';
}

CAF_MAIN()
