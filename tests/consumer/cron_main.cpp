// Uses the installed pool::cron alone: a schedule in a time zone.
#include <chrono>
#include <iostream>

#include <pool/cron.hpp>
#include <pool/errors.hpp>

int main() {
  auto schedule = pool::cron_schedule::parse("30 2 * * *", "Europe/Berlin");
  if (!schedule) {
    std::cerr << "consumer_cron: " << pool::describe(schedule.error()) << '\n';
    return 1;
  }
  // 2026-03-29 is the spring change in Berlin: 02:30 does not exist, so
  // the tick is at the change, 01:00 UTC.
  using namespace std::chrono;
  auto from = system_clock::time_point{seconds{1774738800}}; // 03-28 23:00 UTC
  auto next = schedule->next_after(from);
  if (!next || *next != system_clock::time_point{seconds{1774746000}}) {
    std::cerr << "consumer_cron: wrong tick: "
              << (next ? duration_cast<seconds>(next->time_since_epoch()).count()
                       : -1)
              << '\n';
    return 1;
  }
  std::cout << "consumer_cron: next 02:30 in Berlin after 2026-03-28 23:00 UTC"
               " is 01:00 UTC\n";
  return 0;
}
