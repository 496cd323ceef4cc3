// Child process of the crash-loop test (tests/durable_crash.cpp), killed
// with SIGKILL at random moments and started again over the same store.
//
//   durable_child STORE DIR COUNT GENERATION
//
// Submits operations 1..COUNT as unique operations (key "op-<n>") to a
// durable pool over STORE, skipping those its journal says were
// acknowledged, and appends to files in DIR with single write(2) calls
// (which survive SIGKILL):
// - `journal`: `ack <n> <id>` once the pool acknowledged operation n;
// - `runs`: `run <n> <GENERATION>` each time a job starts on input n.
// Exits 0 once every operation is acknowledged and the pool is idle.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iostream>
#include <set>
#include <string>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <pool/all.hpp>

using namespace std::chrono_literals;

namespace {

/// Appends `line` with one write(2) call.
void append(const std::string& path, const std::string& line) {
  auto fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0 || ::write(fd, line.data(), line.size()) !=
                    static_cast<ssize_t>(line.size())) {
    std::perror(path.c_str());
    std::_Exit(2);
  }
  ::close(fd);
}

std::set<int> acknowledged(const std::string& journal) {
  std::set<int> result;
  std::ifstream in{journal};
  std::string word;
  int n = 0;
  uint64_t id = 0;
  while (in >> word >> n >> id)
    result.insert(n);
  return result;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: durable_child STORE DIR COUNT GENERATION\n";
    return 255;
  }
  std::string store = argv[1];
  std::string dir = argv[2];
  auto count = std::atoi(argv[3]);
  std::string generation = argv[4];
  auto journal = dir + "/journal";
  auto runs = dir + "/runs";
  caf::actor_system_config cfg;
  pool::configure(cfg);
  cfg.set("logger.verbosity", caf::atom("quiet"));
  caf::actor_system sys{cfg};
  auto job = [runs, generation](int n) {
    append(runs, "run " + std::to_string(n) + " " + generation + "\n");
    // Work that takes a while: 4,000 jobs on 2 workers take 8 s, longer
    // than the crash loop's 24 kills can (at most 200 ms each), so the
    // work is never done before the loop has killed enough incarnations
    // (an incarnation over a finished store exits in about 10 ms).
    std::this_thread::sleep_for(4ms);
    return n * 2;
  };
  auto pool = pool::spawn_pool(sys, job,
                               pool::pool_options{}
                                   .workers(2)
                                   .kind(pool::worker_kind::dedicated)
                                   .durable(store)
                                   .log(pool::silent_log_hook()));
  if (!pool) {
    std::cerr << "durable_child: " << pool::describe(pool.error()) << '\n';
    return 1;
  }
  // An event-based submitter: all submits at once, journaled as the pool
  // acknowledges them (in groups, one commit each).
  auto done = acknowledged(journal);
  std::promise<void> all_acked;
  sys.spawn([&, pool = *pool](caf::event_based_actor* submitter) {
    auto missing = std::make_shared<size_t>(0);
    for (int n = 1; n <= count; ++n) {
      if (done.count(n) > 0)
        continue;
      ++*missing;
      submitter
          ->request(pool, caf::infinite, pool::enqueue_unique_atom_v,
                    "op-" + std::to_string(n), n)
          .then(
              [&, submitter, missing, n](uint64_t id) {
                append(journal, "ack " + std::to_string(n) + " " +
                                    std::to_string(id) + "\n");
                if (--*missing == 0) {
                  all_acked.set_value();
                  submitter->quit();
                }
              },
              [](caf::error& err) {
                std::cerr << "durable_child: " << pool::describe(err) << '\n';
                std::_Exit(1);
              });
    }
    if (*missing == 0) {
      all_acked.set_value();
      submitter->quit();
    }
  });
  all_acked.get_future().wait();
  caf::scoped_actor self{sys};
  // Wait until the pool is idle: everything acknowledged has run.
  auto deadline = std::chrono::steady_clock::now() + 120s;
  for (;;) {
    pool::pool_stats st;
    self->request(*pool, 10s, pool::pool_stats_atom_v)
        .receive([&](pool::pool_stats& x) { st = x; },
                 [](caf::error& err) {
                   std::cerr << "durable_child: " << pool::describe(err)
                             << '\n';
                   std::_Exit(1);
                 });
    if (st.available == 0 && st.delayed == 0 && st.busy == 0)
      break;
    if (std::chrono::steady_clock::now() > deadline) {
      std::cerr << "durable_child: not idle after 120 s\n";
      return 1;
    }
    std::this_thread::sleep_for(5ms); // a poll, in a test helper process
  }
  // A drain answers once the last outcomes are on disk.
  self->request(*pool, 10s, pool::drain_atom_v)
      .receive([] {},
               [](caf::error& err) {
                 std::cerr << "durable_child: " << pool::describe(err) << '\n';
                 std::_Exit(1);
               });
  return 0;
}
