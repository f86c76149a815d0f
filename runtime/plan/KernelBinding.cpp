#include "runtime/plan/KernelBinding.h"

#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "runtime/io/Sha256.h"

namespace amp::rt {
namespace {

// A canonical, unambiguous text: every item is length-prefixed or fixed-width, doubles by their
// bits, so two different steps never serialise alike.
void put(std::string& out, const std::string& s) { absl::StrAppend(&out, s.size(), ":", s, ";"); }
void put(std::string& out, int64_t v) { absl::StrAppend(&out, "i", v, ";"); }
void putDouble(std::string& out, double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof(bits));
  absl::StrAppend(&out, "f", bits, ";");
}
template <typename T>
void putInts(std::string& out, const std::vector<T>& v) {
  absl::StrAppend(&out, "[", v.size(), "]");
  for (T x : v) put(out, static_cast<int64_t>(x));
}

void putAttrs(std::string& out, const AttrMap& attrs, bool outer) {
  for (const auto& [name, value] : attrs) {
    if (outer && (name == "kernel" || name == "symbol" || name == "cuda_symbol" || name == "cuda_vector_width")) continue;
    put(out, name);
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, int64_t>) put(out, v);
          else if constexpr (std::is_same_v<T, double>) putDouble(out, v);
          else if constexpr (std::is_same_v<T, bool>) absl::StrAppend(&out, v ? "T;" : "F;");
          else if constexpr (std::is_same_v<T, std::string>) put(out, v);
          else if constexpr (std::is_same_v<T, std::vector<int64_t>>) putInts(out, v);
          else if constexpr (std::is_same_v<T, std::vector<double>>) {
            absl::StrAppend(&out, "[", v.size(), "]");
            for (double d : v) putDouble(out, d);
          } else {
            put(out, std::string(dtypeName(v.dtype())));
            putInts(out, v.shape());
            put(out, sha256Hex(v.data(), v.nbytes()));
          }
        },
        value);
  }
}

std::string bodyText(const PlanStep& step) {
  std::string text = "ampc fused body v1;";
  put(text, step.op);
  absl::StrAppend(&text, "operands[", step.operands.size(), "]results[", step.results.size(), "]");
  putAttrs(text, step.attrs, /*outer=*/true);
  absl::StrAppend(&text, "locals[", step.locals.size(), "]");
  for (const LocalValue& v : step.locals) {
    put(text, std::string(dtypeName(v.dtype)));
    putInts(text, v.shape);
  }
  absl::StrAppend(&text, "body[", step.body.size(), "]");
  for (const PlanStep& op : step.body) {
    put(text, op.op);
    putInts(text, op.operands);
    putInts(text, op.results);
    absl::StrAppend(&text, "attrs[", op.attrs.size(), "]");
    putAttrs(text, op.attrs, /*outer=*/false);
  }
  putInts(text, step.yields);
  return text;
}

}  // namespace

std::string fusedBodyHash(const PlanStep& step) {
  const std::string text = bodyText(step);
  return sha256Hex(reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

std::string cudaKernelName(const Plan& plan, const PlanStep& step) {
  std::string text = "ampc cuda kernel v1;" + bodyText(step);
  auto putBuffers = [&](const char* what, const std::vector<int32_t>& ids) {
    absl::StrAppend(&text, what, "[", ids.size(), "]");
    for (int32_t id : ids) {
      // Ids are validated with the plan; one out of range still names no kernel.
      if (id < 0 || static_cast<size_t>(id) >= plan.buffers.size()) {
        put(text, int64_t{-1});
        continue;
      }
      put(text, std::string(dtypeName(plan.buffers[id].dtype)));
      putInts(text, plan.buffers[id].shape);
    }
  };
  putBuffers("operands", step.operands);
  putBuffers("results", step.results);
  const AttrValue* width = step.attrs.find("cuda_vector_width");
  const int64_t* w = width ? std::get_if<int64_t>(width) : nullptr;
  put(text, w ? *w : int64_t{0});
  return "amp_k" + sha256Hex(reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

}  // namespace amp::rt
