#include "enqueue.hpp"

#include <caf/scoped_actor.hpp>

#include <pool/errors.hpp>
#include <pool/pg_store.hpp>

#include "console.hpp"
#include "runner.hpp"
#include "type_ids.hpp"

namespace poolrun {

namespace {

/// Adds `jobs` to `store`, committed. Counts what was added and what the
/// queue had already; returns what went wrong, or "".
std::string add_jobs(pool::pg_store& store, pool::pg_store::time_point now,
                     std::vector<pending_job>& jobs, size_t& added,
                     size_t& present, size_t& refused) {
  for (auto& job : jobs) {
    if (!job.error.empty()) {
      console::message("job " + std::to_string(job.spec.seq) +
                       " not queued: " + job.error);
      ++refused;
      continue;
    }
    auto key = journal_key(job.spec.seq, job.spec.command);
    if (store.find_key(key, now, caf::timespan::max())) {
      ++present;
      continue;
    }
    auto id = store.last_operation_id() + 1;
    if (auto err = store.set_key(id, key)) {
      if (pool::is(err, pool::pool_errc::key_taken)) {
        ++present; // another poolrun added it just now
        continue;
      }
      return pool::describe(err);
    }
    pool::work_record rec{pool::attempt_id{id, 1}, caf::make_message(job.spec)};
    if (auto err = store.push(std::move(rec), now, now))
      return pool::describe(err);
    ++added;
  }
  if (auto err = store.commit())
    return pool::describe(err);
  return {};
}

} // namespace

int enqueue_only(caf::actor_system& sys, run_setup& setup) {
  auto& opts = setup.options;
  auto store = pool::pg_store::open(sys, opts.queue,
                                    pool::pg_options{}.queue(opts.queue_name));
  if (!store) {
    console::message("cannot open queue '" + opts.queue_name +
                     "': " + pool::describe(store.error()));
    return own_error;
  }
  caf::scoped_actor self{sys};
  setup.input->start(caf::actor{self});
  size_t added = 0;
  size_t present = 0;
  size_t refused = 0;
  std::string error;
  for (bool done = false; !done;) {
    self->receive(
        [&](feed_atom, std::vector<pending_job>& jobs) {
          auto n = jobs.size();
          if (error.empty())
            error = add_jobs(**store, sys.clock().now(), jobs, added, present,
                             refused);
          setup.input->consumed(n);
        },
        [&](feed_end_atom, uint64_t, std::string& why) {
          if (!why.empty() && error.empty())
            error = why;
          done = true;
        });
  }
  if (!error.empty()) {
    // What was committed stays queued; a rerun adds the rest.
    console::message("queue '" + opts.queue_name + "': " + error);
    return own_error;
  }
  console::message(std::to_string(added) + " jobs queued in '" +
                   opts.queue_name + "', " + std::to_string(present) +
                   " were there already");
  return refused > 0 ? own_error : 0;
}

} // namespace poolrun
