#include "runtime/train/Scalars.h"

#include "runtime/numerics/Convert.h"

namespace amp::rt {

double scalarOf(const Tensor& t) {
  if (isFloat(t.dtype())) return loadAsF32(t.dtype(), t.data(), 0);
  if (t.dtype() == DType::I64) return static_cast<double>(t.as<int64_t>()[0]);
  if (t.dtype() == DType::I32) return t.as<int32_t>()[0];
  return 0;
}

std::optional<double> persistentScalarIfAny(const Session& session, const std::string& name) {
  std::optional<int32_t> id = session.plan().findBuffer(name);
  if (!id || !session.syncPersistent(*id).ok()) return std::nullopt;
  for (const NamedTensorRef& r : session.persistent())
    if (r.name == name && r.tensor->numel() == 1) return scalarOf(*r.tensor);
  return std::nullopt;
}

}  // namespace amp::rt
