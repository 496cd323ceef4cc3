// Pool control: an operator's tool for a published pool. Prints its stats,
// resizes it, drains it or cancels an operation, through its gatekeeper.
//
//   poolctl --host H --port P [--token-file FILE] [--timeout-ms M]
//           stats | resize N | drain | cancel ID | gatekeeper
//
// The token comes from --token-file, POOL_TOKEN_FILE or POOL_TOKEN, never
// from the command line (see `--help`).
//
// Prints the answer (`pool::to_string(stats)`, the gatekeeper's counters,
// or `ok`); exit status 0. An error prints its text on stderr; exit status
// 1. A malformed command line: exit status 2.
#include <chrono>
#include <iostream>
#include <string>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <pool/remote.hpp>

#include "command_line.hpp"

namespace {

constexpr const char* usage =
    "usage: poolctl --host H --port P [--token-file FILE] [--timeout-ms M] "
    "stats | resize N | drain | cancel ID | gatekeeper";

} // namespace

int main(int argc, char** argv) {
  auto args = remote_demo::parse_command_line(argc, argv);
  auto port = args.number("port", 0, UINT16_MAX);
  auto timeout_ms = args.number("timeout-ms", 60000);
  auto& words = args.positional;
  auto command = words.empty() ? std::string{} : words[0];
  auto wants_number = command == "resize" || command == "cancel";
  auto number = words.size() == 2
                    ? remote_demo::command_line::parse_number(words[1])
                    : std::nullopt;
  auto known = command == "stats" || command == "drain" ||
               command == "gatekeeper" || wants_number;
  if (args.has("help")) {
    std::cout << usage << "\n\n" << remote_demo::token_help;
    return 0;
  }
  if (!args.error.empty() || !port || *port == 0 || !timeout_ms ||
      !args.has("host") || !known || words.size() != (wants_number ? 2u : 1u) ||
      (wants_number && !number)) {
    std::cerr << (args.error.empty() ? "" : args.error + "\n") << usage << '\n';
    return 2;
  }
  std::string why;
  auto found = remote_demo::token_of(args, why);
  if (!found) {
    std::cerr << "poolctl: " << why << '\n';
    return 2;
  }
  caf::actor_system_config cfg;
  remote_demo::configure(cfg);
  caf::actor_system sys{cfg};
  auto gatekeeper = sys.middleman().remote_actor(args.text("host"),
                                                 static_cast<uint16_t>(*port));
  if (!gatekeeper) {
    std::cerr << "cannot connect: " << pool::describe_remote(gatekeeper.error())
              << '\n';
    return 1;
  }
  auto token = *found;
  auto timeout = std::chrono::milliseconds(*timeout_ms);
  caf::scoped_actor self{sys};
  auto status = 1;
  auto failed = [&](caf::error& err) {
    std::cerr << command << " failed: " << pool::describe_remote(err) << '\n';
  };
  auto ok = [&] {
    std::cout << "ok" << std::endl;
    status = 0;
  };
  if (command == "stats") {
    self->request(*gatekeeper, timeout, pool::control_atom_v, token,
                  pool::pool_stats_atom_v)
        .receive(
            [&](pool::pool_stats& stats) {
              std::cout << pool::to_string(stats) << std::endl;
              status = 0;
            },
            failed);
  } else if (command == "gatekeeper") {
    self->request(*gatekeeper, timeout, pool::control_atom_v, token,
                  pool::gatekeeper_stats_atom_v)
        .receive(
            [&](pool::gatekeeper_stats& stats) {
              std::cout << pool::to_string(stats) << std::endl;
              status = 0;
            },
            failed);
  } else if (command == "resize") {
    self->request(*gatekeeper, timeout, pool::control_atom_v, token,
                  pool::resize_atom_v, *number)
        .receive(ok, failed);
  } else if (command == "cancel") {
    self->request(*gatekeeper, timeout, pool::control_atom_v, token,
                  pool::cancel_op_atom_v, *number)
        .receive(ok, failed);
  } else {
    self->request(*gatekeeper, timeout, pool::control_atom_v, token,
                  pool::drain_atom_v)
        .receive(ok, failed);
  }
  return status;
}
