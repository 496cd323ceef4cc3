// A hostile CAF client for the remote tests: connects to a published
// gatekeeper without knowing the token and sends it malformed, unexpected
// and forged messages, including an exit_msg{kill}, a forged down message,
// a lone error, forged session messages and the gatekeeper's local-only
// messages.
//
//   remote_garbage HOST PORT
//
// Prints `dropped-sent <n> refused-joins <j> refused-controls <c>
// forged-sent <f>` (what the gatekeeper should count); exit status 0 when
// every request got an error answer, 1 otherwise.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <pool/remote.hpp>
#include <pool/remote_session.hpp>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: remote_garbage HOST PORT\n";
    return 2;
  }
  caf::actor_system_config cfg;
  pool::configure_remote(cfg);
  cfg.set("logger.verbosity", caf::atom("quiet"));
  caf::actor_system sys{cfg};
  auto gk = sys.middleman().remote_actor(
      argv[1], static_cast<uint16_t>(std::atoi(argv[2])));
  if (!gk) {
    std::cerr << "cannot connect: " << pool::describe_remote(gk.error())
              << '\n';
    return 1;
  }
  caf::scoped_actor self{sys};
  auto wrong = std::string{"not-the-token"};
  // Messages the gatekeeper has no business with (dropped): 13 async,
  // the stand-ins' and timers' own messages among them.
  caf::anon_send(*gk, std::string{"hello"});
  caf::anon_send(*gk, pool::node_join_atom_v, 42);
  caf::anon_send(*gk, pool::control_atom_v);
  caf::anon_send(*gk, pool::control_atom_v, wrong, pool::resize_atom_v,
                 std::string{"many"});
  caf::anon_send(*gk, caf::make_error(caf::sec::runtime_error));
  caf::anon_send(*gk, caf::exit_msg{gk->address(), caf::exit_reason::kill});
  caf::anon_send(*gk, caf::down_msg{gk->address(), caf::exit_reason::kill});
  caf::anon_send(*gk, pool::work_to_do_atom_v, pool::work_record{});
  self->send(*gk, pool::give_me_work_atom_v);
  self->send(*gk, pool::remote_note_atom_v, uint64_t{1}, uint32_t{0},
             uint8_t{1});
  self->send(*gk, pool::remote_free_atom_v, uint64_t{1});
  self->send(*gk, pool::remote_run_atom_v, uint64_t{1}, uint32_t{0},
             pool::work_record{});
  self->send(*gk, pool::remote_tick_atom_v);
  // ... and two requests, which get an error back (15 dropped in all).
  auto answered = 0;
  auto expect_error = [&](const char* what) {
    return [&, what](caf::error& err) {
      ++answered;
      std::cout << what << ": " << pool::describe_remote(err) << std::endl;
    };
  };
  self->request(*gk, std::chrono::seconds(10), std::string{"hello?"})
      .receive([] {}, expect_error("request"));
  self->request(*gk, std::chrono::seconds(10), pool::remote_guard_atom_v)
      .receive([](caf::message&) {}, expect_error("guard"));
  // Wrong or missing tokens (refused): 1 asynchronous join, 2 requests.
  caf::anon_send(*gk, pool::node_join_atom_v, wrong, uint32_t{4});
  self->request(*gk, std::chrono::seconds(10), pool::control_atom_v, wrong,
                pool::pool_stats_atom_v)
      .receive([](pool::pool_stats&) {}, expect_error("stats"));
  self->request(*gk, std::chrono::seconds(10), pool::node_join_atom_v,
                std::string{}, uint32_t{4})
      .receive([](caf::message&) {}, expect_error("join"));
  // A session nobody opened (forged): a result, a heartbeat, a goodbye.
  auto made_up = pool::detail::make_session_secret();
  self->send(*gk, pool::node_done_atom_v, made_up, uint32_t{0},
             pool::attempt_id{1, 1}, caf::make_message(int64_t{666}));
  self->send(*gk, pool::node_alive_atom_v, made_up);
  self->send(*gk, pool::node_bye_atom_v, made_up);
  // A round trip, so that everything above has arrived.
  self->request(*gk, std::chrono::seconds(10), std::string{"done?"})
      .receive([] {}, expect_error("last"));
  std::cout << "dropped-sent 16 refused-joins 2 refused-controls 1 "
               "forged-sent 3"
            << std::endl;
  return answered == 5 ? 0 : 1;
}
