// The pinned-memory ring through which the host reads each call's scalar log (loss, loss scale,
// found_inf, counters: runtime/exec/ScalarLog.h) without stalling the GPU. Call t's log is copied
// by the stream, after the call's kernels, into slot t % depth of page-locked host memory, and an
// event is recorded behind the copy. The host delivers a slot once its event has completed, which
// it asks without waiting (cuEventQuery), so logs arrive a step or more late and the stream never
// drains. Only when the host runs `depth` calls ahead of the GPU does claiming a slot wait for the
// oldest one: that wait is counted (hostWaits; the final drain is not), and in a steady state
// with depth >= 2 and a GPU that keeps up it does not happen.
// Host logic over an Events policy (the CUDA device's events; a simulated stream in the tests):
//   bool done(int slot)   the slot's copy has landed (never blocks)
//   void wait(int slot)   blocks until it has
// Deliver: void(int64_t ticket, absl::Span<const uint8_t> log), the slot's bytes, valid during the call.
#ifndef AMP_RUNTIME_DEVICES_CUDA_LOGRING_H
#define AMP_RUNTIME_DEVICES_CUDA_LOGRING_H

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace amp::rt::cuda {

template <class Events>
class LogRing {
 public:
  // `pinned` holds `depth` slots of `slotBytes` each (page-locked, written by the device).
  LogRing(int depth, const uint8_t* pinned, int64_t slotBytes, Events events)
      : pinned_(pinned), slotBytes_(slotBytes), events_(events), ticketInSlot_(depth > 0 ? depth : 1, -1) {}

  int depth() const { return static_cast<int>(ticketInSlot_.size()); }
  const Events& events() const { return events_; }
  int64_t hostWaits() const { return hostWaits_; }
  int64_t pending() const { return inFlight_; }
  // The slot's page-locked bytes, for the call that claimed it to fill.
  uint8_t* slotData(int slot) const { return const_cast<uint8_t*>(pinned_) + slot * slotBytes_; }

  // The slot the next call writes into. If it still holds an undelivered call, that call (and
  // every older one) is delivered first, after waiting for it if it has not finished.
  template <class Deliver>
  int claim(Deliver deliver) {
    const int slot = static_cast<int>(next_ % depth());
    if (ticketInSlot_[slot] >= 0) {
      if (!events_.done(slot)) {
        events_.wait(slot);
        ++hostWaits_;
      }
      while (ticketInSlot_[slot] >= 0) deliverOldest(deliver);
    }
    return slot;
  }

  // After the copy into `slot` (the one claim returned) and its event are enqueued.
  void filled(int slot, int64_t ticket) {
    ticketInSlot_[slot] = ticket;
    ++inFlight_;
    ++next_;
  }

  // Delivers every completed call, oldest first, without waiting.
  template <class Deliver>
  void poll(Deliver deliver) {
    while (inFlight_ > 0 && events_.done(oldestSlot())) deliverOldest(deliver);
  }

  // Waits for and delivers every call still in flight.
  template <class Deliver>
  void drain(Deliver deliver) {
    while (inFlight_ > 0) {
      if (!events_.done(oldestSlot())) events_.wait(oldestSlot());
      deliverOldest(deliver);
    }
  }

 private:
  // Calls complete in stream order: the oldest undelivered one has landed once a newer one has.
  template <class Deliver>
  void deliverOldest(Deliver& deliver) {
    const int slot = oldestSlot();
    deliver(ticketInSlot_[slot], absl::Span<const uint8_t>(pinned_ + slot * slotBytes_, static_cast<size_t>(slotBytes_)));
    ticketInSlot_[slot] = -1;
    --inFlight_;
  }
  // Slots are claimed in turn, so the oldest call in flight sits `inFlight_` claims back.
  int oldestSlot() const { return static_cast<int>((next_ - inFlight_) % depth()); }

  const uint8_t* pinned_;
  int64_t slotBytes_;
  Events events_;
  std::vector<int64_t> ticketInSlot_;  // -1: free
  int64_t inFlight_ = 0;               // filled, not yet delivered
  int64_t next_ = 0;                   // calls filled so far
  int64_t hostWaits_ = 0;
};

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_LOGRING_H
