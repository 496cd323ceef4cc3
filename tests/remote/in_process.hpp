// What the in-process remote tests share (faults.cpp, health.cpp): the pool
// and its nodes in two actor systems of the test process, on 127.0.0.1; a
// published pool, captured log lines, and a batch of submits with its
// outcomes. Every wait is bounded. Included by one test file per
// executable.
#pragma once

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <pool/all.hpp>
#include <pool/remote.hpp>

#include "demo_job.hpp"

using namespace std::chrono_literals;

namespace {

struct remote_config : caf::actor_system_config {
  remote_config() {
    pool::configure_remote(*this);
    set("logger.verbosity", caf::atom("quiet"));
  }
};

constexpr const char* token = "in-process-token";

bool eventually(std::function<bool()> pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

/// Log lines with the time each came, kept for checks (the hook may be
/// called after the test, and from any thread).
struct captured {
  using time_point = std::chrono::steady_clock::time_point;
  std::shared_ptr<std::mutex> mtx = std::make_shared<std::mutex>();
  std::shared_ptr<std::vector<std::pair<time_point, std::string>>> lines =
      std::make_shared<std::vector<std::pair<time_point, std::string>>>();

  pool::log_hook hook() {
    return [mtx = mtx, lines = lines](pool::log_level, const std::string&,
                                      const std::string& x) {
      std::lock_guard<std::mutex> guard{*mtx};
      lines->emplace_back(std::chrono::steady_clock::now(), x);
    };
  }

  /// When the first line that holds `text` came, if one did.
  std::optional<time_point> first(const std::string& text) const {
    std::lock_guard<std::mutex> guard{*mtx};
    for (auto& [when, x] : *lines)
      if (x.find(text) != std::string::npos)
        return when;
    return std::nullopt;
  }

  bool contains(const std::string& text) const {
    return first(text).has_value();
  }
};

using job_fn = int64_t (*)(int32_t);

/// A pool whose local workers run `job`, published behind a gatekeeper
/// that logs into `log`.
struct published {
  caf::actor_system& sys;
  caf::actor pool;
  caf::actor gatekeeper;
  uint16_t port = 0;
  captured log;

  published(caf::actor_system& sys, pool::remote_options remote,
            pool::pool_options opts, job_fn job = remote_demo::hash_job)
      : sys(sys) {
    auto spawned =
        pool::spawn_pool(sys, job, opts.log(pool::silent_log_hook()));
    REQUIRE(spawned);
    pool = *spawned;
    remote.token(token).log(log.hook());
    auto gk = pool::spawn_gatekeeper<int64_t(int32_t)>(sys, pool, remote);
    REQUIRE(gk);
    gatekeeper = *gk;
    auto bound = pool::publish_gatekeeper(sys, gatekeeper, remote);
    REQUIRE_MESSAGE(bound, pool::describe_remote(bound.error()));
    port = *bound;
  }

  ~published() {
    caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
  }

  pool::pool_stats stats() {
    caf::scoped_actor self{sys};
    pool::pool_stats result;
    self->request(pool, 10s, pool::pool_stats_atom_v)
        .receive([&](pool::pool_stats& x) { result = x; },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
    return result;
  }

  pool::gatekeeper_stats counters() {
    caf::scoped_actor self{sys};
    pool::gatekeeper_stats result;
    self->request(gatekeeper, 10s, pool::control_atom_v, std::string{token},
                  pool::gatekeeper_stats_atom_v)
        .receive([&](pool::gatekeeper_stats& x) { result = x; },
                 [](caf::error& err) { FAIL(pool::describe_remote(err)); });
    return result;
  }

  /// Submits 1..n; returns how many came back right within `limit`. A
  /// wrong or duplicate result fails the test; errors are printed.
  int32_t run(int32_t n, std::chrono::seconds limit = 30s) {
    caf::scoped_actor self{sys};
    auto collector = caf::actor_cast<caf::actor>(self);
    sys.spawn([=, pool = pool](caf::event_based_actor* submitter) {
      for (int32_t x = 1; x <= n; ++x)
        submitter->request(pool, caf::infinite, pool::submit_atom_v, x)
            .then([=](int64_t y) { submitter->send(collector, x, y); },
                  [=](caf::error& err) { submitter->send(collector, x, err); });
    });
    std::map<int32_t, int> seen;
    int32_t right = 0;
    auto deadline = std::chrono::steady_clock::now() + limit;
    for (int32_t i = 0; i < n; ++i) {
      auto left = deadline - std::chrono::steady_clock::now();
      if (left <= 0s) {
        FAIL("not every result within the time limit");
        break;
      }
      self->receive(
          [&](int32_t x, int64_t y) {
            CHECK(y == remote_demo::hash_job(x));
            CHECK(++seen[x] == 1);
            right += y == remote_demo::hash_job(x) ? 1 : 0;
          },
          [&](int32_t x, caf::error& err) {
            CHECK(++seen[x] == 1);
            MESSAGE(x << ": " << pool::describe(err));
          },
          caf::after(std::chrono::duration_cast<caf::timespan>(left)) >> [] {});
    }
    return right;
  }

  /// Submits 1..n and checks that every result came back right, once.
  void run_and_check(int32_t n) {
    CHECK(run(n) == n);
  }
};

/// Makes joined nodes leave at scope exit, also when a check failed (an
/// actor system waits for its actors when destroyed).
struct leave_at_exit {
  caf::actor_system& sys;
  std::vector<caf::actor> nodes;

  ~leave_at_exit() {
    for (auto& node : nodes)
      CHECK(!pool::leave_remote_pool(sys, node));
  }
};

} // namespace
