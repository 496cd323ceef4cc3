// pooltop: a terminal view of pools served by pool::serve_http (or
// `poolrun --http`, `pool_serve --http`), refreshed in place, htop-like.
//
//   pooltop [--url http://127.0.0.1:9464] [--interval 1] [--once]
//
// Reads the same JSON as the web page (/api/stats). --once prints one
// screen without colours and exits (for scripts and servers' logs). On a
// terminal, `q` quits (as does Ctrl-C). Exit status 1 when the endpoint
// cannot be read.
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <thread>

#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <httplib.h>

#include "keys.hpp"
#include "render.hpp"

namespace {

volatile std::sig_atomic_t stop = 0;

size_t terminal_width() {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  return 100;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"pooltop: a terminal view of a pool's HTTP endpoint"};
  std::string url = "http://127.0.0.1:9464";
  double interval = 1.0;
  bool once = false;
  app.add_option("--url", url, "the endpoint (as given to --http)")
      ->capture_default_str();
  app.add_option("--interval", interval, "seconds between refreshes")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  app.add_flag("--once", once, "print one screen and exit");
  app.set_version_flag("--version", std::string{"pooltop "} + POOLTOP_VERSION);
  CLI11_PARSE(app, argc, argv);
  httplib::Client cli{url};
  if (!cli.is_valid()) {
    std::cerr << "pooltop: cannot use --url '" << url
              << "': give http://HOST:PORT\n";
    return 2;
  }
  cli.set_connection_timeout(3, 0);
  cli.set_read_timeout(5, 0);
  std::signal(SIGINT, [](int) { stop = 1; });
  std::signal(SIGTERM, [](int) { stop = 1; });
  auto tty = ::isatty(STDOUT_FILENO) != 0 && !once;
  // Keys from a terminal on stdin; input from elsewhere is not read.
  auto keys = tty && ::isatty(STDIN_FILENO) != 0;
  pooltop::raw_keys raw{keys ? STDIN_FILENO : -1};
  while (!stop) {
    auto res = cli.Get("/api/stats");
    if (!res || res->status != 200) {
      auto why = res ? "HTTP " + std::to_string(res->status)
                     : httplib::to_string(res.error());
      if (once) {
        std::cerr << "pooltop: cannot read " << url << "/api/stats: " << why
                  << '\n';
        return 1;
      }
      std::cout << (tty ? "\x1b[H\x1b[2J" : "") << "pooltop: " << url << ": "
                << why << " (retrying)\n"
                << std::flush;
    } else {
      pooltop::render_options opts;
      opts.color = tty;
      opts.width = tty ? terminal_width() : 100;
      // The running jobs of each pool (with the operator token from
      // POOL_HTTP_TOKEN, their inputs too).
      pooltop::running_jobs running;
      httplib::Headers auth;
      if (auto tok = std::getenv("POOL_HTTP_TOKEN"); tok && *tok)
        auth.emplace("Authorization", std::string{"Bearer "} + tok);
      for (auto& name : pooltop::pool_names(res->body))
        if (auto jobs = cli.Get("/api/pools/" + name
                                    + "/jobs?state=running&limit="
                                    + std::to_string(opts.running),
                                auth);
            jobs && jobs->status == 200)
          running.emplace_back(name, jobs->body);
      auto screen = pooltop::render(res->body, opts, running);
      if (tty)
        std::cout << "\x1b[H\x1b[2J" << url << "   (q quits)\n\n";
      std::cout << screen << std::flush;
    }
    if (once)
      return 0;
    for (auto waited = 0.0; waited < interval && !stop; waited += 0.1)
      if (keys ? pooltop::quit_key(STDIN_FILENO, 100)
               : (std::this_thread::sleep_for(std::chrono::milliseconds(100)),
                  false))
        stop = 1;
  }
  return 0;
}
