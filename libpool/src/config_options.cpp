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
      .add<bool>("short-cuts", "skip round trips for the pool's own workers")
      .add<bool>("hand-ahead",
                 "hand the next entry to a busy worker ahead of time")
      .add<int64_t>("max-batch", "most jobs per work_to_do, 1 = no batches")
      .add<caf::timespan>("batch-time",
                          "how long the jobs of one batch may take together")
      .add<int64_t>("max-attempts", "attempts per operation, 1 = no retry")
      .add<caf::timespan>("backoff-initial", "delay before the first retry")
      .add<caf::timespan>("backoff-max", "longest delay between retries")
      .add<double>("backoff-multiplier", "growth of the retry delay")
      .add<double>("jitter", "random extra delay, fraction of the delay")
      .add<int64_t>("seed", "seed of the jitter generator")
      .add<caf::timespan>("attempt-timeout", "longest time one attempt may run")
      .add<int64_t>("max-restarts", "restarts allowed within restart-window")
      .add<caf::timespan>("restart-window", "window of the restart intensity")
      .add<bool>("skip-orphaned", "do not start work of terminated callers")
      .add<std::string>("name", "name of the pool in log lines")
      .add<int64_t>("capacity", "most operations waiting for a worker")
      .add<int64_t>("wait-when-full", "submits that may wait for room")
      .add<int64_t>("overload-threshold",
                    "waiting operations that trigger the overload warning")
      .add<caf::timespan>("overload-interval",
                          "least time between two overload warnings")
      .add<caf::timespan>("overload-sustain",
                          "how long an overload lasts before it warns")
      .add<caf::timespan>("backlog-alarm",
                          "how long a backlog may last before the alarm")
      .add<int64_t>("autoscale-min", "autoscaling: fewest workers")
      .add<int64_t>("autoscale-max", "autoscaling: most workers")
      .add<caf::timespan>("autoscale-grow-after",
                          "autoscaling: backlog time before growing")
      .add<caf::timespan>("autoscale-shrink-after",
                          "autoscaling: idle time before a worker stops")
      .add<std::string>("durable", "keep the queue in this SQLite file")
      .add<std::string>("durable-sync", "full (default) or normal")
      .add<caf::timespan>("commit-interval",
                          "durable: least time between two commits")
      .add<caf::timespan>("unique-window",
                          "durable: how long a finished unique key matches");
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
  if (auto x = caf::get_if<bool>(&cfg, key("short-cuts")))
    opts.short_cuts(*x);
  if (auto x = caf::get_if<bool>(&cfg, key("hand-ahead")))
    opts.hand_ahead(*x);
  if (auto x = caf::get_if<caf::timespan>(&cfg, key("batch-time")))
    opts.batch_time(*x);
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
  if (auto x = caf::get_if<std::string>(&cfg, key("name")))
    opts.name(*x);
  // Counts: negative numbers are refused here, not wrapped around.
  auto count = [&](const char* name, const char* field,
                   int64_t min) -> caf::expected<std::optional<size_t>> {
    auto x = caf::get_if<int64_t>(&cfg, key(name));
    if (!x)
      return std::optional<size_t>{};
    if (*x < min)
      return bad(field,
                 min == 0 ? "must not be negative" : "must be at least 1");
    return std::optional<size_t>{static_cast<size_t>(*x)};
  };
  // (validate() bounds it from above.)
  auto batch = count("max-batch", "max_batch", 1);
  if (!batch)
    return std::move(batch.error());
  if (*batch)
    opts.max_batch(**batch);
  auto capacity = count("capacity", "capacity", 1);
  if (!capacity)
    return std::move(capacity.error());
  if (*capacity)
    opts.capacity(**capacity);
  auto parked = count("wait-when-full", "wait_when_full", 0);
  if (!parked)
    return std::move(parked.error());
  if (*parked)
    opts.wait_when_full(**parked);
  auto threshold = count("overload-threshold", "overload_warning.threshold", 1);
  if (!threshold)
    return std::move(threshold.error());
  auto interval =
      caf::get_or(cfg, key("overload-interval"), opts.overload_interval());
  if (*threshold)
    opts.overload_warning(**threshold, interval);
  else
    opts.overload_interval(interval);
  if (auto x = caf::get_if<caf::timespan>(&cfg, key("overload-sustain")))
    opts.overload_sustain(*x);
  if (auto x = caf::get_if<caf::timespan>(&cfg, key("backlog-alarm")))
    opts.backlog_alarm(*x);
  auto scale_min = count("autoscale-min", "autoscale.min", 0);
  if (!scale_min)
    return std::move(scale_min.error());
  auto scale_max = count("autoscale-max", "autoscale.max", 0);
  if (!scale_max)
    return std::move(scale_max.error());
  if (*scale_min || *scale_max) {
    if (!*scale_min || !*scale_max)
      return bad("autoscale", "needs both autoscale-min and autoscale-max");
    opts.autoscale(**scale_min, **scale_max,
                   caf::get_or(cfg, key("autoscale-grow-after"),
                               caf::timespan{std::chrono::seconds(10)}),
                   caf::get_or(cfg, key("autoscale-shrink-after"),
                               caf::timespan{std::chrono::seconds(60)}));
  }
  if (auto x = caf::get_if<std::string>(&cfg, key("durable"))) {
    auto sync = sqlite_sync::full;
    if (auto s = caf::get_if<std::string>(&cfg, key("durable-sync"))) {
      if (*s == "normal")
        sync = sqlite_sync::normal;
      else if (*s != "full")
        return bad("durable_sync", "must be full or normal");
    }
    opts.durable(*x, sync);
  }
  if (auto x = caf::get_if<caf::timespan>(&cfg, key("commit-interval")))
    opts.commit_interval(*x);
  if (auto x = caf::get_if<caf::timespan>(&cfg, key("unique-window")))
    opts.unique_window(*x);
  if (auto err = opts.validate())
    return err;
  return opts;
}

} // namespace pool
