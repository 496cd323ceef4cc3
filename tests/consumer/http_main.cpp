// Uses the installed HTTP endpoint: a pool served on loopback, one
// operation, its figure read back from /metrics.
#include <iostream>
#include <thread>

#include <caf/all.hpp>
#include <httplib.h>
#include <pool/all.hpp>
#include <pool/http.hpp>

namespace {

struct config : caf::actor_system_config {
  config() {
    pool::configure(*this);
    set("logger.verbosity", caf::atom("quiet"));
  }
};

} // namespace

int main() {
  config cfg;
  caf::actor_system sys{cfg};
  auto pool = pool::spawn_pool(sys, [](int32_t x) { return x + 1; },
                               pool::pool_options{}.workers(1));
  if (!pool)
    return 1;
  pool::http_options opts;
  opts.sample_interval = std::chrono::milliseconds(20);
  auto ep = pool::serve_http(sys, {{"consumer", *pool}}, opts);
  if (!ep) {
    std::cerr << pool::describe(ep.error()) << '\n';
    return 1;
  }
  if (pool::blocking_submit<int32_t>(sys, *pool, std::chrono::seconds(10), 1) != 2)
    return 1;
  httplib::Client cli{"127.0.0.1", (*ep)->port()};
  const std::string want = "pool_operations_completed_total{pool=\"consumer\"} 1";
  for (int i = 0; i < 250; ++i) {
    auto res = cli.Get("/metrics");
    if (res && res->body.find(want) != std::string::npos) {
      std::cout << "consumer_http: ok" << std::endl;
      ep->reset();
      caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::cerr << "consumer_http: /metrics never showed the operation\n";
  return 1;
}
