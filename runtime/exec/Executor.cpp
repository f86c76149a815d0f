#include "runtime/exec/Executor.h"

#include "absl/strings/str_cat.h"

namespace amp::rt {

std::string_view deviceName(Device d) {
  switch (d) {
    case Device::Reference: return "reference";
    case Device::Cpu: return "cpu";
    case Device::Cuda: return "cuda";
  }
  return "?";
}

void EntryReport::add(std::string_view name, int64_t n) {
  for (ReportCount& c : counts)
    if (c.name == name) {
      c.value += n;
      return;
    }
  counts.push_back({std::string(name), n});
}

int64_t EntryReport::count(std::string_view name) const {
  for (const ReportCount& c : counts)
    if (c.name == name) return c.value;
  return 0;
}

std::string EntryReport::countsText() const {
  std::string text;
  for (const ReportCount& c : counts) absl::StrAppend(&text, text.empty() ? "" : ", ", c.value, " ", c.name);
  return text;
}

absl::StatusOr<Device> parseDevice(std::string_view name) {
  if (name == "reference") return Device::Reference;
  if (name == "cpu") return Device::Cpu;
  if (name == "cuda") return Device::Cuda;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown device '", std::string(name), "' (expected reference, cpu or cuda)"));
}

}  // namespace amp::rt
