// send_spread: an actor made runnable by a sender that keeps its thread goes
// to a sleeping scheduler thread; otherwise it is queued as CAF queues it.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <caf/all.hpp>
#include <caf/policy/work_stealing.hpp>
#include <caf/scheduler/coordinator.hpp>
#include <caf/scheduler/worker.hpp>

#include "pool/spread.hpp"
#include "real_system.hpp"

using namespace std::chrono_literals;

namespace {

using stealing_thread = caf::scheduler::worker<caf::policy::work_stealing>;

struct two_threads : pool::test::real_config {
  two_threads() {
    set("scheduler.max-threads", size_t{2});
  }
};

/// What the sender saw right after its send.
struct seen {
  std::atomic<bool> done{false};
  bool other_slept = false;      // another thread slept before the send
  bool queued_here = false;      // the receiver sat on the sender's queue
  std::atomic<bool> received{false};
};

bool any_other_sleeping(stealing_thread* here) {
  auto coordinator = here->parent();
  for (size_t i = 0; i < coordinator->num_workers(); ++i) {
    auto other = coordinator->worker_by_id(i);
    if (other == here)
      continue;
    auto& wait = other->data().waitdata;
    std::lock_guard<std::mutex> guard{wait.lock};
    if (wait.sleeping)
      return true;
  }
  return false;
}

/// In a system of two scheduler threads, spawns a receiver and a sender;
/// the sender, given `more_mail`, first mails itself (so it has more mail
/// when it sends), waits until another thread sleeps (at most 5 s), then
/// sends to the idle receiver.
void run(seen& s, bool more_mail) {
  two_threads cfg;
  caf::actor_system sys{cfg};
  auto receiver = sys.spawn([&s](caf::event_based_actor*) -> caf::behavior {
    return {[&s](int32_t) {
      s.received = true;
    }};
  });
  auto sender = sys.spawn([&s, receiver,
                           more_mail](caf::event_based_actor* self)
                              -> caf::behavior {
    return {
      [=, &s](const std::string&) {
        auto here = dynamic_cast<stealing_thread*>(self->context());
        REQUIRE(here != nullptr);
        if (more_mail)
          self->send(self, int32_t{0});
        auto until = std::chrono::steady_clock::now() + 5s;
        while (!any_other_sleeping(here)
               && std::chrono::steady_clock::now() < until)
          std::this_thread::sleep_for(100us);
        s.other_slept = any_other_sleeping(here);
        pool::send_spread(self, receiver, caf::make_message(int32_t{1}));
        s.queued_here = !here->data().queue.empty();
        s.done = true;
      },
      [](int32_t) {},
    };
  });
  caf::anon_send(sender, std::string{"go"});
  auto until = std::chrono::steady_clock::now() + 10s;
  while (!(s.done && s.received) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  REQUIRE(s.done);
  REQUIRE(s.received);
  caf::anon_send_exit(sender, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(receiver, caf::exit_reason::user_shutdown);
  REQUIRE(s.other_slept);
}

} // namespace

TEST_CASE("a sender with more mail puts the actor it wakes on a sleeping "
          "thread" * doctest::timeout(30)) {
  // It goes to the sleeping thread's queue. (Where it then runs is up to
  // the scheduler: a thread that goes idle first may steal it.) The other
  // thread's timed wait can end between the check that saw it asleep and
  // the send, and then the send rightly keeps the receiver here; a send
  // that never spread would keep it here every time, so up to five tries
  // tell the two apart.
  bool spread = false;
  for (int attempt = 0; attempt < 5 && !spread; ++attempt) {
    seen s;
    run(s, true);
    spread = !s.queued_here;
  }
  CHECK(spread);
}

TEST_CASE("a sender with no more mail queues the actor it wakes on its own "
          "thread, waking nobody" * doctest::timeout(30)) {
  // The other thread steals only when its 10 ms wait times out, so the
  // receiver is normally still on this thread's queue right after the
  // send. Under a loaded machine that wait can end inside the window and
  // the thread steals it; a send that woke the other thread would miss
  // this queue every time, so up to five tries tell the two apart.
  bool queued_here = false;
  for (int attempt = 0; attempt < 5 && !queued_here; ++attempt) {
    seen s;
    run(s, false);
    queued_here = s.queued_here;
  }
  CHECK(queued_here);
}

TEST_CASE("a detached sender sends as usual" * doctest::timeout(30)) {
  pool::test::real_config cfg;
  caf::actor_system sys{cfg};
  std::atomic<int32_t> got{0};
  auto receiver = sys.spawn([&got](caf::event_based_actor*) -> caf::behavior {
    return {[&got](int32_t x) { got = x; }};
  });
  auto sender = sys.spawn<caf::detached>(
    [receiver](caf::event_based_actor* self) -> caf::behavior {
      return {[=](const std::string&) {
        self->send(self, int32_t{0}); // more mail: still a plain send
        pool::send_spread(self, receiver, int32_t{7}); // (values as they are)
      },
              [](int32_t) {}};
    });
  caf::anon_send(sender, std::string{"go"});
  auto until = std::chrono::steady_clock::now() + 10s;
  while (got != 7 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  CHECK(got == 7);
  caf::anon_send_exit(sender, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(receiver, caf::exit_reason::user_shutdown);
}

TEST_CASE("send_spread: a null receiver is a no-op" * doctest::timeout(30)) {
  pool::test::real_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto reply_to = caf::actor_cast<caf::actor>(self);
  sys.spawn([reply_to](caf::event_based_actor* sender) {
    pool::send_spread(sender, caf::actor{}, 1);
    sender->send(reply_to, std::string{"sent"});
  });
  std::string got;
  self->receive([&](std::string& x) { got = x; }, caf::after(10s) >> [] {});
  CHECK(got == "sent");
}
