#pragma once

// A recorder of the shepherd's effects, for testing the plain units and the
// shepherd core without an actor system: time is a number the test moves,
// and every send, timer, answer and log line is kept in order.

#include <string>
#include <utility>
#include <vector>

#include <caf/atom.hpp>
#include <caf/message.hpp>

#include <pool/detail/shepherd_effects.hpp>
#include <pool/type_ids.hpp>
#include <pool/work_record.hpp>

namespace pool::test {

struct fake_effects : shepherd_effects {
  /// One effect: what it was and its message.
  struct entry {
    std::string what;
    caf::message msg;
    /// For `to_worker`: the worker's key; for `respond`: the request id.
    uint64_t who = 0;
  };

  time_point clock{std::chrono::seconds(1000)};
  std::vector<entry> log_;
  std::vector<std::pair<caf::timespan, timer_event>> timers;
  std::vector<pool_event> events;
  std::vector<std::string> lines;
  caf::error quit_reason;
  bool quit_called = false;
  bool alive_ref = false;
  size_t spawned = 0;
  uint32_t wanted = ~uint32_t{0};

  time_point now() const override {
    return clock;
  }

  void to_queue(caf::message msg) override {
    log_.push_back({"queue", std::move(msg), 0});
  }

  void to_worker(const worker_slot& w, caf::message msg) override {
    log_.push_back({"worker", std::move(msg), key_number(w.key)});
  }

  /// Made-up keys: 1, 2, 3, ... in spawn order.
  worker_handle spawn_worker() override {
    ++spawned;
    return worker_handle{caf::actor{}, fake_key(spawned)};
  }

  static const void* fake_key(size_t n) {
    return reinterpret_cast<const void*>(n * 16);
  }

  static uint64_t key_number(const void* key) {
    return reinterpret_cast<uintptr_t>(key) / 16;
  }

  void watch_worker(const caf::actor&) override {
    // nop
  }

  void stop_worker(const worker_handle& w, bool kill) override {
    log_.push_back({kill ? "kill" : "stop", caf::message{}, key_number(w.key)});
  }

  using shepherd_effects::respond; // (a prepared reply, as a message)

  void respond(const reply_to& to, caf::message&& msg) override {
    log_.push_back({"respond", std::move(msg), to.id.integer_value()});
  }

  void deliver(caf::response_promise&, caf::message msg) override {
    log_.push_back({"deliver", std::move(msg), 0});
  }

  void tell(const caf::strong_actor_ptr&, caf::message msg) override {
    log_.push_back({"tell", std::move(msg), 0});
  }

  void watch_caller(const caf::actor_addr&, bool) override {
    // nop
  }

  void keep_alive(bool on) override {
    alive_ref = on;
  }

  void schedule(caf::timespan delay, timer_event ev) override {
    timers.emplace_back(delay, ev);
  }

  bool wants(event_kind kind) const override {
    return (wanted & event_bit(kind)) != 0;
  }

  void publish(pool_event ev) override {
    events.push_back(std::move(ev));
  }

  void log(log_level, const std::string& text) override {
    lines.push_back(text);
  }

  void quit(caf::error reason) override {
    quit_called = true;
    quit_reason = std::move(reason);
  }

  /// Effects of kind `what` recorded so far.
  size_t count(const std::string& what) const {
    size_t n = 0;
    for (auto& x : log_)
      n += x.what == what ? 1 : 0;
    return n;
  }

  /// Messages to the queue or to workers that start with `atom`.
  size_t count_atom(const std::string& what, caf::atom_value atom) const {
    size_t n = 0;
    for (auto& x : log_)
      if (x.what == what && x.msg.match_element<caf::atom_value>(0) &&
          x.msg.get_as<caf::atom_value>(0) == atom)
        ++n;
    return n;
  }

  /// The records of every `work_to_do` sent to workers, in order, in any of
  /// its forms (one record, a batch, handed or sent ahead under a ticket);
  /// a record handed ahead to several workers counts once.
  std::vector<work_record> handed_out() const {
    std::vector<work_record> result;
    auto add = [&](const work_record& x) {
      for (auto& y : result)
        if (y.id == x.id)
          return;
      result.push_back(x);
    };
    for (auto& e : log_) {
      if (e.what != "worker" || !e.msg.match_element<work_to_do_atom>(0))
        continue;
      if (e.msg.match_element<work_record>(1))
        add(e.msg.get_as<work_record>(1));
      else if (e.msg.match_element<std::vector<work_record>>(1))
        for (auto& x : e.msg.get_as<std::vector<work_record>>(1))
          add(x);
    }
    return result;
  }

  /// Whether any log line contains `text`.
  bool logged(const std::string& text) const {
    for (auto& line : lines)
      if (line.find(text) != std::string::npos)
        return true;
    return false;
  }
};

} // namespace pool::test
