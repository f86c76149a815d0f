#include "runtime/devices/cpu/kernels/SoftmaxExact.h"

#include <algorithm>
#include <cstring>

#include "runtime/devices/cpu/kernels/SoftmaxExactKernels.h"
#include "runtime/numerics/Softmax.h"

namespace amp::rt::cpu {
namespace {

using softmax_exact::kMaxGroup;

int groupOf(VectorPath path) {
  return path == VectorPath::Avx512 ? softmax_exact::kAvx512Group : softmax_exact::kAvx2Group;
}

// softmaxSlice, counting its libm exps.
int64_t scalarSlice(const float* x, int64_t len, int64_t stride, bool log, float* y) {
  softmaxSlice(x, len, stride, log, y);
  return len;
}

}  // namespace

int64_t softmaxRows(VectorPath path, const float* x, int64_t rows, int64_t len, bool log, float* y, float* scratch) {
  int64_t fallbacks = 0;
  if (path == VectorPath::Scalar) {
    for (int64_t r = 0; r < rows; ++r) fallbacks += scalarSlice(x + r * len, len, 1, log, y + r * len);
    return fallbacks;
  }
  const int64_t group = groupOf(path);
  for (int64_t r0 = 0; r0 < rows; r0 += group) {
    const int64_t n = std::min(group, rows - r0);
    if (n == 1) {  // one row would leave the other lanes idle: libm is as fast
      fallbacks += scalarSlice(x + r0 * len, len, 1, log, y + r0 * len);
      continue;
    }
    fallbacks += (path == VectorPath::Avx512 ? softmax_exact::rowsAvx512 : softmax_exact::rowsAvx2)(
        x + r0 * len, n, len, log, y + r0 * len, scratch);
  }
  return fallbacks;
}

int64_t softmaxColumns(VectorPath path, const float* x, int64_t len, int64_t stride, int64_t width, bool log, float* y,
                       float* scratch) {
  int64_t fallbacks = 0;
  if (path == VectorPath::Scalar) {
    for (int64_t c = 0; c < width; ++c) fallbacks += scalarSlice(x + c, len, stride, log, y + c);
    return fallbacks;
  }
  const auto columns = path == VectorPath::Avx512 ? softmax_exact::columnsAvx512 : softmax_exact::columnsAvx2;
  const int64_t group = groupOf(path);
  for (int64_t c0 = 0; c0 < width; c0 += group) {
    const int64_t n = std::min(group, width - c0);
    if (n == group) {
      fallbacks += columns(x + c0, len, stride, log, y + c0);
    } else if (n == 1) {
      fallbacks += scalarSlice(x + c0, len, stride, log, y + c0);
    } else {  // the last few slices, through zero-padded [len, group] tiles
      float* in = scratch;
      float* out = scratch + len * group;
      for (int64_t j = 0; j < len; ++j) {
        std::memcpy(in + j * group, x + c0 + j * stride, n * sizeof(float));
        std::fill(in + j * group + n, in + (j + 1) * group, 0.0f);
      }
      fallbacks += columns(in, len, group, log, out);
      for (int64_t j = 0; j < len; ++j) std::memcpy(y + c0 + j * stride, out + j * group, n * sizeof(float));
    }
  }
  return fallbacks;
}

void softmaxExpLanes(VectorPath path, const float* w, float* e, uint8_t* ok, int64_t n) {
  const auto lanes = path == VectorPath::Avx512 ? softmax_exact::expLanesAvx512 : softmax_exact::expLanesAvx2;
  const int64_t group = groupOf(path);
  alignas(64) float ws[kMaxGroup], es[kMaxGroup];
  uint8_t oks[kMaxGroup];
  const int64_t whole = n / group * group;
  if (whole > 0) lanes(w, e, ok, whole);
  if (whole == n) return;
  std::fill(ws, ws + kMaxGroup, 0.0f);
  std::memcpy(ws, w + whole, (n - whole) * sizeof(float));
  lanes(ws, es, oks, group);
  std::memcpy(e + whole, es, (n - whole) * sizeof(float));
  std::memcpy(ok + whole, oks, n - whole);
}

void softmaxApproxExp(VectorPath path, const double* w, double* e, int64_t n) {
  (path == VectorPath::Avx512 ? softmax_exact::approxExpAvx512 : softmax_exact::approxExpAvx2)(w, e, n);
}

}  // namespace amp::rt::cpu
