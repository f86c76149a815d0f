#include "runtime/exec/ScalarLog.h"

#include <cstring>

#include "runtime/numerics/Convert.h"

namespace amp::rt {
namespace {
constexpr int64_t kItemBytes = 8;  // the widest scalar (i64, f64) and every item's alignment
}

ScalarLogLayout scalarLogLayout(const Plan& plan, const EntryPoint& entry) {
  ScalarLogLayout layout;
  auto add = [&](int32_t buffer, ScalarLogItem::When when, int32_t result) {
    layout.items.push_back({buffer, when, layout.bytes, result});
    layout.bytes += kItemBytes;
  };
  for (size_t r = 0; r < entry.results.size(); ++r) {
    const int32_t id = entry.results[r];
    if (plan.buffers[id].numel() == 1 && static_cast<int64_t>(dtypeSize(plan.buffers[id].dtype)) <= kItemBytes)
      add(id, ScalarLogItem::When::Result, static_cast<int32_t>(r));
  }
  for (ScalarLogItem::When when : {ScalarLogItem::When::Before, ScalarLogItem::When::After})
    for (size_t id = 0; id < plan.buffers.size(); ++id) {
      const BufferDesc& b = plan.buffers[id];
      if (b.kind == BufferKind::State && b.numel() == 1 && static_cast<int64_t>(dtypeSize(b.dtype)) <= kItemBytes)
        add(static_cast<int32_t>(id), when, -1);
    }
  return layout;
}

double LoggedCall::valueOf(const ScalarLogItem& item) const {
  const DType t = plan_.buffers[item.buffer].dtype;
  const uint8_t* p = bytes_.data() + item.offset;
  if (isFloat(t)) return loadAsF32(t, p, 0);
  if (t == DType::I64) {
    int64_t v;
    std::memcpy(&v, p, sizeof v);
    return static_cast<double>(v);
  }
  if (t == DType::I32) {
    int32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  if (t == DType::U8) return *p;
  return 0;
}

std::optional<double> LoggedCall::result(std::string_view name) const {
  for (const ScalarLogItem& item : layout_.items)
    if (item.when == ScalarLogItem::When::Result && static_cast<size_t>(item.result) < entry_.resultNames.size() &&
        entry_.resultNames[item.result] == name)
      return valueOf(item);
  return std::nullopt;
}

std::optional<double> LoggedCall::firstResult() const {
  for (const ScalarLogItem& item : layout_.items)
    if (item.when == ScalarLogItem::When::Result) return item.result == 0 ? std::optional<double>(valueOf(item)) : std::nullopt;
  return std::nullopt;
}

std::optional<double> LoggedCall::state(std::string_view name, ScalarLogItem::When when) const {
  for (const ScalarLogItem& item : layout_.items)
    if (item.when == when && plan_.buffers[item.buffer].name == name) return valueOf(item);
  return std::nullopt;
}

}  // namespace amp::rt
