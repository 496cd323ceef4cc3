#include "pool/config_options.hpp"

#include <caf/config_option_adder.hpp>
#include <caf/settings.hpp>

#include "pool/errors.hpp"

namespace pool {

void declare_options(caf::config_option_set& options,
                     caf::string_view category) {
  caf::config_option_adder{options, category}
      .add<int64_t>("workers", "number of workers (resource instances)")
      .add<bool>("dedicated", "give each worker a thread of its own")
      .add<int64_t>("max-attempts", "attempts per operation, 1 = no retry")
      .add<caf::timespan>("backoff-initial", "delay before the first retry")
      .add<caf::timespan>("backoff-max", "longest delay between retries")
      .add<double>("backoff-multiplier", "growth of the retry delay")
      .add<double>("jitter", "random extra delay, fraction of the delay")
      .add<int64_t>("seed", "seed of the jitter generator")
      .add<caf::timespan>("attempt-timeout", "longest time one attempt may run")
      .add<int64_t>("max-restarts", "restarts allowed within restart-window")
      .add<caf::timespan>("restart-window", "window of the restart intensity")
      .add<bool>("skip-orphaned", "do not start work of terminated callers");
}

caf::expected<pool_options> options_from(const caf::actor_system_config& cfg,
                                         pool_options opts,
                                         const std::string& category) {
  auto key = [&](const char* name) { return category + "." + name; };
  auto bad = [](const std::string& field, const char* why) {
    return caf::make_error(pool_errc::invalid_option, field, std::string{why});
  };
  if (auto x = caf::get_if<bool>(&cfg, key("dedicated")); x && *x)
    opts.kind(worker_kind::dedicated);
  if (auto x = caf::get_if<int64_t>(&cfg, key("workers"))) {
    if (*x < 1)
      return bad("workers", "must be at least 1");
    opts.workers(static_cast<size_t>(*x));
  }
  if (auto x = caf::get_if<int64_t>(&cfg, key("max-attempts"))) {
    if (*x < 1 || *x > UINT32_MAX)
      return bad("max_attempts", "must be at least 1 (1 = no retry)");
    opts.max_attempts(static_cast<uint32_t>(*x));
  }
  auto initial =
      caf::get_or(cfg, key("backoff-initial"), opts.backoff_initial());
  auto max = caf::get_or(cfg, key("backoff-max"), opts.backoff_max());
  auto multiplier =
      caf::get_or(cfg, key("backoff-multiplier"), opts.backoff_multiplier());
  opts.backoff(initial, max, multiplier);
  opts.jitter(caf::get_or(cfg, key("jitter"), opts.jitter()));
  if (auto x = caf::get_if<int64_t>(&cfg, key("seed")))
    opts.seed(static_cast<uint64_t>(*x));
  if (auto x = caf::get_if<caf::timespan>(&cfg, key("attempt-timeout")))
    opts.attempt_timeout(*x);
  opts.restart_intensity(
      caf::get_or(cfg, key("max-restarts"), opts.max_restarts()),
      caf::get_or(cfg, key("restart-window"), opts.restart_window()));
  if (auto x = caf::get_if<bool>(&cfg, key("skip-orphaned")))
    opts.skip_orphaned(*x);
  if (auto err = opts.validate())
    return err;
  return opts;
}

} // namespace pool
