#pragma once

#include <utility>

#include <caf/actor.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/message_id.hpp>
#include <caf/scheduled_actor.hpp>

namespace pool {

namespace detail {

/// Enqueues `element` at `to` as `send_spread` describes.
void enqueue_spread(caf::scheduled_actor* self, const caf::actor& to,
                    caf::mailbox_element_ptr element);

} // namespace detail

/// Sends `xs...` from `self` to the cooperative actor `to`, placing `to` on
/// an idle scheduler thread when the message makes it runnable.
///
/// CAF 0.17's work-stealing scheduler queues an actor made runnable from
/// inside the scheduler on the sender's thread, and wakes nobody: a thread
/// sleeping on its condition variable looks for work to steal only every
/// `relaxed-sleep-duration` (10 ms). A worker that reports a result while
/// its next job already waits in its mailbox keeps its thread, so the
/// shepherd it made runnable waits behind the whole next job while another
/// core idles (two workers of 200 us jobs reached 0.68 of ideal). Here, if
/// the sender has more mail and another scheduler thread sleeps, `to` goes
/// to that thread, which is woken; otherwise it is queued as usual, which
/// costs no wake-up. Outside CAF's work-stealing scheduler (the testing
/// scheduler, work sharing, a detached sender) this is a plain `send`.
///
/// The values go into the mailbox element as they are, as `send` does: a
/// `caf::message` built first would cost an allocation more per message.
template <class... Ts>
void send_spread(caf::scheduled_actor* self, const caf::actor& to,
                 Ts&&... xs) {
  if (!to)
    return;
  detail::enqueue_spread(self, to,
                         caf::make_mailbox_element(self->ctrl(),
                                                   caf::make_message_id(), {},
                                                   std::forward<Ts>(xs)...));
}

} // namespace pool
