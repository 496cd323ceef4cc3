// Hash files: a CPU-bound pool on dedicated threads hashes the files of a
// directory (FNV-1a 64, first argument, default /usr/include/caf).
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <caf/all.hpp>
#include <pool/all.hpp>

using namespace std::chrono_literals;
namespace fs = std::filesystem;

struct config : caf::actor_system_config {
  config() {
    pool::configure(*this);
  }
};

// At most this many files are hashed, however large the directory tree.
constexpr size_t max_files = 200;

// FNV-1a 64 over the bytes of the file at `path`. A file that cannot be read
// is an error for this file only.
caf::expected<uint64_t> fnv1a_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return caf::make_error(caf::sec::runtime_error, "cannot open " + path);
  uint64_t hash = 14695981039346656037ull;
  std::vector<char> buf(64 * 1024);
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) ||
         in.gcount() > 0) {
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      hash ^= static_cast<unsigned char>(buf[static_cast<size_t>(i)]);
      hash *= 1099511628211ull;
    }
  }
  if (in.bad())
    return caf::make_error(caf::sec::runtime_error, "cannot read " + path);
  return hash;
}

// The regular files under `dir` (recursively, at most `max_files`), with
// their sizes.
caf::expected<std::vector<std::pair<std::string, uint64_t>>>
list_files(const fs::path& dir) {
  std::vector<std::pair<std::string, uint64_t>> result;
  std::error_code ec;
  fs::recursive_directory_iterator it{
      dir, fs::directory_options::skip_permission_denied, ec};
  for (; !ec && it != fs::recursive_directory_iterator{} &&
         result.size() < max_files;
       it.increment(ec)) {
    std::error_code size_ec;
    if (!it->is_regular_file(size_ec))
      continue;
    auto size = it->file_size(size_ec);
    result.emplace_back(it->path().string(), size_ec ? 0 : size);
  }
  if (ec)
    return caf::make_error(caf::sec::runtime_error,
                           "cannot list " + dir.string() + ": " + ec.message());
  return result;
}

void caf_main(caf::actor_system& sys, const config& cfg) {
  fs::path dir = cfg.remainder.empty() ? "/usr/include/caf" : cfg.remainder[0];
  auto files = list_files(dir);
  if (!files) {
    std::cerr << pool::describe(files.error()) << '\n';
    return;
  }
  // CPU-bound jobs: one dedicated thread per worker; without workers(n) a
  // dedicated pool has cores - 1 workers (at least 1).
  // All files are submitted at once, so a backlog of up to `max_files` is
  // expected: warn only beyond that.
  auto opts = pool::pool_options{}
                  .kind(pool::worker_kind::dedicated)
                  .overload_warning(max_files, 60s);
  auto pool = pool::spawn_pool(sys, fnv1a_file, opts);
  if (!pool) {
    std::cerr << "cannot start pool: " << pool::describe(pool.error()) << '\n';
    return;
  }
  // Submit every file at once; the pool runs as many as it has workers.
  std::vector<std::future<caf::expected<uint64_t>>> hashes;
  for (auto& file : *files)
    hashes.push_back(pool::submit_future<uint64_t>(sys, *pool, file.first));
  size_t hashed = 0;
  uint64_t bytes = 0;
  uint64_t combined = 0;
  for (size_t i = 0; i < hashes.size(); ++i) {
    auto hash = hashes[i].get();
    if (!hash) {
      // The final error carries the attempt history: print the job's own
      // reason (the last attempt's), then go on with the other files.
      auto history = pool::attempt_history(hash.error());
      std::cerr << (*files)[i].first << ": "
                << pool::describe(history.empty() ? hash.error()
                                                  : history.back().reason)
                << '\n';
      continue;
    }
    ++hashed;
    bytes += (*files)[i].second;
    combined ^= *hash;
  }
  std::cout << "hashed " << hashed << " of " << files->size() << " files in "
            << dir.string() << " (" << bytes << " bytes), xor of hashes "
            << std::hex << combined << std::dec << '\n';
  // Ask the pool how it went (from plain code: a scoped actor).
  caf::scoped_actor self{sys};
  self->request(*pool, 5s, pool::pool_stats_atom_v)
      .receive(
          [](const pool::pool_stats& stats) {
            std::cout << "workers: " << stats.workers
                      << ", completed: " << stats.completed
                      << ", failed: " << stats.failed << '\n'
                      << "processing: " << pool::to_string(stats.processing)
                      << '\n';
          },
          [](caf::error& err) {
            std::cerr << "no stats: " << pool::describe(err) << '\n';
          });
}

CAF_MAIN()
