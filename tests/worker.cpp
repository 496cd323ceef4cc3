// The worker state machine: sleeping -> waiting -> working -> waiting; a
// wake_up while waiting or working changes nothing.
#include <doctest/doctest.h>

#include <stdexcept>

#include "deterministic.hpp"

using namespace std::chrono_literals;
using pool::test::deterministic;

namespace {

auto plus_one = [](int x) {
  if (x < 0)
    throw std::invalid_argument("negative input");
  return x + 1;
};

using worker_type = caf::stateful_actor<pool::worker_state>;

pool::worker_phase phase_of(const caf::actor& worker) {
  auto ptr = caf::actor_cast<caf::abstract_actor*>(worker);
  return dynamic_cast<worker_type&>(*ptr).state.phase;
}

pool::work_record record_of(uint64_t op, caf::message payload) {
  return pool::work_record{pool::attempt_id{op, 1}, std::move(payload)};
}

} // namespace

TEST_CASE_FIXTURE(deterministic,
                  "a worker starts sleeping and a wake_up makes it ask once" *
                      doctest::timeout(30)) {
  auto worker = sys.spawn(pool::worker_actor<decltype(plus_one)>, plus_one);
  run();
  CHECK(phase_of(worker) == pool::worker_phase::sleeping);
  self->send(worker, pool::wake_up_atom_v);
  run();
  CHECK(phase_of(worker) == pool::worker_phase::waiting);
  CHECK(replies() == 1);
  // Waiting: another wake_up changes nothing.
  self->send(worker, pool::wake_up_atom_v);
  run();
  CHECK(phase_of(worker) == pool::worker_phase::waiting);
  CHECK(replies() == 1);
  self->receive([](pool::give_me_work_atom) {});
}

TEST_CASE_FIXTURE(
    deterministic,
    "a wake_up while working is ignored and the attempt is reported" *
        doctest::timeout(30)) {
  auto worker = sys.spawn(pool::worker_actor<decltype(plus_one)>, plus_one);
  self->send(worker, pool::wake_up_atom_v);
  run();
  self->receive([](pool::give_me_work_atom) {});
  // The wake_up lands in the mailbox while the worker is on the job.
  self->send(worker, pool::work_to_do_atom_v,
             record_of(1, caf::make_message(41)));
  self->send(worker, pool::wake_up_atom_v);
  run();
  REQUIRE(replies() == 2); // status_rep and one give_work, nothing more
  self->receive([](pool::status_reply_atom, const pool::attempt_id& id,
                   caf::message& result) {
    CHECK(id.operation == 1);
    REQUIRE(result.match_elements<int>());
    CHECK(result.get_as<int>(0) == 42);
  });
  self->receive([](pool::give_me_work_atom) {});
  CHECK(phase_of(worker) == pool::worker_phase::waiting);
}

TEST_CASE_FIXTURE(deterministic,
                  "go_sleep puts a waiting worker back to sleep" *
                      doctest::timeout(30)) {
  auto worker = sys.spawn(pool::worker_actor<decltype(plus_one)>, plus_one);
  self->send(worker, pool::wake_up_atom_v);
  self->send(worker, pool::go_to_sleep_atom_v);
  run();
  CHECK(phase_of(worker) == pool::worker_phase::sleeping);
  self->send(worker, pool::wake_up_atom_v);
  run();
  CHECK(replies() == 2); // one give_work per wake-up from sleep
}

TEST_CASE_FIXTURE(deterministic,
                  "a job that throws is reported as a failed attempt" *
                      doctest::timeout(30)) {
  auto worker = sys.spawn(pool::worker_actor<decltype(plus_one)>, plus_one);
  self->send(worker, pool::wake_up_atom_v);
  self->send(worker, pool::work_to_do_atom_v,
             record_of(9, caf::make_message(-1)));
  run();
  self->receive([](pool::give_me_work_atom) {});
  self->receive(
      [](pool::status_reply_atom, const pool::attempt_id& id, caf::error& err) {
        CHECK(id.operation == 9);
        CHECK(pool::is(err, pool::pool_errc::job_failed));
        CHECK(pool::describe(err).find("negative input") != std::string::npos);
      });
}

TEST_CASE_FIXTURE(
    deterministic,
    "a payload of the wrong type is refused, the worker lives on" *
        doctest::timeout(30)) {
  auto worker = sys.spawn(pool::worker_actor<decltype(plus_one)>, plus_one);
  self->send(worker, pool::wake_up_atom_v);
  self->send(worker, pool::work_to_do_atom_v,
             record_of(3, caf::make_message(std::string{"text"})));
  self->send(worker, pool::work_to_do_atom_v,
             record_of(4, caf::make_message(1)));
  run();
  self->receive([](pool::give_me_work_atom) {});
  self->receive(
      [](pool::status_reply_atom, const pool::attempt_id&, caf::error& err) {
        CHECK(pool::is(err, pool::pool_errc::wrong_input_type));
        CHECK(pool::describe(err).find(
                  "expected int32_t, got std::string (\"text\")") !=
              std::string::npos);
      });
  self->receive([](pool::give_me_work_atom) {});
  self->receive([](pool::status_reply_atom, const pool::attempt_id& id,
                   caf::message& result) {
    CHECK(id.operation == 4);
    CHECK(result.get_as<int>(0) == 2);
  });
}

TEST_CASE_FIXTURE(deterministic,
                  "worker_actor: an empty payload and a default record are "
                  "refused as inputs, and the worker lives on" *
                      doctest::timeout(30)) {
  auto worker = sys.spawn(pool::worker_actor<decltype(plus_one)>, plus_one);
  self->send(worker, pool::wake_up_atom_v);
  self->send(worker, pool::work_to_do_atom_v, record_of(5, caf::message{}));
  self->send(worker, pool::work_to_do_atom_v, pool::work_record{});
  run();
  for (int i = 0; i < 2; ++i) {
    self->receive([](pool::give_me_work_atom) {});
    self->receive(
        [](pool::status_reply_atom, const pool::attempt_id&, caf::error& err) {
          CHECK(pool::describe(err).find("expected int32_t, got no value") !=
                std::string::npos);
        });
  }
  CHECK(phase_of(worker) == pool::worker_phase::waiting);
}
