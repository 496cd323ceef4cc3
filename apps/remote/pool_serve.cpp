// Pool server: spawns a pool running the demo job, publishes it for remote
// worker nodes and operators, and serves until it is drained.
//
//   pool_serve [--token-file FILE] [--port P] [--bind ADDRESS]
//              [--reuse-address] [--workers N] [--max-attempts N]
//              [--submit N] [--durable FILE] [--delay-ms D]
//              [--http ADDR:PORT]
//
// The token comes from --token-file, POOL_TOKEN_FILE or POOL_TOKEN, never
// from the command line (see `--help`).
//
// The first line on stdout is the port. With `--submit N` it submits the
// inputs 1..N itself and prints `completed <n> correct <k>` once all are
// done. With `--durable FILE` the queue is an SQLite file and the submits
// are unique (key `input:<x>`): a server restarted over the same file
// after a crash submits 1..N again, adopts what was unfinished, finds what
// was done, and runs nothing twice that had finished. It stops, exit
// status 0, when the pool stops (`poolctl ... drain`) or on SIGINT/SIGTERM.
// `--delay-ms D` makes each local job sleep D ms first (as pool_node's).
// `--http ADDR:PORT` also serves metrics, JSON and the live page there
// (pool::serve_http; the actions take the same token); its URL goes to
// stderr.
#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include <caf/all.hpp>
#include <pool/all.hpp>
#include <pool/http.hpp>
#include <pool/remote.hpp>

#include "command_line.hpp"
#include "demo_job.hpp"

namespace {

constexpr const char* usage =
    "usage: pool_serve [--token-file FILE] [--port P] [--bind ADDRESS] "
    "[--reuse-address] [--workers N] [--max-attempts N] [--submit N] "
    "[--durable FILE] [--delay-ms D] [--http ADDR:PORT]";

/// Submits 1..n in batches (one actor per batch keeps each actor's list of
/// pending requests short) and prints the tally once every answer is in.
/// `unique`: submits `(enq_unique, "input:<x>", x)` and follows each
/// operation by id (`op_status`, every 100 ms) until it finished, in this
/// run or an earlier one over the same durable file.
void submit_all(caf::actor_system& sys, const caf::actor& pool, int32_t n,
                bool unique) {
  struct tally {
    int32_t done = 0;
    int32_t correct = 0;
    int32_t total = 0;
  };
  auto count = std::make_shared<tally>();
  count->total = n;
  // One shared counter, updated from one actor: the collector.
  auto collector = sys.spawn([count](caf::event_based_actor*) {
    return caf::behavior{[count](bool ok) {
      ++count->done;
      count->correct += ok ? 1 : 0;
      if (count->done == count->total)
        std::cout << "completed " << count->done << " correct "
                  << count->correct << std::endl;
    }};
  });
  constexpr int32_t batch = 100;
  for (int32_t first = 1; first <= n; first += batch) {
    auto last = std::min(n, first + batch - 1);
    if (unique) {
      sys.spawn([=](caf::event_based_actor* self) -> caf::behavior {
        auto follow = [=](uint64_t id, int32_t x) {
          self->request(pool, std::chrono::seconds(10), pool::op_status_atom_v,
                        id)
              .then(
                  [=](pool::operation_record& rec) {
                    if (rec.state == pool::operation_state::done)
                      self->send(collector,
                                 rec.result.match_elements<int64_t>() &&
                                     rec.result.get_as<int64_t>(0) ==
                                         remote_demo::hash_job(x));
                    else if (!pool::is_unfinished(rec.state))
                      self->send(collector, false);
                    else
                      self->delayed_send(self, std::chrono::milliseconds(100),
                                         id, x);
                  },
                  [=](caf::error&) { self->send(collector, false); });
        };
        for (auto x = first; x <= last; ++x)
          self->request(pool, caf::infinite, pool::enqueue_unique_atom_v,
                        "input:" + std::to_string(x), x)
              .then([=](uint64_t id) { follow(id, x); },
                    [=](caf::error&) { self->send(collector, false); });
        return {
            [=](uint64_t id, int32_t x) { follow(id, x); },
            // Enqueued operations report to their submitter too; the
            // status lookups cover adopted ones as well.
            [](pool::op_done_atom, uint64_t, const caf::message&) {},
            [](pool::op_failed_atom, uint64_t, const caf::error&) {},
        };
      });
      continue;
    }
    sys.spawn([=](caf::event_based_actor* self) {
      for (auto x = first; x <= last; ++x)
        self->request(pool, caf::infinite, pool::submit_atom_v, x)
            .then(
                [=](int64_t y) {
                  self->send(collector, y == remote_demo::hash_job(x));
                },
                [=](caf::error&) { self->send(collector, false); });
    });
  }
}

} // namespace

