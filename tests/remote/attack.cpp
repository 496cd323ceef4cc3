// The attacker's view, on 127.0.0.1: strangers without the token try to
// read, change and stop a published pool by guessing actor ids, with CAF's
// own API and with hand-crafted BASP (the remote_attacker child), and try
// to take the port down with garbage, silence and idle connections. The
// pool's legitimate callers and its legitimate node go on meanwhile; every
// attack must fail and every result must be right.
#include "../child_process.hpp"
#include "fixture.hpp"

namespace {

/// The line of `text` that starts with `prefix`, or "".
std::string line_of(const std::string& text, const std::string& prefix) {
  size_t at = 0;
  while (at < text.size()) {
    auto nl = text.find('\n', at);
    auto line = text.substr(at, nl == std::string::npos ? nl : nl - at);
    if (line.rfind(prefix, 0) == 0)
      return line;
    if (nl == std::string::npos)
      break;
    at = nl + 1;
  }
  return {};
}

/// Every actor of this process in the registry by id in 1..max: the pool's
/// actors must not be among them.
std::vector<std::string> registered(caf::actor_system& sys, caf::actor_id max) {
  std::vector<std::string> result;
  for (caf::actor_id id = 1; id <= max; ++id)
    if (auto ptr = sys.registry().get(id))
      result.push_back(
          std::to_string(id) + ":" +
          dynamic_cast<caf::local_actor*>(ptr->get())->name() +
          (ptr->get()->getf(caf::abstract_actor::is_registered_flag)
               ? ""
               : "(hidden)"));
  return result;
}

} // namespace

TEST_CASE("strangers without the token reach nothing by actor id, with "
          "CAF's API or hand-crafted BASP: no stats, subscription, submit, "
          "cancel, join, resize, drain or kill, and callers get every result "
          "right" *
          doctest::timeout(90)) {
  constexpr caf::actor_id max_id = 600;
  scratch_dir dir;
  remote_config cfg;
  caf::actor_system sys{cfg};
  served_pool served{sys, pool::pool_options{}.max_attempts(3),
                     pool::remote_options{}.connection_deadlines(5s, 60s)};
  child node{dir, "node", served.node_args(token, 4)};
  auto legit = node_id_of(node);
  served.await_joined(4);
  // The scan covers every actor this process has spawned so far.
  auto probe = sys.spawn([](caf::event_based_actor*) {});
  MESSAGE("shepherd id " << served.handle.id() << ", gatekeeper id "
                         << served.gatekeeper.id() << ", newest id "
                         << probe.id());
  REQUIRE(probe.id() < max_id);
  outcomes got;
  joining_thread callers{
      [&] { got = run_operations(sys, served.handle, 5000, 60s); }};
  auto port = std::to_string(served.port);
  auto ids = std::to_string(max_id);
  child with_caf{
      dir, "caf", {REMOTE_ATTACKER, "caf", "127.0.0.1", port, ids, legit}};
  child by_hand{
      dir, "probe", {REMOTE_ATTACKER, "probe", "127.0.0.1", port, ids, legit}};
  REQUIRE_MESSAGE(with_caf.wait(60s) == 0, with_caf.err());
  REQUIRE_MESSAGE(by_hand.wait(60s) == 0, by_hand.err());
  callers.join();
  auto caf_out = with_caf.out();
  auto raw_out = by_hand.out();
  MESSAGE(caf_out << raw_out);
  // CAF's API: the named actors are gone; the pool's node declared every
  // id but a few unknown (the gatekeeper and CAF's own hidden helpers), so
  // CAF killed those proxies; nothing answered but errors, and the spy
  // worker never heard from a pool.
  CHECK(line_of(caf_out, "caf named ConfigServ") ==
        "caf named ConfigServ none");
  CHECK(line_of(caf_out, "caf named SpawnServ") == "caf named SpawnServ none");
  auto caf_line = line_of(caf_out, "caf requests");
  REQUIRE(!caf_line.empty());
  auto requests = number_after(caf_line, "requests");
  CHECK(requests == 7 * static_cast<long long>(max_id));
  CHECK(number_after(caf_line, "answers") == 0);
  CHECK(number_after(caf_line, "heard") == 0);
  CHECK(number_after(caf_line, "errors") + number_after(caf_line, "timeouts") ==
        requests);
  CHECK(number_after(caf_line, "unknown") >= max_id - 10);
  CHECK(caf_out.find("ANSWER") == std::string::npos);
  // Hand-crafted BASP: each protocol attack closed its connection; the
  // scan reached the pool (its requests came back as errors) and got no
  // answer.
  for (auto scenario :
       {"before-handshake", "4gib-header", "routed-forged-sender",
        "forged-down", "route-takeover", "self-claim"})
    CHECK(line_of(raw_out, std::string{"raw "} + scenario) ==
          std::string{"raw "} + scenario + " closed");
  auto scan = line_of(raw_out, "raw scan");
  REQUIRE(!scan.empty());
  CHECK(scan.find("handshake ok then open") != std::string::npos);
  CHECK(number_after(scan, "requests") == 5 * static_cast<long long>(max_id));
  CHECK(number_after(scan, "answers") == 0);
  CHECK(number_after(scan, "errors") >= number_after(scan, "requests") - 50);
  // The pool: every result right, its state untouched, its node joined.
  check_all_done(got, 5000);
  auto stats = served.stats();
  CHECK(stats.configured == 1);
  CHECK(stats.joined == 4);
  CHECK(stats.cancelled == 0);
  // The server counts a close just after the attacker saw it (a loaded
  // machine shows the gap).
  auto counters = served.counters();
  pool::test::eventually(
      [&] {
        counters = served.counters();
        return counters.closed_protocol >= 6;
      },
      10s);
  MESSAGE(pool::to_string(counters));
  CHECK(counters.sessions == 1);
  // Each of the 6 protocol attacks was closed (the lines above) by the
  // guard, and only those: CAF dropped none of the connections itself (it
  // did, under load, before accepted sockets were renumbered).
  CHECK(counters.closed_protocol == 6);
  CHECK(counters.forged >= 1);
  CHECK(counters.joins_refused >= 1);
  CHECK(counters.joins_accepted == 1);
  // Nothing of the pool is in CAF's registry, where a peer could address
  // it: only the gatekeeper and CAF's own hidden helpers.
  for (auto& entry : registered(sys, max_id)) {
    CAPTURE(entry);
    auto ok = entry.find("pool.gatekeeper") != std::string::npos ||
              entry.find("(hidden)") != std::string::npos;
    CHECK(ok);
  }
  CHECK(sys.registry().get(served.handle.id()) == nullptr);
  // The operator with the token still gets in.
  auto ctl = poolctl(dir, served.port, {"stats"});
  CHECK(ctl.status == 0);
  CHECK(stop_node(node) > 0);
}

