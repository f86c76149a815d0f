// The cuda device's lowering of embedding and its gradient, transpose, gelu_grad, dropout and the
// other shape ops (kernels/ShapeKernels.cu).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cuda/CudaActions.h"
#include "runtime/devices/cuda/KernelTypes.h"
#include "runtime/devices/cuda/LaunchConfig.h"
#include "runtime/kernels/math/ShapeMath.h"

namespace amp::rt::cuda {

// Embedding and its gradient, transpose, gelu_grad and dropout: kernels/ShapeKernels.cu, one launch
// each.
absl::Status ActionBuilder::shapeKernels(size_t s) {
  const PlanStep& step = entry_.steps[s];
  if (step.results.size() != 1 || step.operands.empty()) return absl::InvalidArgumentError("expected one result");
  const BufferDesc& out = plan_.buffers[step.results[0]];
  const BufferDesc& in0 = plan_.buffers[step.operands[0]];
  const int sms = api_.info().multiprocessors;
  auto emit = [&](const std::string& name, int64_t work, auto&& args, int64_t blocksY = 1) -> absl::Status {
    auto fn = kernel(name);
    if (!fn.ok()) return fn.status();
    Action a = launch(name, s);
    a.fn = *fn;
    const LaunchConfig grid = gridStrideLaunch(work, sms);
    a.blocks = std::max<int64_t>(grid.blocks, 1);
    a.blocksY = blocksY;
    a.threads = grid.threads;
    args(a);
    actions_.push_back(std::move(a));
    report_.add(kGeneratedKernels);
    return absl::OkStatus();
  };
  if (step.code == OpCode::Slice || step.code == OpCode::SliceGrad) {
    const bool grad = step.code == OpCode::SliceGrad;
    const BufferDesc& whole = grad ? out : in0;  // the tensor the slice is taken of
    auto starts = step.withAttrsOf<SliceAttrs, SliceGradAttrs>([](const auto& a) { return a.starts; });
    auto limits = step.withAttrsOf<SliceAttrs, SliceGradAttrs>([](const auto& a) { return a.limits; });
    auto steps = step.withAttrsOf<SliceAttrs, SliceGradAttrs>([&](const auto& a) -> std::vector<int64_t> {
      if constexpr (std::is_same_v<std::decay_t<decltype(a)>, SliceAttrs>)
        return a.strides.value_or(std::vector<int64_t>(whole.shape.size(), 1));
      else
        return a.strides;
    });
    for (const absl::Status& st : {starts.status(), limits.status(), steps.status()})
      if (!st.ok()) return st;
    const size_t rank = whole.shape.size();
    if (starts->size() != rank || limits->size() != rank || steps->size() != rank || out.dtype != in0.dtype)
      return absl::InvalidArgumentError("starts, limits and strides must cover the sliced tensor's dims");
    std::vector<long long> shape(whole.shape.begin(), whole.shape.end()), b(starts->begin(), starts->end()),
        e(limits->begin(), limits->end()), st(steps->begin(), steps->end());
    AmpTransposeShape t = {};
    long long offset = 0;
    if (!amp_shp_slice_shape(&t, static_cast<int>(rank), shape.data(), b.data(), e.data(), st.data(), &offset))
      return absl::UnimplementedError("a slice out of bounds, or with more than 8 dims after merging");
    if (t.elements != (grad ? in0 : out).numel()) return absl::InvalidArgumentError("the slice's size is not the piece's");
    const DevicePtr base = ptr_[grad ? step.results[0] : step.operands[0]];
    const DevicePtr at = base + static_cast<DevicePtr>(offset * static_cast<long long>(dtypeSize(in0.dtype)));
    if (grad && out.byteSize() > 0)
      if (auto z = emit("amp_zero_bytes", out.byteSize(), [&](Action& a) {
            a.arg(device<void>(base));
            a.arg(static_cast<long long>(out.byteSize()));
          });
          !z.ok())
        return z;
    if (t.elements == 0) return absl::OkStatus();
    return emit(absl::StrCat(grad ? "amp_scatter_" : "amp_transpose_", dtypeSize(in0.dtype)), t.elements, [&](Action& a) {
      a.arg(device<const void>(grad ? ptr_[step.operands[0]] : at));
      a.arg(device<void>(grad ? at : ptr_[step.results[0]]));
      a.arg(t);
    });
  }
  if (step.code == OpCode::Concat) {
    auto axis = step.withAttrsOf<ConcatAttrs>([](const auto& a) { return a.axis; });
    if (!axis.ok()) return axis.status();
    const int64_t rank = static_cast<int64_t>(out.shape.size());
    if (*axis < 0 || *axis >= rank) return absl::InvalidArgumentError("axis out of range");
    int64_t inner = 1;
    for (int64_t d = *axis + 1; d < rank; ++d) inner *= out.shape[static_cast<size_t>(d)];
    const long long row = out.shape[static_cast<size_t>(*axis)] * inner;
    long long at = 0, total = 0;
    for (int32_t id : step.operands) {
      const BufferDesc& in = plan_.buffers[id];
      bool fits = in.dtype == out.dtype && static_cast<int64_t>(in.shape.size()) == rank;
      for (int64_t d = 0; fits && d < rank; ++d) fits = d == *axis || in.shape[static_cast<size_t>(d)] == out.shape[static_cast<size_t>(d)];
      if (!fits) return absl::InvalidArgumentError("operands must match the result outside the axis");
      const long long chunk = in.shape[static_cast<size_t>(*axis)] * inner;
      total += in.numel();
      if (in.numel() > 0)
        if (auto st = emit(absl::StrCat("amp_concat_part_", dtypeSize(in.dtype)), in.numel(), [&](Action& a) {
              a.arg(device<const void>(ptr_[id]));
              a.arg(device<void>(ptr_[step.results[0]]));
              a.arg(static_cast<long long>(in.numel()));
              a.arg(chunk);
              a.arg(row);
              a.arg(at);
            });
            !st.ok())
          return st;
      at += chunk;
    }
    if (total != out.numel()) return absl::InvalidArgumentError("the operands' sizes do not add up to the result's");
    return absl::OkStatus();
  }
  if (step.code == OpCode::Transpose) {
    auto perm = step.withAttrsOf<TransposeAttrs>([](const auto& a) { return a.permutation; });
    if (!perm.ok()) return perm.status();
    const int rank = static_cast<int>(in0.shape.size());
    if (static_cast<int>(perm->size()) != rank || out.dtype != in0.dtype || out.numel() != in0.numel())
      return absl::InvalidArgumentError("the permutation must cover the input's dims, the result its elements");
    std::vector<long long> shape(in0.shape.begin(), in0.shape.end()), p(perm->begin(), perm->end());
    AmpTransposeShape t = {};
    if (!amp_shp_transpose_shape(&t, rank, shape.data(), p.data()))
      return absl::UnimplementedError("a permutation that is invalid or leaves more than 8 dims after merging");
    if (t.elements == 0) return absl::OkStatus();
    const std::string name = absl::StrCat("amp_transpose_", dtypeSize(in0.dtype));
    return emit(name, t.elements, [&](Action& a) {
      a.arg(device<const void>(ptr_[step.operands[0]]));
      a.arg(device<void>(ptr_[step.results[0]]));
      a.arg(t);
    });
  }
  if (step.code == OpCode::GeluGrad || step.code == OpCode::Dropout) {
    auto type = floatSuffix(in0.dtype);
    if (!type || out.dtype != in0.dtype || out.numel() != in0.numel())
      return absl::InvalidArgumentError("operands and result must share one float type and size");
    const long long n = out.numel();
    if (step.code == OpCode::GeluGrad) {
      if (step.operands.size() != 2 || plan_.buffers[step.operands[1]].dtype != in0.dtype)
        return absl::InvalidArgumentError("expected (x, dy) of one type");
      auto attrs = step.typedAttrs<GeluGradAttrs>();
      if (!attrs.ok()) return attrs.status();
      const bool tanh = attrs->approximate == GeluApproximation::Tanh;
      return emit(absl::StrCat("amp_gelu_grad_", tanh ? "tanh_" : "", *type), n, [&](Action& a) {
        a.arg(device<const void>(ptr_[step.operands[0]]));
        a.arg(device<const void>(ptr_[step.operands[1]]));
        a.arg(device<void>(ptr_[step.results[0]]));
        a.arg(n);
      });
    }
    auto rate = step.withAttrsOf<DropoutAttrs>([](const auto& a) { return a.rate; });
    auto seed = step.withAttrsOf<DropoutAttrs>([](const auto& a) { return a.seed; });
    if (!rate.ok()) return rate.status();
    if (!seed.ok()) return seed.status();
    if (!(*rate >= 0.0 && *rate < 1.0)) return absl::InvalidArgumentError("rate must be in [0, 1)");
    return emit(absl::StrCat("amp_dropout_", *type), (n + 3) / 4, [&](Action& a) {
      a.arg(device<const void>(ptr_[step.operands[0]]));
      a.arg(device<void>(ptr_[step.results[0]]));
      a.arg(n);
      a.arg(static_cast<long long>(*seed));
      a.arg(*rate);
      a.arg(device<const long long>(stepWord_));
    });
  }
  // Embedding: the table and ids; its gradient: the ids, dy and num_embeddings.
  const bool grad = step.code == OpCode::EmbeddingGrad;
  if (step.operands.size() != 2) return absl::InvalidArgumentError("expected two operands");
  const BufferDesc& ids = plan_.buffers[step.operands[grad ? 0 : 1]];
  const BufferDesc& values = plan_.buffers[step.operands[grad ? 1 : 0]];
  auto type = floatSuffix(values.dtype);
  if (!type || out.dtype != values.dtype || (ids.dtype != DType::I64 && ids.dtype != DType::I32))
    return absl::InvalidArgumentError("a float table and i64/i32 ids");
  const std::string suffix = absl::StrCat(*type, "_", ids.dtype == DType::I64 ? "i64" : "i32");
  const long long tokens = ids.numel();
  long long rows = 0, dim = 0;
  if (grad) {
    auto v = step.withAttrsOf<EmbeddingGradAttrs>([](const auto& a) { return a.numEmbeddings; });
    if (!v.ok()) return v.status();
    rows = *v;
    dim = out.shape.size() == 2 ? out.shape[1] : 0;
    if (out.shape.size() != 2 || out.shape[0] != rows || values.numel() != tokens * dim)
      return absl::InvalidArgumentError("the gradient must be [num_embeddings, D] and dy one row per id");
  } else {
    if (values.shape.size() != 2) return absl::InvalidArgumentError("the table must be [V, D]");
    rows = values.shape[0];
    dim = values.shape[1];
    if (out.numel() != tokens * dim) return absl::InvalidArgumentError("the result must have one row per id");
  }
  if (!grad) {
    if (tokens * dim == 0) return absl::OkStatus();
    return emit("amp_embedding_" + suffix, tokens * dim, [&](Action& a) {
      a.arg(device<const void>(ptr_[step.operands[0]]));
      a.arg(device<const long long>(ptr_[step.operands[1]]));
      a.arg(device<void>(ptr_[step.results[0]]));
      a.arg(tokens);
      a.arg(rows);
      a.arg(dim);
    });
  }
  if (rows * dim == 0) return absl::OkStatus();
  DevicePtr acc = ptr_[step.results[0]];  // f32: the result is its own accumulator
  if (values.dtype != DType::F32) {
    auto scratchAcc = scratch(4 * rows * dim);
    if (!scratchAcc.ok()) return scratchAcc.status();
    acc = *scratchAcc;
  }
  const int64_t gx = (dim + 255) / 256;
  const int64_t gy = std::min<int64_t>({rows, 65535, std::max<int64_t>(1, int64_t{8} * sms / gx)});
  auto fn = kernel("amp_embedding_grad_" + suffix);
  if (!fn.ok()) return fn.status();
  Action a = launch("amp_embedding_grad_" + suffix, s);
  a.fn = *fn;
  a.blocks = gx;
  a.blocksY = gy;
  a.threads = 256;
  a.arg(device<const long long>(ptr_[step.operands[0]]));
  a.arg(device<const void>(ptr_[step.operands[1]]));
  a.arg(device<float>(acc));
  a.arg(device<void>(ptr_[step.results[0]]));
  a.arg(tokens);
  a.arg(rows);
  a.arg(dim);
  actions_.push_back(std::move(a));
  report_.add(kGeneratedKernels);
  return absl::OkStatus();
}

}  // namespace amp::rt::cuda
