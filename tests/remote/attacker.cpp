// A stranger without the token, for the attack tests (attack.cpp): it tries
// to read, change and stop a published pool by guessing actor ids.
//
//   remote_attacker caf|probe HOST PORT MAX_ID NODE
//   remote_attacker flood HOST PORT CONNECTIONS
//
// NODE is the CAF node id of a legitimate node (`HEX#PID`, as pool_node
// prints it). `caf` uses CAF's own API: remote_actor, remote_lookup of the
// named actors, and proxies for every id in 1..MAX_ID of the pool's node
// (made through the BASP broker's proxy registry), to which it sends
// requests for stats, a resize, a drain, a cancel, submits, a subscription
// and a join of its own worker, exits, forged down messages, a forwarding
// stack and forged results. `probe` speaks hand-crafted BASP over plain
// sockets, one connection per attack, then scans every id; `flood` sends
// garbage, stays silent after a handshake, and opens CONNECTIONS idle
// connections. Each prints one line per scenario (see attack.cpp); exit
// status 0 when it ran to the end.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/io/basp/header.hpp>
#include <caf/io/basp_broker.hpp>
#include <pool/all.hpp>
#include <pool/remote.hpp>
#include <pool/remote_session.hpp>

#include "attacker.hpp"

using namespace std::chrono_literals;
using caf::io::basp::header;
using caf::io::basp::message_type;


namespace attacker {

/// A node id nobody has: random host hash.
caf::node_id fresh_node() {
  std::random_device rd;
  std::string hex;
  for (int i = 0; i < 40; ++i)
    hex += "0123456789ABCDEF"[rd() % 16];
  return *caf::make_node_id(rd() % 100000 + 1, hex);
}

} // namespace attacker