TEST_CASE("the port survives garbage, a peer that never presents the token "
          "and a flood of idle connections, bounded by max_connections, "
          "while the pool serves on" *
          doctest::timeout(60)) {
  constexpr int max_connections = 8;
  constexpr int flood = 2 * max_connections;
  scratch_dir dir;
  remote_config cfg;
  caf::actor_system sys{cfg};
  served_pool served{sys, pool::pool_options{}.max_attempts(3),
                     pool::remote_options{}
                         .max_connections(max_connections)
                         .connection_deadlines(500ms, 2s)};
  child node{dir, "node", served.node_args(token, 4)};
  served.await_joined(4);
  outcomes got;
  joining_thread callers{
      [&] { got = run_operations(sys, served.handle, 3000, 45s); }};
  child attacker{dir,
                 "flood",
                 {REMOTE_ATTACKER, "flood", "127.0.0.1",
                  std::to_string(served.port), std::to_string(flood)}};
  REQUIRE_MESSAGE(attacker.wait(40s) == 0, attacker.err());
  callers.join();
  auto out = attacker.out();
  MESSAGE(out);
  CHECK(line_of(out, "raw garbage") == "raw garbage closed");
  CHECK(line_of(out, "raw no-token") == "raw no-token closed");
  CHECK(line_of(out, "raw idle") == "raw idle opened " + std::to_string(flood) +
                                        " closed " + std::to_string(flood));
  check_all_done(got, 3000);
  auto counters = served.counters();
  MESSAGE(pool::to_string(counters));
  CHECK(counters.closed_protocol == 1);
  CHECK(counters.closed_no_token == 1);
  // Every idle connection was refused at the limit or closed at the
  // handshake deadline; the limit held (the node has one place).
  CHECK(counters.connections_refused + counters.closed_no_handshake ==
        static_cast<uint64_t>(flood));
  CHECK(counters.connections_refused >= flood - max_connections + 1);
  CHECK(served.log.contains("port guard"));
  // The node kept its connection; an operator gets in again.
  CHECK(served.stats().joined == 4);
  auto ctl = poolctl(dir, served.port, {"stats"});
  CHECK(ctl.status == 0);
  CHECK(stop_node(node) > 0);
}
