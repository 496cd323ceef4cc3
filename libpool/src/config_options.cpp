#include "pool/config_options.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include <caf/config_option.hpp>
#include <caf/make_config_option.hpp>
#include <caf/settings.hpp>

#include "pool/errors.hpp"

namespace pool {

namespace {

// CAF refuses a command-line value it cannot parse as its option's type
// before the application runs, in its parser's words
// ("parser_error(unexpected_character, ...)"). The pool's options take any
// text instead, typed as far as CAF can parse it, so that `options_from`
// can say what is wrong and what to write (see `check_types`).
template <class T>
const caf::config_option::meta_state* lenient_meta() {
  static const caf::config_option::meta_state meta = [] {
    auto result = *caf::detail::option_meta_state_instance<T>();
    result.check = [](const caf::config_value&) { return caf::error{}; };
    result.parse =
        [](void*, caf::string_view input) -> caf::expected<caf::config_value> {
      auto typed =
          caf::detail::option_meta_state_instance<T>()->parse(nullptr, input);
      if (typed)
        return typed;
      return caf::config_value{std::string{input.begin(), input.end()}};
    };
    return result;
  }();
  return &meta;
}

template <class T>
struct type_tag {
  using type = T;
};

enum class value_kind { integer, flag, duration, real, text };

struct pool_option {
  const char* name;
  value_kind kind;
  const char* example;
  const char* description;
};

// Every option: its name, its kind, an example value (for errors) and its
// description (for --help).
constexpr pool_option all_options[] = {
    {"workers", value_kind::integer, "8",
     "number of workers (resource instances)"},
    {"dedicated", value_kind::flag, "true",
     "give each worker a thread of its own"},
    {"short-cuts", value_kind::flag, "false",
     "skip round trips for the pool's own workers"},
    {"max-batch", value_kind::integer, "64",
     "most jobs per work_to_do, 1 = no batches"},
    {"batch-time", value_kind::duration, "1ms",
     "how long the jobs of one batch may take together"},
    {"max-attempts", value_kind::integer, "3",
     "attempts per operation, 1 = no retry"},
    {"backoff-initial", value_kind::duration, "100ms",
     "delay before the first retry"},
    {"backoff-max", value_kind::duration, "30s",
     "longest delay between retries"},
    {"backoff-multiplier", value_kind::real, "2.0",
     "growth of the retry delay"},
    {"jitter", value_kind::real, "0.2",
     "random extra delay, fraction of the delay"},
    {"seed", value_kind::integer, "42", "seed of the jitter generator"},
    {"attempt-timeout", value_kind::duration, "30s",
     "longest time one attempt may run"},
    {"max-restarts", value_kind::integer, "10",
     "restarts allowed within restart-window"},
    {"restart-window", value_kind::duration, "10s",
     "window of the restart intensity"},
    {"skip-orphaned", value_kind::flag, "true",
     "do not start work of terminated callers"},
    {"name", value_kind::text, "orders", "name of the pool in log lines"},
    {"capacity", value_kind::integer, "10000",
     "most operations waiting for a worker"},
    {"wait-when-full", value_kind::integer, "100",
     "submits that may wait for room"},
    {"overload-threshold", value_kind::integer, "1000",
     "waiting operations that trigger the overload warning"},
    {"overload-interval", value_kind::duration, "60s",
     "least time between two overload warnings"},
    {"overload-sustain", value_kind::duration, "5s",
     "how long an overload lasts before it warns"},
    {"slow-job-warning", value_kind::duration, "100ms",
     "warn of cooperative jobs running longer, 0 = never"},
    {"backlog-alarm", value_kind::duration, "30s",
     "how long a backlog may last before the alarm"},
    {"autoscale-min", value_kind::integer, "2", "autoscaling: fewest workers"},
    {"autoscale-max", value_kind::integer, "8", "autoscaling: most workers"},
    {"autoscale-grow-after", value_kind::duration, "10s",
     "autoscaling: backlog time before growing"},
    {"autoscale-shrink-after", value_kind::duration, "60s",
     "autoscaling: idle time before a worker stops"},
    {"durable", value_kind::text, "jobs.db",
     "keep the queue in this SQLite file"},
    {"durable-sync", value_kind::text, "normal", "full (default) or normal"},
    {"commit-interval", value_kind::duration, "1ms",
     "durable: least time between two commits"},
    {"unique-window", value_kind::duration, "1h",
     "durable: how long a finished unique key matches"},
    {"dead-set-size", value_kind::integer, "10000",
     "most failed jobs kept for retry (0 = none)"},
    {"dead-set-age", value_kind::duration, "168h",
     "failed jobs older than this are dropped (0 = none kept)"},
    {"postgres", value_kind::text, "postgres://pool@db/jobs",
     "keep the queue in PostgreSQL (shared by every pool naming it)"},
    {"postgres-queue", value_kind::text, "default",
     "postgres: the shared queue's name"},
    {"postgres-lease", value_kind::duration, "30s",
     "postgres: how long an attempt stays leased without renewal"},
    {"postgres-limit", value_kind::integer, "16",
     "postgres: most attempts running at once across every process"},
    {"rate-limit", value_kind::integer, "100",
     "most attempts started per rate-period"},
    {"rate-period", value_kind::duration, "1s",
     "the period of rate-limit and key-rate (default 1s)"},
    {"key-concurrency", value_kind::integer, "1",
     "most attempts of one concurrency key at once, 1 = in order"},
    {"key-rate", value_kind::integer, "10",
     "most attempts of one concurrency key started per rate-period"},
    {"priority-aging", value_kind::duration, "10s",
     "a waiting entry gains one priority level per this time"},
};

bool holds(const caf::config_value& x, value_kind kind) {
  switch (kind) {
    case value_kind::integer:
      return caf::holds_alternative<int64_t>(x);
    case value_kind::flag:
      return caf::holds_alternative<bool>(x);
    case value_kind::duration:
      return caf::holds_alternative<caf::timespan>(x);
    case value_kind::real:
      return caf::holds_alternative<double>(x) ||
             caf::holds_alternative<int64_t>(x);
    case value_kind::text:
      return caf::holds_alternative<std::string>(x);
  }
  return false;
}

const char* what_it_is_not(value_kind kind) {
  switch (kind) {
    case value_kind::integer:
      return "is not a whole number";
    case value_kind::flag:
      return "is neither true nor false";
    case value_kind::duration:
      return "is not a duration with a unit (ns, us, ms, s, min or h)";
    case value_kind::real:
      return "is not a number";
    case value_kind::text:
      return "is not text (write it in double quotes)";
  }
  return "has the wrong type";
}

// The first configured value of the wrong type, as an error that says what
// to write instead: `pool.invalid_option: pool.workers: "abc" is not a
// whole number: write one, e.g. --pool.workers=8 on the command line or
// workers=8 under [pool] in caf-application.ini`.
caf::error check_types(const caf::actor_system_config& cfg,
                       const std::string& category) {
  for (auto& opt : all_options) {
    auto key = category + "." + opt.name;
    auto value = caf::get_if(&cfg.content, key);
    if (value == nullptr || holds(*value, opt.kind))
      continue;
    // (A flag takes no value on the command line.)
    auto cli = "--" + key;
    if (opt.kind != value_kind::flag)
      cli += std::string{"="} + opt.example;
    std::string ini = opt.example;
    if (opt.kind == value_kind::text)
      ini = '"' + ini + '"';
    return caf::make_error(
        pool_errc::invalid_option, key,
        caf::to_string(*value) + " " + what_it_is_not(opt.kind) +
            ": write e.g. " + cli + " on the command line, or " + opt.name +
            "=" + ini + " under [" + category + "] in caf-application.ini");
  }
  return {};
}

// A real number, also when written as a whole one (`jitter=0`).
double real_or(const caf::actor_system_config& cfg, const std::string& key,
               double fallback) {
  if (auto x = caf::get_if<int64_t>(&cfg, key))
    return static_cast<double>(*x);
  return caf::get_or(cfg, key, fallback);
}

} // namespace

void declare_options(caf::config_option_set& options,
                     caf::string_view category) {
  auto add = [&](auto tag, const pool_option& opt) {
    using type = typename decltype(tag)::type;
    options.add(caf::config_option{category, opt.name, opt.description,
                                   lenient_meta<type>()});
  };
  for (auto& opt : all_options) {
    switch (opt.kind) {
      case value_kind::integer:
        add(type_tag<int64_t>{}, opt);
        break;
      case value_kind::flag:
        add(type_tag<bool>{}, opt);
        break;
      case value_kind::duration:
        add(type_tag<caf::timespan>{}, opt);
        break;
      case value_kind::real:
        add(type_tag<double>{}, opt);
        break;
      case value_kind::text:
        add(type_tag<std::string>{}, opt);
        break;
    }
  }
}

caf::expected<pool_options> options_from(const caf::actor_system_config& cfg,
                                         pool_options opts,
                                         const std::string& category) {
  auto key = [&](const char* name) { return category + "." + name; };
  auto bad = [](const std::string& field, const char* why) {
    return caf::make_error(pool_errc::invalid_option, field, std::string{why});
  };
  if (auto err = check_types(cfg, category))
    return err;
  if (auto x = caf::get_if<bool>(&cfg, key("dedicated")); x && *x)
    opts.kind(worker_kind::dedicated);
  if (auto x = caf::get_if<bool>(&cfg, key("short-cuts")))
    opts.short_cuts(*x);
  if (caf::get_if(&cfg.content, key("hand-ahead")) != nullptr)
    return bad(key("hand-ahead"),
               "was removed: the pool has one ahead mechanism, lookahead "
               "(set lookahead=false to switch it off)");
  if (auto x = caf::get_if<bool>(&cfg, key("lookahead")))
    opts.lookahead(*x);
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
      real_or(cfg, key("backoff-multiplier"), opts.backoff_multiplier());
  opts.backoff(initial, max, multiplier);
  opts.jitter(real_or(cfg, key("jitter"), opts.jitter()));
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
  if (auto x = caf::get_if<caf::timespan>(&cfg, key("slow-job-warning")))
    opts.slow_job_warning(*x);
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
  if (auto x = caf::get_if<std::string>(&cfg, key("postgres"))) {
    auto pg = pg_options{}.queue(
        caf::get_or(cfg, key("postgres-queue"), std::string{"default"}));
    if (auto lease = caf::get_if<caf::timespan>(&cfg, key("postgres-lease")))
      pg.lease(*lease);
    auto limit = count("postgres-limit", "postgres_limit", 1);
    if (!limit)
      return std::move(limit.error());
    if (*limit)
      pg.concurrency_limit(**limit);
    opts.postgres(*x, std::move(pg));
  }
  if (auto x = caf::get_if<caf::timespan>(&cfg, key("commit-interval")))
    opts.commit_interval(*x);
  if (auto x = caf::get_if<caf::timespan>(&cfg, key("unique-window")))
    opts.unique_window(*x);
  auto dead = opts.dead_set();
  auto dead_size = count("dead-set-size", "dead_set.max_jobs", 0);
  if (!dead_size)
    return std::move(dead_size.error());
  if (*dead_size)
    dead.max_jobs = **dead_size;
  if (auto x = caf::get_if<caf::timespan>(&cfg, key("dead-set-age")))
    dead.max_age = *x;
  opts.dead_set(dead);
  // Flow control: a pool-wide start rate, and limits for every key.
  auto period = caf::get_or(cfg, key("rate-period"),
                            caf::timespan{std::chrono::seconds(1)});
  auto rate = count("rate-limit", "rate_limit", 1);
  if (!rate)
    return std::move(rate.error());
  if (*rate)
    opts.rate_limit(**rate, period);
  auto key_conc = count("key-concurrency", "key_limit[every key].concurrency",
                        1);
  if (!key_conc)
    return std::move(key_conc.error());
  auto key_rate = count("key-rate", "key_limit[every key].rate", 1);
  if (!key_rate)
    return std::move(key_rate.error());
  auto aging = caf::get_if<caf::timespan>(&cfg, key("priority-aging"));
  if (*key_conc || *key_rate || aging) {
    auto flow = opts.key_flow();
    if (*key_conc || *key_rate) {
      key_limit every;
      if (*key_conc)
        every.concurrency = static_cast<uint32_t>(
            std::min<size_t>(**key_conc, UINT32_MAX));
      if (*key_rate)
        every.rate = start_rate{**key_rate, period};
      flow.every_key(every);
    }
    if (aging)
      flow.priority_aging(*aging);
    opts.key_flow(std::move(flow));
  }
  if (auto err = opts.validate())
    return err;
  return opts;
}

} // namespace pool