namespace {

/// `HEX#PID` as CAF prints a node id.
caf::node_id parse_node(const std::string& text) {
  auto hash = text.find('#');
  if (hash == std::string::npos)
    return {};
  auto pid = static_cast<uint32_t>(std::stoul(text.substr(hash + 1)));
  auto id = caf::make_node_id(pid, text.substr(0, hash));
  return id ? *id : caf::node_id{};
}

// -- CAF's own API ------------------------------------------------------------

int run_caf(caf::actor_system& sys, const std::string& host, uint16_t port,
            caf::actor_id max_id, const caf::node_id& legit) {
  auto gk = sys.middleman().remote_actor(host, port);
  if (!gk) {
    std::cout << "caf cannot-connect " << pool::describe_remote(gk.error())
              << std::endl;
    return 1;
  }
  auto pool_node = gk->node();
  auto basp =
      sys.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  // Named actors: CAF's configuration server hands out any named actor
  // (what middleman::remote_lookup asks, but as a request, so that a
  // missing receiver answers at once), the spawn server spawns.
  for (auto name : {caf::atom("ConfigServ"), caf::atom("SpawnServ")}) {
    caf::scoped_actor asker{sys};
    std::string found = "none";
    asker
        ->request(
            basp, 5s, caf::forward_atom_v, pool_node, name,
            name == caf::atom("ConfigServ")
                ? caf::make_message(caf::get_atom_v, caf::atom("ConfigServ"))
                : caf::make_message(caf::sys_atom_v, caf::get_atom_v,
                                    std::string{"info"}))
        .receive([&](caf::message& x) { found = "FOUND " + to_string(x); },
                 [&](caf::error&) {});
    std::cout << "caf named " << caf::to_string(name) << ' ' << found
              << std::endl;
  }
  auto broker = static_cast<caf::io::basp_broker*>(
      caf::actor_cast<caf::abstract_actor*>(basp));
  auto& proxies = broker->instance.proxies();
  // A worker of ours: if any pool took it, it would hear from it.
  auto heard = std::make_shared<std::atomic<int>>(0);
  auto spy = sys.spawn([heard](caf::event_based_actor* self) {
    self->set_default_handler(
        [heard](caf::scheduled_actor*,
                caf::message_view&) -> caf::result<caf::message> {
          ++*heard;
          return caf::message{};
        });
    return caf::behavior{[heard](pool::pool_event&) { ++*heard; }};
  });
  struct tally {
    std::atomic<int> requests{0};
    std::atomic<int> answers{0};
    std::atomic<int> errors{0};
    std::atomic<int> timeouts{0};
    std::mutex mtx;
    std::vector<std::string> what;
  };
  auto count = std::make_shared<tally>();
  caf::scoped_actor self{sys};
  auto on_answer = [count](const char* what, caf::actor_id id) {
    return [count, what, id](caf::message& x) {
      std::lock_guard<std::mutex> guard{count->mtx};
      count->what.push_back(std::string{what} + "@" + std::to_string(id) + "=" +
                            caf::to_string(x));
      ++count->answers;
    };
  };
  std::vector<caf::actor> targets;
  for (caf::actor_id id = 1; id <= max_id; ++id)
    targets.push_back(
        caf::actor_cast<caf::actor>(proxies.get_or_put(pool_node, id)));
  // CAF announces each new proxy to the pool's node, which answers at once
  // with a down message for an id it does not know (not in its registry):
  // the proxy dies, and requests to it then fail by timeout on this side.
  // Dead proxies are the pool's own word that an id addresses nothing.
  auto dead = [&] {
    int n = 0;
    for (auto& to : targets)
      n += caf::actor_cast<caf::abstract_actor*>(to)->getf(
               caf::abstract_actor::is_cleaned_up_flag)
               ? 1
               : 0;
    return n;
  };
  for (int last = -1, i = 0; i < 50 && dead() != last; ++i) {
    last = dead();
    std::this_thread::sleep_for(200ms);
  }
  auto unknown_ids = dead();
  // Every command to every id, in one burst (a request to a dead proxy
  // fails by timeout here, without leaving this process).
  auto wanted = static_cast<int>(targets.size()) * 7;
  auto prober = sys.spawn([=](caf::event_based_actor* me) {
    auto ask = [=](const caf::actor& to, const char* what, caf::message msg) {
      ++count->requests;
      me->request(to, 2s, std::move(msg))
          .then(
              [=](caf::message& x) {
                if (x.match_elements<caf::error>())
                  ++count->errors;
                else
                  on_answer(what, to.id())(x);
              },
              [=](caf::error& err) {
                if (err == caf::sec::request_timeout)
                  ++count->timeouts;
                else
                  ++count->errors;
              });
    };
    for (auto& to : targets) {
      ask(to, "stats", caf::make_message(pool::pool_stats_atom_v));
      ask(to, "resize", caf::make_message(pool::resize_atom_v, uint64_t{100}));
      ask(to, "cancel", caf::make_message(pool::cancel_op_atom_v, uint64_t{1}));
      ask(to, "submit", caf::make_message(pool::submit_atom_v, int32_t{7}));
      ask(to, "subscribe", caf::make_message(pool::subscribe_atom_v, spy));
      ask(to, "join", caf::make_message(pool::join_pool_atom_v, spy));
      ask(to, "drain", caf::make_message(pool::drain_atom_v));
    }
  });
  // Wait for every outcome (each request times out after 2 s).
  for (int i = 0;
       i < 100 && count->answers + count->errors + count->timeouts < wanted;
       ++i)
    std::this_thread::sleep_for(100ms);
  // Forged results with a made-up session, a forged join, and forged down
  // messages claiming the legitimate node's actors died.
  caf::anon_send(*gk, pool::node_done_atom_v,
                 pool::detail::make_session_secret(), uint32_t{0},
                 pool::attempt_id{1, 1}, caf::make_message(int64_t{666}));
  self->request(*gk, 5s, pool::node_join_atom_v, std::string{"guess"},
                uint32_t{4})
      .receive([](caf::message&) {}, [](caf::error&) {});
  for (caf::actor_id id = 1; id <= 300 && legit; ++id) {
    auto victim = proxies.get_or_put(legit, id);
    if (victim)
      caf::anon_send(*gk,
                     caf::down_msg{victim->address(), caf::exit_reason::kill});
  }
  // A request with a forwarding stack: the answer would go to the spy.
  caf::actor_cast<caf::abstract_actor*>(*gk)->enqueue(
      caf::make_mailbox_element(
          caf::actor_cast<caf::strong_actor_ptr>(self), caf::make_message_id(),
          {caf::actor_cast<caf::strong_actor_ptr>(spy)}, pool::control_atom_v,
          std::string{"guess"}, pool::pool_stats_atom_v),
      nullptr);
  // Exits, last: to every id, and to the gatekeeper as kill.
  for (auto& to : targets) {
    caf::anon_send_exit(to, caf::exit_reason::kill);
    self->send_exit(to, caf::exit_reason::kill);
  }
  std::this_thread::sleep_for(1500ms); // late messages to the spy
  std::cout << "caf requests " << count->requests << " answers "
            << count->answers << " errors " << count->errors << " timeouts "
            << count->timeouts << " heard " << heard->load() << " unknown "
            << unknown_ids << std::endl;
  std::lock_guard<std::mutex> guard{count->mtx};
  for (auto& x : count->what)
    std::cout << "caf ANSWER " << x << std::endl;
  caf::anon_send_exit(prober, caf::exit_reason::kill);
  caf::anon_send_exit(spy, caf::exit_reason::kill);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  auto usage = [] {
    std::cerr << "usage: remote_attacker caf|probe HOST PORT MAX_ID NODE\n"
                 "       remote_attacker flood HOST PORT CONNECTIONS\n";
    return 2;
  };
  if (argc < 5)
    return usage();
  caf::actor_system_config cfg;
  pool::configure_remote(cfg);
  cfg.set("logger.verbosity", caf::atom("quiet"));
  caf::actor_system sys{cfg};
  std::string mode = argv[1];
  std::string host = argv[2];
  auto port = static_cast<uint16_t>(std::atoi(argv[3]));
  if (mode == "flood")
    return attacker::run_flood(sys, host, port, std::atoi(argv[4]));
  if (argc != 6)
    return usage();
  auto max_id = static_cast<caf::actor_id>(std::atoll(argv[4]));
  auto legit = parse_node(argv[5]);
  if (!legit) {
    std::cerr << "bad node id: " << argv[5] << '\n';
    return 2;
  }
  if (mode == "caf")
    return run_caf(sys, host, port, max_id, legit);
  if (mode == "probe")
    return attacker::run_probe(sys, host, port, max_id, legit);
  return usage();
}
