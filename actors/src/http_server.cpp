// The HTTP endpoint: routes, the token check, the actions, and
// serve_http(). Requests are served by cpp-httplib's threads from the
// samples the sampler actor keeps (http_sampler.cpp); actions go to the
// pool from a scoped actor on the request's thread.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <optional>
#include <thread>

#include <caf/all.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "http_gate.hpp"
#include "http_jobs.hpp"
#include "http_state.hpp"
#include "pool/prometheus.hpp"
#include "pool/protocol.hpp"

namespace pool {

namespace http_detail {

// The page and its script (http_page.cpp).
extern const char* const page_html;
extern const char* const page_js;

} // namespace http_detail

using namespace http_detail;
using json = nlohmann::json;

struct http_endpoint::impl {
  caf::actor_system& sys;
  http_options opts;
  std::shared_ptr<http_state> state;
  caf::actor sampler;
  gated_server server;
  std::thread thread;
  uint16_t port = 0;
  std::atomic<bool> stopped{false};

  impl(caf::actor_system& sys, http_options opts)
      : sys(sys), opts(std::move(opts)), state(std::make_shared<http_state>()),
        server(limits_of(this->opts)) {
    // nop
  }

  static gate_limits limits_of(const http_options& opts) {
    using std::chrono::duration_cast;
    using std::chrono::milliseconds;
    gate_limits x;
    x.request_timeout = duration_cast<milliseconds>(opts.request_timeout);
    x.keep_alive_timeout = duration_cast<milliseconds>(opts.keep_alive_timeout);
    x.write_timeout = duration_cast<milliseconds>(opts.write_timeout);
    x.max_waiting = opts.max_connections;
    x.max_body = opts.max_body;
    x.threads = opts.threads;
    return x;
  }
};

namespace {

constexpr size_t max_name_length = 64;
constexpr size_t min_token_length = 16;

bool valid_name(const std::string& name) {
  return !name.empty() && name.size() <= max_name_length &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                  c == '-' || c == '.';
         });
}

// Compares in time independent of where the strings differ.
bool same_token(const std::string& x, const std::string& y) {
  unsigned char diff = x.size() == y.size() ? 0 : 1;
  for (size_t i = 0; i < x.size(); ++i)
    diff |= static_cast<unsigned char>(x[i] ^ y[i % std::max<size_t>(1, y.size())]);
  return diff == 0;
}

std::string peer(const httplib::Request& req) {
  return req.remote_addr + ":" + std::to_string(req.remote_port);
}

// The token of an `Authorization: Bearer <token>` header; none without one.
std::optional<std::string> bearer_token(const httplib::Request& req) {
  auto header = req.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  if (header.compare(0, prefix.size(), prefix) != 0)
    return std::nullopt;
  return header.substr(prefix.size());
}

// 401 (no token) or 403 (a wrong one, or actions disabled); true if allowed.
bool authorized(http_endpoint::impl& ep, const httplib::Request& req,
                httplib::Response& res) {
  if (ep.opts.token.empty()) {
    reply_error(res, 403,
                "actions are disabled: the server was started without an "
                "operator token");
    return false;
  }
  auto given = bearer_token(req);
  if (!given) {
    res.set_header("WWW-Authenticate", "Bearer");
    reply_error(res, 401,
                "missing operator token: send 'Authorization: Bearer <token>'");
    return false;
  }
  if (!same_token(*given, ep.opts.token)) {
    reply_error(res, 403, "wrong operator token");
    ep.opts.log(log_level::warning, "http",
                "refused an action with a wrong token from " + peer(req) +
                    ": " + req.method + " " + req.path);
    return false;
  }
  return true;
}

caf::actor find_pool(http_endpoint::impl& ep, const std::string& name) {
  std::lock_guard<std::mutex> guard{ep.state->mtx};
  for (auto& p : ep.state->pools)
    if (p.name == name)
      return p.pool;
  return {};
}

// Reads a non-negative integer field of the JSON body.
std::optional<uint64_t> body_number(const httplib::Request& req,
                                    const char* field, std::string& why) {
  auto body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    why = "the body must be a JSON object, e.g. {\"" + std::string{field} +
          "\": 4}";
    return std::nullopt;
  }
  auto i = body.find(field);
  if (i == body.end() || !i->is_number_unsigned()) {
    why = "the body needs '" + std::string{field} +
          "' as a non-negative integer";
    return std::nullopt;
  }
  return i->get<uint64_t>();
}

