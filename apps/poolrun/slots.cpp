// The slot table: connecting hosts, handing out slots, losing hosts.
#include "slots.hpp"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include <unistd.h>

namespace poolrun {

namespace {

constexpr auto connect_timeout = std::chrono::seconds(15);

size_t local_cores() {
  auto n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<size_t>(n) : 1;
}

/// A host being set up: its masters, connected concurrently.
struct pending_host {
  host_info info;
  std::vector<std::unique_ptr<ssh_master>> masters;
  std::string failure;
};

void connect_host(pending_host& h, const jobs_spec& jobs,
                  const std::string& dir, size_t index,
                  std::vector<std::string>& warnings, std::mutex& mtx) {
  auto path = [&](size_t k) {
    return dir + "/h" + std::to_string(index) + "s" + std::to_string(k);
  };
  auto first = std::make_unique<ssh_master>(h.info.login, path(0));
  auto why = first->connect(connect_timeout);
  if (!why.empty()) {
    h.failure = why;
    return;
  }
  h.info.cores = h.info.login.cpus.value_or(0);
  if (h.info.cores == 0) {
    std::string out;
    if (first->run("nproc 2>/dev/null || getconf _NPROCESSORS_ONLN", out,
                   std::chrono::seconds(15)))
      h.info.cores = static_cast<size_t>(std::strtoul(out.c_str(), nullptr,
                                                      10));
    if (h.info.cores == 0) {
      std::lock_guard<std::mutex> guard{mtx};
      warnings.push_back("host " + h.info.login.display +
                         ": cannot tell its number of cores; taking 1");
      h.info.cores = 1;
    }
  }
  auto count = jobs.slots(h.info.cores);
  h.masters.resize(count);
  h.masters[0] = std::move(first);
  std::vector<std::thread> threads;
  std::vector<std::string> failures(count);
  for (size_t k = 1; k < count; ++k)
    threads.emplace_back([&, k] {
      auto m = std::make_unique<ssh_master>(h.info.login, path(k));
      failures[k] = m->connect(connect_timeout);
      if (failures[k].empty())
        h.masters[k] = std::move(m);
    });
  for (auto& t : threads)
    t.join();
  size_t lost = 0;
  for (size_t k = 1; k < count; ++k)
    if (!failures[k].empty()) {
      ++lost;
      std::lock_guard<std::mutex> guard{mtx};
      if (lost == 1)
        warnings.push_back("host " + h.info.login.display + ": " +
                           failures[k] + " (a slot fewer)");
    }
  h.masters.erase(std::remove(h.masters.begin(), h.masters.end(), nullptr),
                  h.masters.end());
}

} // namespace

std::shared_ptr<slot_table> slot_table::open(
    const std::vector<sshlogin>& logins, const jobs_spec& jobs, warn_fn warn,
    std::string& error) {
  std::shared_ptr<slot_table> table{new slot_table};
  table->warn_ = std::move(warn);
  std::vector<pending_host> pending;
  if (logins.empty()) {
    sshlogin local;
    local.login = ":";
    local.display = ":";
    pending.push_back({host_info{local, 0, true}, {}, {}});
  }
  for (auto& login : logins)
    pending.push_back({host_info{login, 0, true}, {}, {}});
  bool any_remote = std::any_of(logins.begin(), logins.end(),
                                [](auto& x) { return !x.local(); });
  if (any_remote) {
    char tmpl[] = "/tmp/poolrun-ssh-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) {
      error = "cannot create a directory for ssh control sockets in /tmp";
      return nullptr;
    }
    table->control_dir_ = tmpl;
    table->remote_ = true;
  }
  std::vector<std::string> warnings;
  std::mutex mtx;
  std::vector<std::thread> threads;
  for (size_t i = 0; i < pending.size(); ++i) {
    auto& h = pending[i];
    if (h.info.login.local()) {
      h.info.cores = h.info.login.cpus.value_or(local_cores());
      continue;
    }
    threads.emplace_back([&, i] {
      connect_host(pending[i], jobs, table->control_dir_, i, warnings, mtx);
    });
  }
  for (auto& t : threads)
    t.join();
  std::string failures;
  for (auto& h : pending) {
    if (!h.failure.empty()) {
      warnings.push_back("host " + h.info.login.display +
                         " cannot be used: " + h.failure);
      failures += (failures.empty() ? "" : "; ") + h.info.login.display +
                  ": " + h.failure;
      continue;
    }
    auto index = table->hosts_.size();
    auto count = h.info.login.local() ? jobs.slots(h.info.cores)
                                      : h.masters.size();
    for (size_t k = 0; k < count; ++k) {
      slot s;
      s.number = table->slots_.size() + 1;
      s.host = index;
      if (!h.info.login.local())
        s.master = std::move(h.masters[k]);
      table->slots_.push_back(std::move(s));
    }
    table->hosts_.push_back(h.info);
  }
  for (auto& text : warnings)
    table->warn_(text);
  if (table->slots_.empty()) {
    error = "no host can run commands (" + failures + ")";
    return nullptr;
  }
  return table;
}

