#include "runtime/plan/Plan.h"

namespace amp::rt {

std::string_view bufferKindName(BufferKind k) {
  switch (k) {
    case BufferKind::Param: return "param";
    case BufferKind::State: return "state";
    case BufferKind::Input: return "input";
    case BufferKind::Label: return "label";
    case BufferKind::Constant: return "constant";
    case BufferKind::Temp: return "temp";
  }
  return "?";
}

std::optional<BufferKind> parseBufferKind(std::string_view s) {
  for (BufferKind k : {BufferKind::Param, BufferKind::State, BufferKind::Input, BufferKind::Label,
                       BufferKind::Constant, BufferKind::Temp})
    if (bufferKindName(k) == s) return k;
  return std::nullopt;
}

const EntryPoint* Plan::findEntry(std::string_view name) const {
  for (const EntryPoint& e : entries)
    if (e.name == name) return &e;
  return nullptr;
}

std::optional<int32_t> Plan::findBuffer(std::string_view name) const {
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].name == name) return static_cast<int32_t>(i);
  return std::nullopt;
}

std::string Plan::metadataValue(std::string_view key) const {
  for (const auto& [k, v] : metadata)
    if (k == key) return v;
  return "";
}

}  // namespace amp::rt
