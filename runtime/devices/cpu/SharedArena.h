// Internal to the cpu device: the one arena every entry prepared by an executor (a session's
// train_step, eval, ...) places its buffers and step scratch in. Entries run one at a time and an
// arena holds nothing between calls (each call writes every arena buffer before reading it, and
// scratch is anything at each run), so one allocation sized for the largest entry serves them all.
// Entries keep offsets, and rebind their pointers when `generation` says the arena was replaced
// by a bigger one since they last bound.
#ifndef AMP_RUNTIME_DEVICES_CPU_SHAREDARENA_H
#define AMP_RUNTIME_DEVICES_CPU_SHAREDARENA_H

#include <cstdint>
#include <cstdlib>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/ArenaMemory.h"
#include "runtime/plan/MemoryPlan.h"

namespace amp::rt::cpu {

class SharedArena {
 public:
  // Makes the arena at least `bytes` long. A bigger arena is a new zeroed allocation (the old
  // contents are not kept: nothing lives there between calls) and bumps the generation. The new
  // block is allocated before the old is freed, so a failure leaves the arena as it was.
  absl::Status reserve(int64_t bytes) {
    if (bytes <= bytes_) return absl::OkStatus();
    std::unique_ptr<uint8_t, Free> bigger(allocateArena(static_cast<size_t>(bytes), kArenaAlignment));
    if (!bigger) return absl::ResourceExhaustedError(absl::StrCat("cannot allocate a ", bytes, "-byte arena"));
    data_ = std::move(bigger);
    bytes_ = bytes;
    ++generation_;
    return absl::OkStatus();
  }
  uint8_t* base() const { return data_.get(); }
  int64_t bytes() const { return bytes_; }
  uint64_t generation() const { return generation_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> data_;
  int64_t bytes_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_SHAREDARENA_H
