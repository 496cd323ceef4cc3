// Quickstart: a pool of four workers squares numbers for an actor and for
// plain code.
#include <caf/all.hpp>
#include <pool/all.hpp>

struct config : caf::actor_system_config {
  config() {
    pool::configure(*this);
  }
};

void caf_main(caf::actor_system& sys, const config&) {
  auto square = [](int x) { return x * x; };
  auto pool = pool::spawn_pool(sys, square, pool::pool_options{}.workers(4));
  if (!pool) {
    std::cerr << "cannot start pool: " << pool::describe(pool.error()) << '\n';
    return;
  }
  // From an actor: request and get the result (or a caf::error) back.
  sys.spawn([pool = *pool](caf::event_based_actor* self) {
    for (int i = 1; i <= 3; ++i)
      self->request(pool, std::chrono::seconds(10), pool::submit_atom_v, i)
          .then([i](int y) { std::cout << i << "^2 = " << y << '\n'; },
                [](caf::error& err) {
                  std::cerr << "failed: " << pool::describe(err) << '\n';
                });
  });
  // From plain code: block for the answer, or take a future.
  auto seven =
      pool::blocking_submit<int>(sys, *pool, std::chrono::seconds(10), 7);
  std::cout << "7^2 = " << (seven ? *seven : -1) << '\n';
  auto eight = pool::submit_future<int>(sys, *pool, 8);
  auto result = eight.get();
  std::cout << "8^2 = " << (result ? *result : -1) << '\n';
}

CAF_MAIN()
