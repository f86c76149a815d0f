#include "runtime/dist/ReduceRules.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt {

bool reduceSupports(ReduceOp op, DType dtype) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Mean:
      return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
    case ReduceOp::Max:
      return dtype == DType::F32 || dtype == DType::I32 || dtype == DType::I64;
  }
  return false;
}

absl::Status checkAllReduceArgs(const void* data, int64_t count, DType dtype, ReduceOp op) {
  if (count < 0) return absl::InvalidArgumentError(absl::StrCat("allReduce: negative count ", count));
  if (count > 0 && data == nullptr)
    return absl::InvalidArgumentError(absl::StrCat("allReduce: null buffer for ", count, " elements"));
  if (!reduceSupports(op, dtype))
    return absl::InvalidArgumentError(
        absl::StrCat("allReduce: ", reduceOpName(op), " is not defined for ", std::string(dtypeName(dtype)),
                     " (sum and mean take f32, f16, bf16; max takes f32, i32, i64)"));
  return absl::OkStatus();
}

absl::Status checkReduceScatterArgs(const void* data, int64_t chunkCount, DType dtype, ReduceOp op, const void* out) {
  if (op == ReduceOp::Max) return absl::InvalidArgumentError("reduceScatter: takes sum or mean, not max");
  if (chunkCount > 0 && out == nullptr)
    return absl::InvalidArgumentError(absl::StrCat("reduceScatter: null result buffer for ", chunkCount, " elements"));
  if (absl::Status s = checkAllReduceArgs(data, chunkCount, dtype, op); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat("reduceScatter", s.message().substr(9)));
  return absl::OkStatus();
}

absl::Status checkBroadcastArgs(const void* data, int64_t bytes, int root, int worldSize) {
  if (bytes < 0) return absl::InvalidArgumentError(absl::StrCat("broadcast: negative size ", bytes));
  if (bytes > 0 && data == nullptr) return absl::InvalidArgumentError("broadcast: null buffer");
  if (root < 0 || root >= worldSize)
    return absl::InvalidArgumentError(absl::StrCat("broadcast: root ", root, " is not a rank of a job of ", worldSize));
  return absl::OkStatus();
}

void divideForMean(void* data, int64_t count, DType dtype, int worldSize) {
  if (worldSize == 1) return;
  const float n = static_cast<float>(worldSize);
  if (dtype == DType::F32) {
    float* x = static_cast<float*>(data);
    for (int64_t i = 0; i < count; ++i) x[i] = x[i] / n;
    return;
  }
  // f16 and bf16: widen exactly, divide in f32, round once.
  for (int64_t i = 0; i < count; ++i) storeFromF32(dtype, data, i, loadAsF32(dtype, data, i) / n);
}

void sumF16Into(const uint16_t* in, uint16_t* inout, int64_t count) {
  for (int64_t i = 0; i < count; ++i) inout[i] = f32ToF16(f16ToF32(in[i]) + f16ToF32(inout[i]));
}

void sumBF16Into(const uint16_t* in, uint16_t* inout, int64_t count) {
  for (int64_t i = 0; i < count; ++i) inout[i] = f32ToBF16(bf16ToF32(in[i]) + bf16ToF32(inout[i]));
}

static uint32_t bitsOf(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

float maxF32(float a, float b) {
  const bool aNan = std::isnan(a), bNan = std::isnan(b);
  if (aNan && bNan) return bitsOf(a) >= bitsOf(b) ? a : b;
  if (aNan) return a;
  if (bNan) return b;
  if (a == b) return std::signbit(a) ? b : a;  // equal numbers differ only in the sign of zero
  return a > b ? a : b;
}

void maxF32Into(const float* in, float* inout, int64_t count) {
  for (int64_t i = 0; i < count; ++i) inout[i] = maxF32(in[i], inout[i]);
}

}  // namespace amp::rt
