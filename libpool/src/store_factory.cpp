#include "pool/store_factory.hpp"

#include <map>
#include <mutex>
#include <utility>

#include "pool/errors.hpp"
#include "pool/memory_store.hpp"
#include "pool/options.hpp"

namespace pool {

namespace {

struct registry {
  std::mutex mtx;
  std::map<std::string, store_factory> kinds;
};

/// Constructed on first use: the store libraries register from their own
/// static initializers, in any order.
registry& stores() {
  static registry instance;
  return instance;
}

store_factory registered(const std::string& kind) {
  auto& r = stores();
  std::lock_guard<std::mutex> guard{r.mtx};
  auto i = r.kinds.find(kind);
  return i == r.kinds.end() ? store_factory{} : i->second;
}

caf::error not_linked(const char* field, const char* target) {
  return caf::make_error(
      pool_errc::invalid_option, std::string{field},
      std::string{"names a store this program does not link: link "} + target
          + " (CMake: target_link_libraries(your_program PRIVATE " + target
          + "))");
}

} // namespace

void register_store(const std::string& kind, store_factory factory) {
  auto& r = stores();
  std::lock_guard<std::mutex> guard{r.mtx};
  if (factory)
    r.kinds[kind] = std::move(factory);
  else
    r.kinds.erase(kind);
}

caf::expected<std::shared_ptr<work_store>> store_for(caf::actor_system& sys,
                                                     const pool_options& opts) {
  if (opts.store())
    return opts.store()(sys, opts);
  if (opts.postgres_conninfo()) {
    if (auto open = registered("postgres"))
      return open(sys, opts);
    return not_linked("postgres", "pool::postgres");
  }
  if (opts.durable_path()) {
    if (auto open = registered("sqlite"))
      return open(sys, opts);
    return not_linked("durable", "pool::sqlite");
  }
  return std::shared_ptr<work_store>{std::make_shared<memory_store>()};
}

} // namespace pool
