#pragma once

// The stranger of the attack tests (tests/remote/attacker.cpp): its
// helpers and the attacks that speak hand-crafted BASP over plain sockets
// (tests/remote/attacker_raw.cpp).

#include <cstdint>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/node_id.hpp>

namespace attacker {

/// A node id nobody has: random host hash.
caf::node_id fresh_node();

/// `probe`: one connection per attack, then a scan of every id up to
/// `max_id`; one line per scenario on standard output.
int run_probe(caf::actor_system& sys, const std::string& host, uint16_t port,
              caf::actor_id max_id, const caf::node_id& legit);

/// `flood`: garbage, silence after a handshake, and `connections` idle
/// connections; one line per scenario on standard output.
int run_flood(caf::actor_system& sys, const std::string& host, uint16_t port,
              int connections);

} // namespace attacker
