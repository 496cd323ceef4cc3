// Starting a node and making it leave, from outside it: blocking calls
// around the node actor (remote_node.cpp).
#include "pool/remote_node.hpp"

#include <caf/actor_cast.hpp>
#include <caf/after.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "pool/port_guard.hpp"

namespace pool {

namespace {

caf::error invalid(const char* field, std::string reason) {
  return caf::make_error(pool_errc::invalid_option, std::string{field},
                         std::move(reason));
}

} // namespace

namespace detail {

caf::expected<caf::actor> start_node(caf::actor_system& sys, node_config cfg) {
  if (auto err = cfg.options.validate())
    return err;
  if (cfg.host.empty())
    return invalid("host", "must not be empty");
  if (cfg.port == 0)
    return invalid("port", "must not be 0");
  if (cfg.token.empty())
    return invalid("token", "must not be empty");
  if (cfg.workers == 0)
    return invalid("workers", "must be at least 1");
  if (!sys.has_middleman())
    return invalid("middleman", "the actor system has no network module: "
                                "configure it with pool::configure_remote");
  forget_named_actors(sys);
  auto wait = 2 * cfg.options.join_timeout() + std::chrono::seconds(1);
  caf::scoped_actor self{sys};
  auto handle =
      spawn_node_actor(sys, std::move(cfg), caf::actor_cast<caf::actor>(self));
  self->monitor(handle);
  caf::error outcome = caf::make_error(caf::sec::request_timeout);
  auto timed_out = false;
  auto gone = false;
  self->receive(
      [&](node_join_atom, caf::error& err) { outcome = std::move(err); },
      [&](caf::down_msg& msg) {
        gone = true;
        outcome = msg.reason ? msg.reason
                             : caf::make_error(caf::sec::request_receiver_down);
      },
      caf::after(wait) >> [&] { timed_out = true; });
  if (timed_out)
    // Not answered in time: the node leaves, which stops its workers
    // before it ends, so the caller may destroy the actor system right
    // after; it is killed only if that stalls too.
    self->send(handle, node_leave_atom_v);
  if (outcome) {
    // A failed node ends by itself, its workers first.
    if (!gone)
      self->receive(
          [](caf::down_msg&) {},
          caf::after(wait) >>
              [&] { caf::anon_send_exit(handle, caf::exit_reason::kill); });
    return outcome;
  }
  self->demonitor(handle);
  return handle;
}

} // namespace detail

caf::error leave_remote_pool(caf::actor_system& sys, const caf::actor& node,
                             caf::timespan timeout) {
  if (!node)
    return invalid("node", "must be a valid actor");
  caf::scoped_actor self{sys};
  self->monitor(node);
  caf::error result = caf::make_error(caf::sec::request_timeout);
  self->request(node, timeout, node_leave_atom_v)
      .receive([&] { result = caf::none; },
               [&](caf::error& err) { result = std::move(err); });
  if (result)
    return result;
  // The node quits right after answering; wait for it (bounded).
  self->receive([](caf::down_msg&) {}, caf::after(timeout) >> [] {});
  return caf::none;
}

} // namespace pool