void act(http_endpoint::impl& ep, const httplib::Request& req,
         httplib::Response& res) {
  no_store(res);
  if (!authorized(ep, req, res))
    return;
  auto name = req.matches[1].str();
  auto action = req.matches[2].str();
  auto pool = find_pool(ep, name);
  if (!pool)
    return reply_error(res, 404, "no pool named '" + name + "'");
  std::string why;
  caf::message msg;
  std::string what;
  if (action == "pause") {
    msg = caf::make_message(pause_atom_v);
    what = "pause";
  } else if (action == "resume") {
    msg = caf::make_message(resume_atom_v);
    what = "resume";
  } else if (action == "resize") {
    auto n = body_number(req, "workers", why);
    if (!n)
      return reply_error(res, 400, why);
    msg = caf::make_message(resize_atom_v, *n);
    what = "resize to " + std::to_string(*n);
  } else if (action == "cancel") {
    auto id = body_number(req, "operation", why);
    if (!id)
      return reply_error(res, 400, why);
    msg = caf::make_message(cancel_op_atom_v, *id);
    what = "cancel op#" + std::to_string(*id);
  } else if (action == "drain") {
    // Draining finishes the work first; the answer would come at the end.
    caf::anon_send(pool, drain_atom_v);
    ep.opts.log(log_level::info, name, "http: drain by " + peer(req));
    res.status = 202;
    res.set_content(json{{"ok", true}, {"draining", true}}.dump() + "\n",
                    "application/json");
    return;
  } else {
    return reply_error(res, 404,
                       "unknown action '" + action +
                           "': use resize, drain, cancel, pause or resume");
  }
  caf::scoped_actor self{ep.sys};
  auto status = 504;
  std::string outcome = "no answer within the action timeout; it goes on";
  self->request(pool, ep.opts.action_timeout, std::move(msg))
      .receive(
          [&] {
            status = 200;
            outcome = "ok";
          },
          [&](caf::error& err) {
            if (err == caf::sec::request_timeout)
              return;
            status = err.category() == pool_error_category ? 409 : 500;
            outcome = describe(err);
          });
  ep.opts.log(status == 200 ? log_level::info : log_level::warning, name,
              "http: " + what + " by " + peer(req) + ": " + outcome);
  if (status != 200)
    return reply_error(res, status, outcome);
  res.set_content(json{{"ok", true}}.dump() + "\n", "application/json");
}

