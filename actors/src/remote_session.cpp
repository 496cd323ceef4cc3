#include "pool/remote_session.hpp"

#include <algorithm>
#include <cerrno>
#include <system_error>

#include <sys/random.h>

#include "pool/remote_types.hpp"

namespace pool::detail {

std::string make_session_secret() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    auto n = ::getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      throw std::system_error{errno, std::generic_category(), "getrandom"};
    }
    got += static_cast<size_t>(n);
  }
  static constexpr char digits[] = "0123456789abcdef";
  std::string result;
  result.reserve(2 * sizeof(bytes));
  for (auto x : bytes) {
    result += digits[x >> 4];
    result += digits[x & 0x0f];
  }
  return result;
}

bool same_secret(const std::string& given, const std::string& expected) {
  auto n = std::max(given.size(), expected.size());
  volatile unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    auto a = i < given.size() ? static_cast<unsigned char>(given[i]) : 0u;
    auto b = i < expected.size() ? static_cast<unsigned char>(expected[i]) : 0u;
    diff = diff | static_cast<unsigned char>(a ^ b);
  }
  return diff == 0;
}

std::optional<std::string> log_limiter::admit(remote_clock::time_point now,
                                              std::string text) {
  if (now - window_start_ >= window_) {
    window_start_ = now;
    used_ = 0;
  }
  if (used_ >= burst_) {
    ++suppressed_;
    return std::nullopt;
  }
  ++used_;
  if (suppressed_ > 0) {
    text += " (" + std::to_string(suppressed_) +
            " similar lines were left out before this one)";
    suppressed_ = 0;
  }
  return text;
}

caf::expected<std::pair<uint64_t, uint32_t>>
session_book::open(uint32_t wanted) {
  if (wanted == 0)
    return caf::make_error(remote_errc::limit, std::string{"node_join"},
                           std::string{"asks for 0 workers"});
  if (sessions_.size() >= limits_.max_nodes)
    return caf::make_error(remote_errc::limit, std::string{"node_join"},
                           "max_nodes is " + std::to_string(limits_.max_nodes) +
                               ": no room for another node");
  auto id = next_id_++;
  sessions_.emplace(id, entry{});
  return std::make_pair(id, std::min(wanted, limits_.max_workers_per_node));
}

void session_book::close(uint64_t id) {
  sessions_.erase(id);
}

bool session_book::note(uint64_t id, attempt_note what,
                        remote_clock::time_point now) {
  auto i = sessions_.find(id);
  if (i == sessions_.end())
    return false;
  auto& e = i->second;
  switch (what) {
    case attempt_note::answered:
      e.faults = 0;
      return false;
    case attempt_note::stale:
      return false;
    case attempt_note::timed_out:
    case attempt_note::wrong_type:
      break;
  }
  if (e.quarantined_until)
    return false; // Late faults of a quarantined node do not extend it.
  if (++e.faults < limits_.quarantine_after)
    return false;
  e.faults = 0;
  e.quarantined_until = now + limits_.quarantine_for;
  return true;
}

bool session_book::quarantine(uint64_t id, remote_clock::time_point now) {
  auto i = sessions_.find(id);
  if (i == sessions_.end() || i->second.quarantined_until)
    return false;
  i->second.faults = 0;
  i->second.quarantined_until = now + limits_.quarantine_for;
  return true;
}

bool session_book::quarantined(uint64_t id,
                               remote_clock::time_point now) const {
  auto i = sessions_.find(id);
  return i != sessions_.end() && i->second.quarantined_until &&
         now < *i->second.quarantined_until;
}

bool session_book::release(uint64_t id, remote_clock::time_point now) {
  auto i = sessions_.find(id);
  if (i == sessions_.end() || !i->second.quarantined_until ||
      now < *i->second.quarantined_until)
    return false;
  i->second.quarantined_until.reset();
  return true;
}

} // namespace pool::detail
