#include "pool/detail/queue_link.hpp"

#include <algorithm>

#include <caf/make_message.hpp>

#include "pool/batch_buffers.hpp"
#include "pool/type_ids.hpp"

namespace pool {

namespace {

template <class... Fs>
struct overload : Fs... {
  using Fs::operator()...;
};

template <class... Fs>
overload(Fs...) -> overload<Fs...>;

} // namespace

queue_link::queue_link(operation_table& table, shepherd_effects& fx)
    : table_(table), fx_(fx) {
  // nop
}

bool queue_link::add(exchange::add x, time_point now) {
  x.due_now = x.due <= now;
  if (x.due_now && x.key.empty() && !x.ack && !x.options && adds_pending_ > 0 &&
      group_adds_) {
    grouped_.push_back(x.id);
    return false;
  }
  if (x.due_now)
    flush_group(); // Entries due now keep their order.
  transmit(pending_exchange{std::move(x), 0});
  return true;
}

void queue_link::send(pending_exchange::kind x) {
  transmit(pending_exchange{std::move(x), 0});
}

void queue_link::transmit(pending_exchange x) {
  auto now = fx_.now();
  auto sent = std::visit(
      overload{
          [&](exchange::add& ex) {
            auto op = table_.current(ex.id);
            if (op == nullptr) {
              // Nothing left to add; a caller waiting for the id still gets it
              // (its operation has ended meanwhile and says so by id).
              if (ex.ack)
                fx_.deliver(*ex.ack, caf::make_message(ex.id.operation));
              return false;
            }
            auto delay = ex.due > now ? ex.due - now : caf::timespan::zero();
            auto record = table_.record_of(ex.id, *op);
            std::optional<job_options> opts;
            if (ex.options) // (A first push: a store keeps them from then.)
              opts = table_.options_of(ex.id.operation, *op);
            if (opts)
              fx_.to_queue(caf::make_message(add_work_atom_v, std::move(record),
                                             delay, ex.key, std::move(*opts)));
            else if (ex.key.empty())
              fx_.to_queue(
                  caf::make_message(add_work_atom_v, std::move(record), delay));
            else
              fx_.to_queue(caf::make_message(add_work_atom_v, std::move(record),
                                             delay, ex.key));
            ex.due_now = delay == caf::timespan::zero();
            if (ex.due_now) {
              ++adds_pending_;
              ++due_in_flight_;
            }
            return true;
          },
          [&](exchange::add_many& ex) {
            // Entries of operations that ended or moved on are left out.
            auto records = batch_buffers::records(ex.ids.size());
            auto live = ex.ids.begin();
            for (auto& id : ex.ids) {
              if (auto op = table_.current(id)) {
                table_.append_record(records, id, *op);
                *live++ = id;
              }
            }
            ex.ids.erase(live, ex.ids.end());
            if (records.empty())
              return false;
            fx_.to_queue(
                caf::make_message(add_work_atom_v, std::move(records)));
            ++adds_pending_;
            due_in_flight_ += ex.ids.size();
            return true;
          },
          [&](exchange::get& ex) {
            fx_.to_queue(caf::make_message(get_work_atom_v, ex.wanted));
            getting_ += ex.wanted;
            return true;
          },
          [&](exchange::count&) {
            fx_.to_queue(caf::make_message(queue_msg::count_v));
            return true;
          },
          [&](exchange::remove& ex) {
            fx_.to_queue(caf::make_message(queue_msg::remove_v, ex.operation));
            return true;
          },
          [&](exchange::record& ex) {
            fx_.to_queue(ex.sent);
            return true;
          },
          [&](exchange::find_key& ex) {
            fx_.to_queue(ex.sent);
            return true;
          },
          [&](exchange::lookup& ex) {
            fx_.to_queue(ex.sent);
            return true;
          },
      },
      x.what);
  if (!sent)
    return;
  if (x.seq == 0)
    x.seq = next_seq_++;
  auto kind = answer_of(x.what);
  fifos_[static_cast<size_t>(kind)].push_back(std::move(x));
}

std::optional<pending_exchange::kind> queue_link::take(answer_kind kind) {
  auto& fifo = fifos_[static_cast<size_t>(kind)];
  if (fifo.empty())
    return std::nullopt;
  auto result = std::move(fifo.front().what);
  fifo.pop_front();
  if (auto get = std::get_if<exchange::get>(&result)) {
    getting_ -= get->wanted;
  } else {
    auto add = std::get_if<exchange::add>(&result);
    auto many = std::get_if<exchange::add_many>(&result);
    if ((add != nullptr && add->due_now) || many != nullptr) {
      due_in_flight_ -= many != nullptr ? many->ids.size() : 1;
      // The grouped entries go once no add due now is on its way.
      if (--adds_pending_ == 0)
        flush_group();
    }
  }
  return result;
}

void queue_link::resend_all() {
  std::vector<pending_exchange> pending;
  getting_ = 0; // (counted again as they are sent again)
  adds_pending_ = 0;
  due_in_flight_ = 0;
  for (auto& fifo : fifos_) {
    std::move(fifo.begin(), fifo.end(), std::back_inserter(pending));
    fifo.clear();
  }
  std::sort(pending.begin(), pending.end(),
            [](const pending_exchange& x, const pending_exchange& y) {
              return x.seq < y.seq;
            });
  for (auto& x : pending)
    transmit(std::move(x));
  if (adds_pending_ == 0)
    flush_group(); // no add left whose answer would send them
}

bool queue_link::adding() const {
  if (!grouped_.empty())
    return true;
  auto& counts = fifos_[static_cast<size_t>(answer_kind::counts)];
  return std::any_of(
      counts.begin(), counts.end(), [](const pending_exchange& x) {
        return std::holds_alternative<exchange::add>(x.what) ||
               std::holds_alternative<exchange::add_many>(x.what) ||
               std::holds_alternative<exchange::count>(x.what);
      });
}

bool queue_link::recording() const {
  auto& counts = fifos_[static_cast<size_t>(answer_kind::counts)];
  return std::any_of(counts.begin(), counts.end(),
                     [](const pending_exchange& x) {
                       return std::holds_alternative<exchange::record>(x.what);
                     });
}

bool queue_link::idle() const {
  return std::all_of(fifos_.begin(), fifos_.end(),
                     [](const auto& fifo) { return fifo.empty(); }) &&
         grouped_.empty();
}

std::vector<caf::response_promise> queue_link::take_promises() {
  std::vector<caf::response_promise> result;
  for (auto& fifo : fifos_) {
    for (auto& x : fifo) {
      if (auto add = std::get_if<exchange::add>(&x.what); add && add->ack)
        result.push_back(std::move(*add->ack));
      else if (auto lookup = std::get_if<exchange::lookup>(&x.what))
        result.push_back(std::move(lookup->promise));
    }
    fifo.clear();
  }
  return result;
}

answer_kind queue_link::answer_of(const pending_exchange::kind& x) {
  if (std::holds_alternative<exchange::get>(x))
    return answer_kind::work;
  if (std::holds_alternative<exchange::find_key>(x))
    return answer_kind::key;
  if (std::holds_alternative<exchange::lookup>(x))
    return answer_kind::record;
  return answer_kind::counts;
}

void queue_link::flush_group() {
  if (grouped_.empty())
    return;
  exchange::add_many x;
  auto size = grouped_.size();
  x.ids.swap(grouped_);
  if (!spares_.empty()) {
    grouped_.swap(spares_.back()); // (empty, with an earlier group's room)
    spares_.pop_back();
  } else {
    grouped_.reserve(size); // (One allocation, not a growing one.)
  }
  transmit(pending_exchange{std::move(x), 0});
}

} // namespace pool