int main(int argc, char** argv) {
  auto args = remote_demo::parse_command_line(argc, argv, {"reuse-address"});
  auto port = args.number("port", 0, UINT16_MAX);
  auto workers = args.number("workers", 1, 10000);
  auto attempts = args.number("max-attempts", 3, 1000);
  auto submit = args.number("submit", 0, INT32_MAX);
  auto durable = args.text("durable");
  auto delay_ms = args.number("delay-ms", 0, 60000);
  if (args.has("help")) {
    std::cout << usage << "\n\n" << remote_demo::token_help;
    return 0;
  }
  if (!args.error.empty() || !port || !workers || *workers == 0 || !attempts ||
      *attempts == 0 || !submit || !delay_ms ||
      (args.has("durable") && durable.empty())) {
    std::cerr << (args.error.empty() ? "" : args.error + "\n") << usage << '\n';
    return 2;
  }
  std::string why;
  auto token = remote_demo::token_of(args, why);
  if (!token) {
    std::cerr << "pool_serve: " << why << '\n';
    return 2;
  }
  auto signals = remote_demo::block_stop_signals();
  caf::actor_system_config cfg;
  remote_demo::configure(cfg);
  caf::actor_system sys{cfg};
  auto opts = pool::pool_options{}
                  .workers(*workers)
                  .kind(pool::worker_kind::dedicated)
                  .max_attempts(static_cast<uint32_t>(*attempts))
                  .name("pool_serve");
  if (!durable.empty())
    // Finished operations keep their unique keys for good: a restarted
    // server re-submitting 1..N adds nothing that already ran.
    opts.durable(durable).unique_window(caf::timespan::max());
  auto delay = std::chrono::milliseconds(*delay_ms);
  // Dedicated workers may block, so the optional delay is a plain sleep.
  auto job = [delay](int32_t x) -> int64_t {
    if (delay.count() > 0)
      std::this_thread::sleep_for(delay);
    return remote_demo::hash_job(x);
  };
  auto pool = pool::spawn_pool(sys, job, opts);
  if (!pool) {
    std::cerr << "cannot start the pool: " << pool::describe(pool.error())
              << '\n';
    return 1;
  }
  auto remote = pool::remote_options{}
                    .token(*token)
                    .bind_address(args.text("bind", "127.0.0.1"))
                    .port(static_cast<uint16_t>(*port))
                    .reuse_address(args.has("reuse-address"));
  auto bound =
      pool::publish_pool<decltype(remote_demo::hash_job)>(sys, *pool, remote);
  if (!bound) {
    std::cerr << "cannot publish the pool: "
              << pool::describe_remote(bound.error()) << '\n';
    caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
    return 1;
  }
  std::unique_ptr<pool::http_endpoint> http;
  if (args.has("http")) {
    pool::http_options hopts;
    hopts.token = *token;
    auto ep = pool::parse_http_address(args.text("http"), hopts);
    auto served = ep ? caf::expected<std::unique_ptr<pool::http_endpoint>>{ep}
                     : pool::serve_http(sys, {{"pool_serve", *pool}}, hopts);
    if (!served) {
      std::cerr << "cannot serve http: " << pool::describe(served.error())
                << '\n';
      caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
      return 1;
    }
    http = std::move(*served);
    std::cerr << "http: " << http->url() << "/" << std::endl;
  }
  std::cout << *bound << std::endl;
  if (*submit > 0)
    submit_all(sys, *pool, static_cast<int32_t>(*submit), !durable.empty());
  auto signalled = remote_demo::wait_for_stop(sys, *pool, signals);
  if (signalled)
    caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
  http.reset();
  std::cout << "pool stopped" << std::endl;
  return 0;
}
