// What a call of an entry logs for the host without the host waiting for it: the entry's scalar
// results (loss, found_inf, grad_norm, lr), and every scalar state buffer (loss scale, growth
// tracker, step and skip counters) before and after the call. A device with a stream (cuda)
// gathers these into one small device block inside the call and copies it to page-locked memory
// behind the call's work, so the host reads a step's log a step or more late without a stall
// (docs/cuda-device.md: host synchronisations). Host devices fill the same layout after the call.
#ifndef AMP_RUNTIME_EXEC_SCALARLOG_H
#define AMP_RUNTIME_EXEC_SCALARLOG_H

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "runtime/plan/Plan.h"

namespace amp::rt {

struct ScalarLogItem {
  enum class When { Result, Before, After };
  int32_t buffer = -1;
  When when = When::Result;
  int64_t offset = 0;  // in the log block; every item takes 8 bytes, its value at the start
  int32_t result = -1;  // When::Result: the entry's result index
};

struct ScalarLogLayout {
  std::vector<ScalarLogItem> items;
  int64_t bytes = 0;
};

// The layout every device uses for `entry`: its scalar results in result order, then each scalar
// state buffer of the plan before the call, then each after it.
ScalarLogLayout scalarLogLayout(const Plan& plan, const EntryPoint& entry);

// One delivered log, read by name.
class LoggedCall {
 public:
  LoggedCall(const Plan& plan, const EntryPoint& entry, const ScalarLogLayout& layout, int64_t ticket,
             absl::Span<const uint8_t> bytes)
      : plan_(plan), entry_(entry), layout_(layout), ticket_(ticket), bytes_(bytes) {}
  int64_t ticket() const { return ticket_; }
  // The scalar result `name`; none when the entry has no such scalar result.
  std::optional<double> result(std::string_view name) const;
  // The first scalar result (an entry's loss when it names none "loss").
  std::optional<double> firstResult() const;
  // Scalar state buffer `name` before or after the call; none when the plan has no such scalar.
  std::optional<double> stateBefore(std::string_view name) const { return state(name, ScalarLogItem::When::Before); }
  std::optional<double> stateAfter(std::string_view name) const { return state(name, ScalarLogItem::When::After); }

 private:
  std::optional<double> state(std::string_view name, ScalarLogItem::When when) const;
  double valueOf(const ScalarLogItem& item) const;

  const Plan& plan_;
  const EntryPoint& entry_;
  const ScalarLogLayout& layout_;
  int64_t ticket_;
  absl::Span<const uint8_t> bytes_;
};

}  // namespace amp::rt

#endif  // AMP_RUNTIME_EXEC_SCALARLOG_H
