#include "shepherd_jobs.hpp"

#include <caf/event_based_actor.hpp>

#include "pool/detail/shepherd_core.hpp"
#include "pool/queue_protocol.hpp"
#include "pool/work_store.hpp"

namespace pool::detail {

caf::result<job_page> list_jobs(caf::event_based_actor* self,
                                shepherd_core& core, const caf::actor& queue,
                                const job_filter& filter) {
  if (!core.jobs_from_store() || !queue)
    return core.jobs(filter);
  if (auto err = shepherd_core::jobs_filter_error(filter))
    return err;
  auto rp = self->make_response_promise<job_page>();
  self->request(queue, caf::infinite, queue_msg::jobs_v, filter,
                core.dead_age())
    .then(
      [&core, rp](job_page& page) mutable {
        core.own_part(page);
        rp.deliver(std::move(page));
      },
      [rp](caf::error& err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

caf::result<jobs_acted> act_on_jobs(caf::event_based_actor* self,
                                    shepherd_core& core,
                                    const caf::actor& queue,
                                    const job_filter& filter, bool discard) {
  if (!core.jobs_from_store() || !queue)
    return discard ? core.discard_dead(filter) : core.retry_dead(filter);
  auto limit = core.take_limit(filter, discard);
  if (!limit)
    return std::move(limit.error());
  if (*limit == 0) {
    jobs_acted none;
    none.note = "retried 0: the queue is full; retry them later";
    return none;
  }
  auto rp = self->make_response_promise<jobs_acted>();
  self->request(queue, caf::infinite, queue_msg::take_ended_v, filter, *limit,
                core.dead_age(), discard)
    .then(
      [&core, rp, discard](ended_taken& taken) mutable {
        rp.deliver(discard ? core.discard_taken(taken)
                           : core.retry_taken(taken));
      },
      [rp](caf::error& err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

} // namespace pool::detail
