// Workers that own a resource: made when a worker starts, released when it
// stops, replaced fresh when a job reports it broken.
#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <memory>

#include "real_system.hpp"
#include "sqlite_files.hpp"

using namespace std::chrono_literals;

namespace {

/// Counts connections: made, closed, open now and most open at once.
struct connection_counts {
  std::atomic<int> made{0};
  std::atomic<int> closed{0};
  std::atomic<int> open{0};
  std::atomic<int> most_open{0};
};

/// A stand-in for a database connection that counts its lifetime.
class connection {
public:
  explicit connection(std::shared_ptr<connection_counts> counts)
      : counts_(std::move(counts)), id_(++counts_->made) {
    auto now = ++counts_->open;
    auto seen = counts_->most_open.load();
    while (now > seen && !counts_->most_open.compare_exchange_weak(seen, now))
      ; // retry
  }

  connection(connection&& other) noexcept
      : counts_(std::move(other.counts_)), id_(other.id_) {
    // The moved-from object no longer owns the connection.
  }

  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  connection& operator=(connection&&) = delete;

  ~connection() {
    if (counts_) {
      ++counts_->closed;
      --counts_->open;
    }
  }

  int id() const {
    return id_;
  }

private:
  std::shared_ptr<connection_counts> counts_;
  int id_;
};

} // namespace

TEST_CASE("resources are made per worker, replaced when broken, balanced "
          "and never more than the worker count" *
          doctest::timeout(60)) {
  pool::test::real_config cfg;
  auto counts = std::make_shared<connection_counts>();
  {
    caf::actor_system sys{cfg};
    auto make = [counts] { return connection{counts}; };
    // Every 10th input breaks its worker's connection.
    auto query = [](connection& conn, int x) {
      if (x % 10 == 0)
        throw pool::resource_broken("connection reset by peer");
      return conn.id() > 0 ? x : -1;
    };
    auto pool = pool::spawn_resource_pool(
        sys, make, query,
        pool::pool_options{}.workers(3).max_attempts(1).restart_intensity(1000,
                                                                          10s));
    REQUIRE(pool);
    std::vector<std::future<caf::expected<int>>> results;
    for (int i = 1; i <= 200; ++i)
      results.push_back(pool::submit_future<int>(sys, *pool, i));
    int ok = 0;
    int broken = 0;
    for (int i = 1; i <= 200; ++i) {
      REQUIRE(results[i - 1].wait_for(30s) == std::future_status::ready);
      auto r = results[i - 1].get();
      if (r) {
        CHECK(*r == i);
        ++ok;
      } else {
        auto history = pool::attempt_history(r.error());
        REQUIRE(history.size() == 1);
        CHECK(pool::is(history[0].reason, pool::pool_errc::resource_broken));
        ++broken;
      }
    }
    CHECK(ok == 180);
    CHECK(broken == 20);
    caf::scoped_actor self{sys};
    auto st = pool::test::stats_now(self, *pool);
    CHECK(st.worker_restarts == 20);
    // The last replacement makes its connection when it first runs, which
    // may be just after the shepherd counted the restart: wait for it, with
    // a bound.
    for (int i = 0; i < 500 && (counts->made < 23 || counts->open != 3); ++i)
      self->receive(caf::after(std::chrono::milliseconds(10)) >> [] {});
    CHECK(st.workers == 3);
    // Three workers, three open connections; 20 broken ones were replaced.
    CHECK(counts->open == 3);
    CHECK(counts->made == 23);
    CHECK(counts->most_open <= 3);
    self->send_exit(*pool, caf::exit_reason::user_shutdown);
  }
  // The actor system is gone: every worker stopped and released its
  // connection.
  CHECK(counts->made == counts->closed);
  CHECK(counts->open == 0);
}

TEST_CASE("a resource pool checks the job's inputs, not the resource" *
          doctest::timeout(30)) {
  pool::test::real_config cfg;
  caf::actor_system sys{cfg};
  auto pool = pool::spawn_resource_pool(
      sys, [] { return std::string{"conn"}; },
      [](std::string& conn, int x) { return conn + ":" + std::to_string(x); },
      pool::pool_options{}.workers(1));
  REQUIRE(pool);
  auto r = pool::blocking_submit<std::string>(sys, *pool, 10s, 5);
  REQUIRE(r);
  CHECK(*r == "conn:5");
  auto bad =
      pool::blocking_submit<std::string>(sys, *pool, 10s, std::string{"x"});
  REQUIRE(!bad);
  CHECK(pool::is(bad.error(), pool::pool_errc::wrong_input_type));
}

TEST_CASE("a resource pool keeps its queue where the options say: a durable "
          "file" * doctest::timeout(30)) {
  // (It used to take an in-memory queue whatever the options said.)
  pool::test::temp_dir dir;
  auto path = dir.path + "/resources.db";
  pool::test::real_config cfg;
  caf::actor_system sys{cfg};
  auto pool = pool::spawn_resource_pool(
      sys, [] { return 2; }, [](int& factor, int x) { return factor * x; },
      pool::pool_options{}.workers(1).durable(path));
  REQUIRE(pool);
  auto r = pool::blocking_submit<int>(sys, *pool, 10s, 21);
  REQUIRE(r);
  CHECK(*r == 42);
  CHECK(std::filesystem::exists(path));
  caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
}

TEST_CASE("a resource pool refuses bad options before it opens a store" *
          doctest::timeout(30)) {
  pool::test::real_config cfg;
  caf::actor_system sys{cfg};
  auto pool = pool::spawn_resource_pool(
      sys, [] { return 2; }, [](int& factor, int x) { return factor * x; },
      pool::pool_options{}.workers(0));
  REQUIRE(!pool);
  CHECK(pool::is(pool.error(), pool::pool_errc::invalid_option));
}
