// Internal to the reference kernels: the call record every kernel receives, validation helpers,
// f32 widening/narrowing and numpy broadcasting. Not part of the public API.
#ifndef AMP_RUNTIME_REFERENCE_REFERENCECOMMON_H
#define AMP_RUNTIME_REFERENCE_REFERENCECOMMON_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "runtime/numerics/Softmax.h"
#include "runtime/plan/OpAttrs.h"
#include "runtime/reference/ReferenceKernels.h"

#define REF_RETURN_IF_ERROR(expr)          \
  do {                                     \
    absl::Status ref_status_ = (expr);     \
    if (!ref_status_.ok()) return ref_status_; \
  } while (0)

#define REF_CONCAT_INNER(a, b) a##b
#define REF_CONCAT(a, b) REF_CONCAT_INNER(a, b)
#define REF_ASSIGN_OR_RETURN(lhs, expr) \
  REF_ASSIGN_OR_RETURN_IMPL(REF_CONCAT(ref_statusor_, __LINE__), lhs, expr)
#define REF_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

namespace amp::rt::ref {

// Debian's Abseil has its own absl::string_view, which StrCat needs instead of std::string_view.
template <class T>
const T& alpha(const T& x) { return x; }
inline absl::string_view alpha(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// One op evaluation. The dispatcher has checked: every operand pointer is non-null with storage
// for its elements and non-negative dims, and there is exactly one result type.
struct OpCall {
  std::string_view name;  // for messages; kernels shared by several ops dispatch on `code`
  OpCode code;
  absl::Span<const Tensor* const> operands;
  const AttrMap& attrs;
  absl::Span<const TensorType> results;
  const EvalContext& ctx;
  // `attrs` decoded into the op's struct (runtime/plan/OpAttrs.h); read through attrsOf.
  const OpAttrs& decoded;

  // The op's typed attributes; evalReferenceOp has decoded and checked them.
  template <typename A>
  const A& attrsOf() const {
    return *std::get_if<A>(&decoded);
  }

  // For a kernel several ops share (softmax and log_softmax, a forward op and its gradient): `f`
  // applied to the attributes of whichever of `A, Rest...` this op decoded into.
  template <typename A, typename... Rest, typename F>
  auto withAttrsOf(F&& f) const {
    if constexpr (sizeof...(Rest) == 0) {
      return f(attrsOf<A>());
    } else {
      if (const A* a = std::get_if<A>(&decoded)) return f(*a);
      return withAttrsOf<Rest...>(std::forward<F>(f));
    }
  }

  const Tensor& in(size_t i) const { return *operands[i]; }
  const TensorType& result() const { return results[0]; }
  size_t numOperands() const { return operands.size(); }

  // InvalidArgument("<op>: <parts...>").
  template <class... Args>
  absl::Status error(const Args&... parts) const {
    return absl::InvalidArgumentError(absl::StrCat(alpha(name), ": ", alpha(parts)...));
  }
};

using Kernel = absl::StatusOr<Tensor> (*)(const OpCall&);

std::string typeString(DType dtype, const Shape& shape);  // "f16[2, 3]"
std::string typeString(const Tensor& t);

// Floating types the kernels compute with (everything but f64, which is I/O-only).
bool isComputeFloat(DType t);
bool isIndexType(DType t);  // i32 or i64

absl::Status expectOperands(const OpCall& c, size_t lo, size_t hi);
absl::Status expectFloatOperand(const OpCall& c, size_t i);
absl::Status expectRank(const OpCall& c, size_t i, int64_t rank);
absl::Status expectSameDType(const OpCall& c, size_t i, size_t j);

// Whole-tensor widening to f32 (loadAsF32) and narrowing with RNE (storeFromF32).
std::vector<float> widen(const Tensor& t);
Tensor narrow(DType dtype, const Shape& shape, const std::vector<float>& values);
// Exact integer read of an i32/i64 element.
int64_t loadIndex(const Tensor& t, int64_t i);

std::vector<int64_t> rowMajorStrides(const Shape& shape);
// Multi-index of linear index `i`, as "[1, 0, 2]" (for error messages).
std::string indexString(const Shape& shape, int64_t i);

// Numpy broadcast of several shapes; error names the op and the shapes.
absl::StatusOr<Shape> broadcastShapes(const OpCall& c, const std::vector<Shape>& shapes);
// For each linear index of a tensor of shape `out`, offset + sum_d idx[d] * strides[d].
std::vector<int64_t> stridedIndexMap(const Shape& out, const std::vector<int64_t>& strides,
                                     int64_t offset);
// Element i of the result is element map[i] of `in` (bit copy, any dtype).
Tensor gatherElements(const Tensor& in, const Shape& outShape, const std::vector<int64_t>& map);
// For each linear index of `out`, the linear index of the element of `in` it reads (`in` must
// broadcast to `out`).
std::vector<int64_t> broadcastIndexMap(const Shape& in, const Shape& out);

// Checks a per-spatial-dim pair attribute `attr` ([a, b]): two entries, all >= minValue.
absl::StatusOr<std::vector<int64_t>> checkPair(const OpCall& c, std::string_view attr, std::vector<int64_t> v,
                                               int64_t minValue);

// softmaxSlice (runtime/numerics/Softmax.h) is the row kernel of softmax and cross_entropy.

// f32 rounding of an f64 value: the "evaluate in f64, round once to f32" step used for
// transcendental formulas (for + - * / sqrt it equals the IEEE f32 operation).
inline float f32(double x) { return static_cast<float>(x); }

// Kernels, one per op family file.
absl::StatusOr<Tensor> evalUnary(const OpCall& c);
absl::StatusOr<Tensor> evalBinary(const OpCall& c);
absl::StatusOr<Tensor> evalCompare(const OpCall& c);
absl::StatusOr<Tensor> evalSelect(const OpCall& c);
absl::StatusOr<Tensor> evalCast(const OpCall& c);
absl::StatusOr<Tensor> evalConstant(const OpCall& c);
absl::StatusOr<Tensor> evalDropout(const OpCall& c);
absl::StatusOr<Tensor> evalMatmul(const OpCall& c);
absl::StatusOr<Tensor> evalLinear(const OpCall& c);
absl::StatusOr<Tensor> evalConv2d(const OpCall& c);
absl::StatusOr<Tensor> evalPool2d(const OpCall& c);
absl::StatusOr<Tensor> evalReduce(const OpCall& c);
absl::StatusOr<Tensor> evalSoftmax(const OpCall& c);
absl::StatusOr<Tensor> evalLayerNorm(const OpCall& c);
absl::StatusOr<Tensor> evalRmsNorm(const OpCall& c);
absl::StatusOr<Tensor> evalEmbedding(const OpCall& c);
absl::StatusOr<Tensor> evalReshape(const OpCall& c);
absl::StatusOr<Tensor> evalTranspose(const OpCall& c);
absl::StatusOr<Tensor> evalBroadcastTo(const OpCall& c);
absl::StatusOr<Tensor> evalSlice(const OpCall& c);
absl::StatusOr<Tensor> evalConcat(const OpCall& c);
absl::StatusOr<Tensor> evalCrossEntropy(const OpCall& c);

// logits [N, C] (operand 0) and labels [N] (operand 1) of cross_entropy and its gradient, with
// every label checked: in [0, C) or ignore_index. `counted` is the number of labels not ignored.
struct CrossEntropyArgs {
  int64_t N = 0, C = 0, ignoreIndex = -100, counted = 0;
  double labelSmoothing = 0.0;
};
absl::StatusOr<CrossEntropyArgs> crossEntropyArgs(const OpCall& c);
absl::StatusOr<Tensor> evalMseLoss(const OpCall& c);

}  // namespace amp::rt::ref

#endif  // AMP_RUNTIME_REFERENCE_REFERENCECOMMON_H
