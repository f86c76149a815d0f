// The pinned-memory ring through which the host reads a training step's scalars (loss, loss scale,
// found_inf) without stalling the GPU. Step s's scalars are copied by the stream, after the step's
// kernels, into slot s % depth of page-locked host memory, and an event is recorded behind the
// copy. The host delivers a slot once its event has completed, which it asks without waiting
// (cuEventQuery), so logs arrive a step or more late and the stream never drains. Only when the
// host runs `depth` steps ahead of the GPU does claiming a slot wait for the oldest one: that wait
// is counted (hostWaits; the final drain is not), and in a steady state with depth >= 2 it does not happen.
// Host logic over an Events policy (the CUDA device's events; a fake in the tests):
//   bool done(int slot)   the slot's copy has landed (never blocks)
//   void wait(int slot)   blocks until it has
#ifndef AMP_RUNTIME_DEVICES_CUDA_LOGRING_H
#define AMP_RUNTIME_DEVICES_CUDA_LOGRING_H

#include <cstdint>
#include <vector>

namespace amp::rt::cuda {

// One slot of the ring, as the device writes it.
struct LoggedScalars {
  float loss = 0.0f;
  float scale = 0.0f;
  float foundInf = 0.0f;
  int32_t pad = 0;
};

struct LoggedStep {
  int64_t step = 0;
  LoggedScalars scalars;
};

template <class Events>
class LogRing {
 public:
  // `pinned` holds `depth` slots (page-locked, written by the device).
  LogRing(int depth, const LoggedScalars* pinned, Events events)
      : pinned_(pinned), events_(events), stepInSlot_(depth > 0 ? depth : 1, -1) {}

  int depth() const { return static_cast<int>(stepInSlot_.size()); }
  int64_t hostWaits() const { return hostWaits_; }
  int64_t pending() const { return next_ - oldest_; }

  // The slot step `step` writes into (steps are consecutive). If it still holds an unread step,
  // that step is waited for and delivered first.
  template <class Deliver>
  int claim(int64_t step, Deliver deliver) {
    const int slot = static_cast<int>(step % depth());
    if (stepInSlot_[slot] >= 0) {
      events_.wait(slot);
      ++hostWaits_;
      deliverOldestThrough(stepInSlot_[slot], deliver);
    }
    return slot;
  }

  // After the copy into `slot` and its event are enqueued.
  void filled(int slot, int64_t step) {
    stepInSlot_[slot] = step;
    if (next_ == oldest_) oldest_ = step;
    next_ = step + 1;
  }

  // Delivers every completed step, oldest first, without waiting.
  template <class Deliver>
  void poll(Deliver deliver) {
    while (oldest_ < next_) {
      const int slot = static_cast<int>(oldest_ % depth());
      if (!events_.done(slot)) return;
      deliverOne(slot, deliver);
    }
  }

  // Waits for and delivers everything still in flight (the end of training).
  template <class Deliver>
  void drain(Deliver deliver) {
    while (oldest_ < next_) {
      const int slot = static_cast<int>(oldest_ % depth());
      if (!events_.done(slot)) events_.wait(slot);
      deliverOne(slot, deliver);
    }
  }

 private:
  template <class Deliver>
  void deliverOne(int slot, Deliver& deliver) {
    deliver(LoggedStep{stepInSlot_[slot], pinned_[slot]});
    stepInSlot_[slot] = -1;
    ++oldest_;
  }
  // Steps complete in stream order: everything up to `step` has landed once `step` has.
  template <class Deliver>
  void deliverOldestThrough(int64_t step, Deliver& deliver) {
    while (oldest_ <= step && oldest_ < next_) deliverOne(static_cast<int>(oldest_ % depth()), deliver);
  }

  const LoggedScalars* pinned_;
  Events events_;
  std::vector<int64_t> stepInSlot_;  // -1: free
  int64_t oldest_ = 0, next_ = 0;    // steps [oldest_, next_) are in flight or unread
  int64_t hostWaits_ = 0;
};

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_LOGRING_H