void add_routes(http_endpoint::impl& ep) {
  auto& svr = ep.server;
  // Before anything else (and before a body is parsed): a request must
  // name this endpoint, not a page's own name rebound to this address.
  svr.set_pre_routing_handler([&ep](const httplib::Request& req,
                                    httplib::Response& res) {
    auto host = req.get_header_value("Host");
    if (host_allowed(host, ep.opts.allowed_hosts, ep.port))
      return httplib::Server::HandlerResponse::Unhandled;
    close_after_response();
    res.set_header("Connection", "close");
    reply_error(res, 421,
                "this endpoint does not answer to host '" + host +
                    "': use its address (" + ep.opts.host + ":" +
                    std::to_string(ep.port) +
                    "), localhost, or a name in http_options::allowed_hosts");
    return httplib::Server::HandlerResponse::Handled;
  });
  svr.Get("/", [](const httplib::Request&, httplib::Response& res) {
    no_store(res);
    res.set_header("Content-Security-Policy",
                   "default-src 'self'; style-src 'self' 'unsafe-inline'");
    res.set_content(page_html, "text/html; charset=utf-8");
  });
  svr.Get("/app.js", [](const httplib::Request&, httplib::Response& res) {
    no_store(res);
    res.set_content(page_js, "text/javascript; charset=utf-8");
  });
  svr.Get("/metrics", [&ep](const httplib::Request&, httplib::Response& res) {
    std::vector<named_metrics> pools;
    {
      std::lock_guard<std::mutex> guard{ep.state->mtx};
      for (auto& p : ep.state->pools)
        if (!p.history.empty())
          pools.push_back(named_metrics{p.name, p.history.latest().metrics});
    }
    no_store(res);
    res.set_content(prometheus_text(pools),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  svr.Get("/api/stats", [&ep](const httplib::Request&, httplib::Response& res) {
    std::string body = "{\"actions\":";
    body += ep.opts.token.empty() ? "false" : "true";
    body += ",\"interval\":" +
            std::to_string(std::chrono::duration<double>(
                               ep.opts.sample_interval)
                               .count());
    body += ",\"pools\":[";
    {
      std::lock_guard<std::mutex> guard{ep.state->mtx};
      auto first = true;
      for (auto& p : ep.state->pools) {
        if (!first)
          body += ',';
        first = false;
        auto one = pool_json(p.name, p.history, p.events, ep.opts.window);
        // Add the serving side's own figures to the pool's object.
        one.pop_back();
        body += one + ",\"down\":" + (p.down ? "true" : "false") +
                ",\"missed_samples\":" + std::to_string(p.missed) + "}";
      }
    }
    body += "]}\n";
    no_store(res);
    res.set_content(body, "application/json");
  });
  // The jobs view; inputs only for the operator token's holder.
  svr.Get(R"(/api/pools/([A-Za-z0-9_.\-]{1,64})/jobs)",
          [&ep](const httplib::Request& req, httplib::Response& res) {
            auto pool = find_pool(ep, req.matches[1].str());
            if (!pool)
              return reply_error(
                  res, 404, "no pool named '" + req.matches[1].str() + "'");
            auto given = bearer_token(req);
            serve_jobs(ep.sys, pool, ep.opts.action_timeout,
                       !ep.opts.token.empty() && given &&
                           same_token(*given, ep.opts.token),
                       req, res);
          });
  // Retry or discard failed jobs: one by id, or all matching a filter.
  svr.Post(
      R"(/api/pools/([A-Za-z0-9_.\-]{1,64})/jobs(?:/([0-9]{1,20}))?/)"
      R"((retry|discard))",
      [&ep](const httplib::Request& req, httplib::Response& res) {
        no_store(res);
        if (!authorized(ep, req, res))
          return;
        auto name = req.matches[1].str();
        auto pool = find_pool(ep, name);
        if (!pool)
          return reply_error(res, 404, "no pool named '" + name + "'");
        auto line = act_on_jobs(ep.sys, pool, ep.opts.action_timeout, req, res);
        ep.opts.log(res.status == 200 ? log_level::info : log_level::warning,
                    name, "http: " + line + " by " + peer(req));
      });
  auto action_path = R"(/api/pools/([A-Za-z0-9_.\-]{1,64})/([a-z]{1,16}))";
  svr.Post(action_path, [&ep](const httplib::Request& req,
                              httplib::Response& res) { act(ep, req, res); });
  for (auto path : {"/metrics", "/api/stats", "/"})
    svr.Post(path, [](const httplib::Request&, httplib::Response& res) {
      res.set_header("Allow", "GET");
      reply_error(res, 405, "method not allowed: use GET");
    });
  svr.Get(action_path, [](const httplib::Request&, httplib::Response& res) {
    res.set_header("Allow", "POST");
    reply_error(res, 405, "method not allowed: actions take POST");
  });
  svr.set_error_handler([](const httplib::Request& req,
                           httplib::Response& res) {
    if (res.status == 404 && res.body.empty())
      reply_error(res, 404,
                  "no such path: '" + req.path +
                      "'; try /, /metrics, /api/stats or "
                      "POST /api/pools/<name>/<action>");
    else if (res.status == 413)
      reply_error(res, 413, "request body too large");
    else if (res.status == 400 && res.body.empty())
      reply_error(res, 400,
                  "malformed request (a POST needs a body with a "
                  "Content-Length: send {} when there is nothing to say)");
    else if (res.body.empty())
      reply_error(res, res.status, "request refused");
  });
  svr.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        reply_error(res, 500, "internal error");
      });
}

caf::error validate(const std::vector<http_pool>& pools,
                    const http_options& opts) {
  auto invalid = [](std::string what) {
    return caf::make_error(pool_errc::invalid_option, "http: " + what);
  };
  if (pools.empty())
    return invalid("no pool to serve");
  for (size_t i = 0; i < pools.size(); ++i) {
    if (!valid_name(pools[i].name))
      return invalid("pool name '" + pools[i].name +
                     "' is not usable in URLs: use 1 to 64 letters, digits, "
                     "'_', '-' or '.'");
    if (!pools[i].pool)
      return invalid("pool '" + pools[i].name + "' is an invalid handle");
    for (size_t j = 0; j < i; ++j)
      if (pools[j].name == pools[i].name)
        return invalid("two pools are named '" + pools[i].name + "'");
  }
  if (!opts.token.empty() && opts.token.size() < min_token_length)
    return invalid("the operator token has " +
                   std::to_string(opts.token.size()) +
                   " characters; use at least 16 (e.g. openssl rand -hex 16)");
  if (opts.sample_interval < std::chrono::milliseconds(10))
    return invalid("sample_interval must be at least 10ms");
  if (opts.history < 2)
    return invalid("history must keep at least 2 samples");
  if (opts.threads == 0)
    return invalid("threads must be at least 1");
  if (opts.action_timeout <= caf::timespan{0})
    return invalid("action_timeout must be positive");
  if (!opts.log)
    return invalid("log hook is empty");
  for (auto& x : opts.allowed_hosts)
    if (auto why = check_allowed_host(x); !why.empty())
      return invalid(why + " (allowed_hosts)");
  for (auto [name, value] :
       {std::pair{"request_timeout", opts.request_timeout},
        std::pair{"keep_alive_timeout", opts.keep_alive_timeout},
        std::pair{"write_timeout", opts.write_timeout}})
    if (value < std::chrono::milliseconds(1) || value > std::chrono::hours(1))
      return invalid(std::string{name} + " must lie between 1ms and 1h");
  if (opts.max_connections == 0)
    return invalid("max_connections must be at least 1");
  return caf::none;
}

} // namespace