slot_table::~slot_table() {
  close();
}

void slot_table::announce(uint64_t seq) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (!remote_)
    announced_.insert(seq);
}

void slot_table::forget(uint64_t seq) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (announced_.erase(seq) == 0)
      return;
  }
  cv_.notify_all();
}

slot* slot_table::acquire(size_t preferred, const std::vector<size_t>& avoid,
                          uint64_t seq) {
  auto avoided = [&](const slot& s) {
    return std::find(avoid.begin(), avoid.end(), s.host) != avoid.end();
  };
  std::unique_lock<std::mutex> guard{mtx_};
  if (announced_.count(seq) > 0) {
    // Earlier jobs first; one that does not come in time is passed by
    // (it may never start: a run that stops).
    auto until = std::chrono::steady_clock::now() + turn_wait;
    while (*announced_.begin() != seq &&
           cv_.wait_until(guard, until) != std::cv_status::timeout) {
    }
    announced_.erase(seq);
    cv_.notify_all();
  }
  if (by_seq_ && !remote_ && seq >= 1 && seq <= slots_.size() &&
      !slots_[seq - 1].busy) {
    slots_[seq - 1].busy = true;
    return &slots_[seq - 1];
  }
  for (;;) {
    // A host the job has not failed on is worth waiting for; the others
    // only when there is none (GNU parallel's --retries rule).
    bool any_up = false;
    bool other_up = false;
    for (auto& s : slots_) {
      if (!hosts_[s.host].up)
        continue;
      any_up = true;
      other_up = other_up || !avoided(s);
    }
    if (!any_up)
      return nullptr;
    slot* best = nullptr;
    for (auto& s : slots_) {
      if (!hosts_[s.host].up || s.busy || (other_up && avoided(s)))
        continue;
      // Local only: the lowest free slot, as GNU parallel numbers {%}.
      // With remote slots, the worker's own one (its connection) first.
      if (best == nullptr || (remote_ && s.number == preferred))
        best = &s;
      if (!remote_ || s.number == preferred)
        break;
    }
    if (best != nullptr) {
      best->busy = true;
      return best;
    }
    cv_.wait(guard);
  }
}

void slot_table::release(slot* s) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    s->busy = false;
    s->remote_pgid = 0;
  }
  cv_.notify_all();
}

bool slot_table::host_down(size_t index, const std::string& why) {
  bool report = false;
  bool any_up = false;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    report = hosts_[index].up;
    hosts_[index].up = false;
    for (auto& h : hosts_)
      any_up = any_up || h.up;
  }
  cv_.notify_all();
  if (report)
    warn_("host " + hosts_[index].login.display + " lost: " + why +
          "; its commands go to the other hosts");
  return any_up;
}

void slot_table::running_remotely(slot* s, long pgid) {
  std::lock_guard<std::mutex> guard{mtx_};
  s->remote_pgid = pgid;
}

void slot_table::signal_remote(int sig) {
  std::vector<std::pair<ssh_master*, long>> targets;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    for (auto& s : slots_)
      if (s.busy && s.master && s.remote_pgid > 1)
        targets.emplace_back(s.master.get(), s.remote_pgid);
  }
  std::vector<std::thread> threads;
  for (auto& target : targets)
    threads.emplace_back([target, sig] {
      std::string out;
      target.first->run("kill -" + std::to_string(sig) + " -- -" +
                            std::to_string(target.second),
                        out, std::chrono::seconds(10));
    });
  for (auto& t : threads)
    t.join();
}

void slot_table::close() {
  std::vector<std::thread> threads;
  for (auto& s : slots_)
    if (s.master)
      threads.emplace_back([&s] { s.master->stop(); });
  for (auto& t : threads)
    t.join();
  if (!control_dir_.empty()) {
    ::rmdir(control_dir_.c_str());
    control_dir_.clear();
  }
}

} // namespace poolrun