http_endpoint::http_endpoint(std::unique_ptr<impl> ptr)
  : impl_(std::move(ptr)) {
  // nop
}

http_endpoint::~http_endpoint() {
  stop();
}

uint16_t http_endpoint::port() const noexcept {
  return impl_->port;
}

std::string http_endpoint::url() const {
  auto host = impl_->opts.host;
  if (host.find(':') != std::string::npos)
    host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(impl_->port);
}

void http_endpoint::stop() {
  if (impl_->stopped.exchange(true))
    return;
  impl_->server.stop();
  if (impl_->thread.joinable())
    impl_->thread.join();
  impl_->server.shutdown();
  caf::anon_send_exit(impl_->sampler, caf::exit_reason::user_shutdown);
}

caf::expected<std::unique_ptr<http_endpoint>>
serve_http(caf::actor_system& sys, std::vector<http_pool> pools,
           http_options opts) {
  if (auto err = validate(pools, opts))
    return err;
  auto ep = std::make_unique<http_endpoint::impl>(sys, std::move(opts));
  for (auto& p : pools)
    ep->state->pools.push_back(served_pool{p.name, p.pool,
                                           metrics_history{ep->opts.history},
                                           event_log{}, false, 0});
  // SO_REUSEADDR only: httplib's default also sets SO_REUSEPORT, which lets
  // a second server share a taken port silently.
  ep->server.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  ep->server.set_payload_max_length(ep->opts.max_body);
  add_routes(*ep);
  int port = ep->opts.port == 0
               ? ep->server.bind_to_any_port(ep->opts.host)
               : (ep->server.bind_to_port(ep->opts.host, ep->opts.port)
                    ? ep->opts.port
                    : -1);
  if (port <= 0)
    return caf::make_error(caf::sec::cannot_open_port,
                           "http: cannot listen on " + ep->opts.host + ":" +
                               std::to_string(ep->opts.port) +
                               " (taken, or not an address of this host)");
  ep->port = static_cast<uint16_t>(port);
  ep->sampler = spawn_sampler(sys, ep->state, ep->opts);
  // Subscribed before returning: no failure after this call goes unseen.
  if (auto err = subscribe_sampler(sys, ep->sampler, pools)) {
    caf::anon_send_exit(ep->sampler, caf::exit_reason::user_shutdown);
    return err;
  }
  auto* raw = ep.get();
  ep->server.start();
  ep->thread = std::thread{[raw] { raw->server.listen_after_bind(); }};
  // httplib's stop() does nothing before the loop runs: wait for it (it
  // starts at once; bounded all the same).
  for (int i = 0; i < 5000 && !raw->server.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return std::make_unique<http_endpoint>(std::move(ep));
}

caf::error parse_http_address(const std::string& text, http_options& opts) {
  auto invalid = [&](const std::string& why) {
    return caf::make_error(pool_errc::invalid_option,
                           "--http '" + text + "': " + why +
                               " (use ADDR:PORT, :PORT or PORT)");
  };
  auto colon = text.rfind(':');
  auto host = colon == std::string::npos ? std::string{}
                                         : text.substr(0, colon);
  auto port_text = colon == std::string::npos ? text : text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(),
                                   port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc{} ||
      end != port_text.data() + port_text.size() || port > 65535)
    return invalid("the port must be a number from 0 to 65535");
  opts.host = host.empty() ? "127.0.0.1" : host;
  opts.port = static_cast<uint16_t>(port);
  return caf::none;
}

} // namespace pool
