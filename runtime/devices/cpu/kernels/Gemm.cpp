#include "runtime/devices/cpu/kernels/Gemm.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "dnnl.hpp"
#include "runtime/numerics/Convert.h"
#include "runtime/numerics/SimdConvert.h"
#include "runtime/devices/cpu/kernels/Parallel.h"
#include "runtime/devices/cpu/kernels/TransposeTile.h"

namespace amp::rt::cpu {

namespace {

using dt = dnnl::memory::data_type;

constexpr size_t kAlign = 64;
size_t alignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// One engine for the process: engine creation queries the ISA and is not free.
// Under AMP_CPU_FEATURES, oneDNN dispatches no higher than the level the device reports, so a
// masked run executes the GEMM kernels a machine of that level would (ONEDNN_MAX_CPU_ISA does the
// same by hand). It must precede oneDNN's first kernel, hence the engine's creation.
void capOneDnnIsa() {
  if (CpuFeatures::maskLevel().empty()) return;
  // The highest oneDNN ISA the lowered features still allow.
  const CpuFeatures& f = CpuFeatures::host();
  const dnnl_cpu_isa_t isa = !f.avx2          ? dnnl_cpu_isa_sse41
                             : !f.avx512f     ? dnnl_cpu_isa_avx2
                             : !f.avx512_bf16 ? dnnl_cpu_isa_avx512_core_vnni
                             : !f.amx_bf16    ? dnnl_cpu_isa_avx512_core_bf16
                                              : dnnl_cpu_isa_all;
  // Fails only when oneDNN has already dispatched (then ONEDNN_MAX_CPU_ISA governs), or when the
  // isa is above the machine's, which changes nothing.
  (void)dnnl_set_max_cpu_isa(isa);
}


}  // namespace

const dnnl::engine& cpuEngine() {
  static const dnnl::engine engine = [] {
    capOneDnnIsa();
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return engine;
}

namespace {

// Debian's Abseil has its own string_view, so dtype names go through std::string.
std::string typeString(DType t, const Shape& s) { return absl::StrCat(std::string(dtypeName(t)), shapeToString(s)); }

// The copies around a GEMM call move bits or convert each element alone, so any split across
// threads gives the same bits; they take the threads (parallelFor) from 64K elements on.
constexpr int64_t kTransposeTile = 32;
constexpr int64_t kParallelGrain = int64_t{1} << 15;  // elements: parallel from two of these

// Column tiles of a [rows, cols] copy per parallelFor grain.
int64_t tileGrain(int64_t rows) { return std::max<int64_t>(1, kParallelGrain / (kTransposeTile * std::max<int64_t>(rows, 1))); }

// out[n, k] = in[k, n] for an f32 [rows, cols] matrix, in 32x32 tiles of register blocks
// (TransposeTile.h) so that both sides stream through cache lines.
void transposeF32(const float* in, float* out, int64_t rows, int64_t cols) {
  const int64_t colTiles = (cols + kTransposeTile - 1) / kTransposeTile;
  parallelFor(colTiles, tileGrain(rows), [&](int64_t t0, int64_t t1) {
    for (int64_t c0 = t0 * kTransposeTile; c0 < std::min(cols, t1 * kTransposeTile); c0 += kTransposeTile)
      for (int64_t r0 = 0; r0 < rows; r0 += kTransposeTile)  // out[c * rows + r] = in[r * cols + c]
        transpose::tile(reinterpret_cast<const uint32_t*>(in + r0 * cols + c0), cols,
                        reinterpret_cast<uint32_t*>(out + c0 * rows + r0), rows, std::min(cols - c0, kTransposeTile),
                        std::min(rows - r0, kTransposeTile));
  });
}

void widenAcrossThreads(DType t, const void* in, float* out, int64_t n, bool simd) {
  const size_t es = dtypeSize(t);
  parallelFor(n, kParallelGrain, [&](int64_t b, int64_t e) {
    widenToF32(t, static_cast<const char*>(in) + size_t(b) * es, out + b, e - b, simd);
  });
}

void narrowAcrossThreads(const float* in, DType t, void* out, int64_t n, bool simd) {
  const size_t es = dtypeSize(t);
  parallelFor(n, kParallelGrain, [&](int64_t b, int64_t e) {
    narrowFromF32(in + b, t, static_cast<char*>(out) + size_t(b) * es, e - b, simd);
  });
}

// out[n, k] = f32(in[k, n]) for a [rows, cols] matrix of a narrow float type: the widening and
// the transposing copy in one pass, so a widened GEMM needs no [K, N] f32 copy of b besides the
// transposed one. Rows are widened 32 at a time into a tile, then written transposed.
void widenTransposed(DType t, const void* in, float* out, int64_t rows, int64_t cols, bool simd) {
  const size_t es = dtypeSize(t);
  const int64_t colTiles = (cols + kTransposeTile - 1) / kTransposeTile;
  parallelFor(colTiles, tileGrain(rows), [&](int64_t t0, int64_t t1) {
    alignas(64) float tile[kTransposeTile][kTransposeTile];
    for (int64_t c0 = t0 * kTransposeTile; c0 < std::min(cols, t1 * kTransposeTile); c0 += kTransposeTile) {
      const int64_t nc = std::min(cols - c0, kTransposeTile);
      for (int64_t r0 = 0; r0 < rows; r0 += kTransposeTile) {
        const int64_t nr = std::min(rows - r0, kTransposeTile);
        for (int64_t r = 0; r < nr; ++r)
          widenToF32(t, static_cast<const char*>(in) + size_t((r0 + r) * cols + c0) * es, tile[r], nc, simd);
        // out[c * rows + r] = tile[r][c]
        transpose::tile(reinterpret_cast<const uint32_t*>(&tile[0][0]), kTransposeTile,
                        reinterpret_cast<uint32_t*>(out + c0 * rows + r0), rows, nc, nr);
      }
    }
  });
}

// Element counts are products of dims; a product past int64 is rejected rather than wrapped.
bool checkedProduct(const Shape& dims, int64_t* out) {
  int64_t p = 1;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(p, d, &p)) return false;
  *out = p;
  return true;
}

// One batch dim after broadcasting: each operand has the full extent or 1 (broadcast).
struct BatchDim {
  int64_t a, b, out;
};

// The whole problem after batch-dim simplification.
struct Problem {
  std::vector<BatchDim> batch;  // collapsed: no size-1 dims, no two adjacent dims alike
  int64_t M = 0, N = 0, K = 0;
  bool transA = false, transB = false;
  bool bias = false;  // a [N] vector added in f32 before the rounding
};

// Dense row-major strides of an operand stored as [batch..., rows, cols], viewed as the logical
// matrix: logical (r, c) of a transposed operand is stored at (c, r). Batch strides of broadcast
// dims (extent 1) are the dense ones; oneDNN ignores them and the batch loop never steps them.
dnnl::memory::dims operandStrides(const std::vector<int64_t>& batchExt, int64_t rows, int64_t cols,
                                  bool trans) {
  dnnl::memory::dims s(batchExt.size() + 2);
  s[batchExt.size()] = trans ? 1 : cols;
  s[batchExt.size() + 1] = trans ? rows : 1;
  int64_t step = rows * cols;
  for (size_t j = batchExt.size(); j-- > 0;) {
    s[j] = step;
    step *= batchExt[j];
  }
  return s;
}

struct Mds {
  dnnl::memory::desc a, b, c;
  dnnl::memory::desc bias;  // [1, ..., 1, N] (c's rank), only when hasBias
  bool hasBias = false;
};

// Memory descriptors of the batched problem (batched) or of one 2-D product (!batched).
Mds makeMds(const Problem& p, dt type, bool batched) {
  std::vector<int64_t> ea, eb, ec;
  if (batched)
    for (const BatchDim& d : p.batch) {
      ea.push_back(d.a);
      eb.push_back(d.b);
      ec.push_back(d.out);
    }
  auto dims = [](std::vector<int64_t> e, int64_t r, int64_t c) {
    e.push_back(r);
    e.push_back(c);
    return dnnl::memory::dims(e.begin(), e.end());
  };
  Mds m{dnnl::memory::desc(dims(ea, p.M, p.K), type, operandStrides(ea, p.M, p.K, p.transA)),
        dnnl::memory::desc(dims(eb, p.K, p.N), type, operandStrides(eb, p.K, p.N, p.transB)),
        dnnl::memory::desc(dims(ec, p.M, p.N), type, operandStrides(ec, p.M, p.N, false))};
  if (p.bias) {
    // One row broadcast over every batch and every m: all dims 1 but the last.
    std::vector<int64_t> ones(ec.size(), 1);
    m.bias = dnnl::memory::desc(dims(ones, 1, p.N), type, operandStrides(ones, 1, p.N, false));
    m.hasBias = true;
  }
  return m;
}

// nullopt when oneDNN has no implementation for this layout/type.
std::optional<dnnl::matmul::primitive_desc> makePd(const Mds& m) {
  dnnl::primitive_attr attr;
  // The caller's scratch holds oneDNN's scratchpad, so execute never allocates a large buffer and
  // one Gemm can be run from several threads with separate scratch.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  // Pin f32 semantics: ONEDNN_DEFAULT_FPMATH_MODE=BF16 in the environment must not silently
  // down-convert f32 GEMMs.
  attr.set_fpmath_mode(dnnl::fpmath_mode::strict);
  try {
    if (m.hasBias)  // the bias is added to the f32 accumulator before the dst conversion
      return dnnl::matmul::primitive_desc(dnnl::matmul::desc(m.a, m.b, m.bias, m.c), attr, cpuEngine());
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(m.a, m.b, m.c), attr, cpuEngine());
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

[[noreturn]] void die(const char* what, dnnl_status_t st) {
  std::fprintf(stderr, "amp cpu Gemm: %s failed (dnnl status %d)\n", what, static_cast<int>(st));
  std::abort();
}

}  // namespace

struct Gemm::Impl {
  enum class Mode { kEmpty, kZeroFill, kPrimitive };

  DType dtype = DType::F32;
  Shape resultShape;
  int64_t numelA = 0, numelB = 0, numelC = 0;
  bool hasBias = false;
  int64_t N = 0;  // the bias length (columns of c)
  Mode mode = Mode::kEmpty;
  bool widen = false;     // operands converted to f32 in scratch, result rounded back
  // b [K, N] copied transposed, as f32, into scratch (offBT) before each run: see create().
  bool transposeB = false;
  int64_t K = 0;
  bool simdConvert = false;  // the host (and the caller's features) have AVX2 and F16C
  size_t computeBytes = 4;  // element size the primitive sees
  // Scratch layout (byte offsets; each region 64-byte aligned).
  size_t offA = 0, offB = 0, offC = 0, offBias = 0, offBT = 0, offPad = 0, scratchBytes = 0;
  // Batch loop (empty: one execute covers everything). Element offsets of each 2-D product.
  std::vector<int64_t> loopA, loopB;
  int64_t loopStrideC = 0;

  dnnl::matmul prim;
  dnnl::stream stream;
  dnnl::memory memA, memB, memC, memBias, memPad;
  dnnl_exec_arg_t args[5] = {};
  int nargs = 0;
  mutable std::mutex mu;  // guards the data handles of memA/B/C/Pad during run()
  std::string implName;

  // Builds the primitive for `p` in `type`: batched first, then the 2-D loop. False if oneDNN
  // implements neither.
  bool build(const Problem& p, dt type);
};

bool Gemm::Impl::build(const Problem& p, dt type) {
  std::optional<dnnl::matmul::primitive_desc> pd;
  bool batched = false;
  // oneDNN matmul takes at most DNNL_MAX_NDIMS dims; the collapse above rarely leaves that many.
  if (p.batch.empty() || p.batch.size() + 2 <= DNNL_MAX_NDIMS) {
    pd = makePd(makeMds(p, type, true));
    batched = pd.has_value();
  }
  if (!pd && !p.batch.empty()) pd = makePd(makeMds(p, type, false));
  if (!pd) return false;

  loopA.clear();
  loopB.clear();
  if (!batched) {
    // Offsets of every 2-D product, walking the output batch index in row-major order.
    std::vector<int64_t> strideA(p.batch.size()), strideB(p.batch.size());
    int64_t sa = p.M * p.K, sb = p.K * p.N, total = 1;
    for (size_t j = p.batch.size(); j-- > 0;) {
      strideA[j] = p.batch[j].a == 1 ? 0 : sa;
      strideB[j] = p.batch[j].b == 1 ? 0 : sb;
      sa *= p.batch[j].a;
      sb *= p.batch[j].b;
      total *= p.batch[j].out;
    }
    loopA.resize(size_t(total));
    loopB.resize(size_t(total));
    std::vector<int64_t> idx(p.batch.size(), 0);
    for (int64_t i = 0; i < total; ++i) {
      int64_t oa = 0, ob = 0;
      for (size_t j = 0; j < idx.size(); ++j) {
        oa += idx[j] * strideA[j];
        ob += idx[j] * strideB[j];
      }
      loopA[size_t(i)] = oa;
      loopB[size_t(i)] = ob;
      for (size_t j = idx.size(); j-- > 0;) {  // odometer increment
        if (++idx[j] < p.batch[j].out) break;
        idx[j] = 0;
      }
    }
    loopStrideC = p.M * p.N;
  }

  const dnnl::engine& eng = cpuEngine();
  prim = dnnl::matmul(*pd);
  stream = dnnl::stream(eng);
  // Handle-less memory objects: run() points them at the caller's buffers.
  memA = dnnl::memory(pd->src_desc(), eng, DNNL_MEMORY_NONE);
  memB = dnnl::memory(pd->weights_desc(), eng, DNNL_MEMORY_NONE);
  memC = dnnl::memory(pd->dst_desc(), eng, DNNL_MEMORY_NONE);
  args[0] = {DNNL_ARG_SRC, memA.get()};
  args[1] = {DNNL_ARG_WEIGHTS, memB.get()};
  args[2] = {DNNL_ARG_DST, memC.get()};
  nargs = 3;
  if (p.bias) {
    memBias = dnnl::memory(pd->bias_desc(), eng, DNNL_MEMORY_NONE);
    args[nargs++] = {DNNL_ARG_BIAS, memBias.get()};
  }
  const size_t padBytes = pd->scratchpad_desc().get_size();
  if (padBytes > 0) {
    memPad = dnnl::memory(pd->scratchpad_desc(), eng, DNNL_MEMORY_NONE);
    args[nargs++] = {DNNL_ARG_SCRATCHPAD, memPad.get()};
  }
  computeBytes = type == dt::f32 ? 4 : 2;

  size_t off = 0;
  if (widen) {
    offA = off;
    off += alignUp(size_t(numelA) * 4);
    if (!transposeB) {  // a transposed b is widened straight into its transposed copy (offBT)
      offB = off;
      off += alignUp(size_t(numelB) * 4);
    }
    offC = off;
    off += alignUp(size_t(numelC) * 4);
    if (p.bias) {
      offBias = off;
      off += alignUp(size_t(N) * 4);
    }
  }
  if (transposeB) {
    offBT = off;
    off += alignUp(size_t(numelB) * 4);
  }
  offPad = off;
  scratchBytes = off + alignUp(padBytes);

  implName = pd->impl_info_str();
  if (widen) absl::StrAppend(&implName, " (", std::string(dtypeName(dtype)), " widened to f32)");
  if (transposeB) absl::StrAppend(&implName, " (weights transposed in scratch)");
  if (p.bias) absl::StrAppend(&implName, " (bias in the epilogue)");
  if (!batched) absl::StrAppend(&implName, " (batch loop x", loopA.size(), ")");
  return true;
}

absl::StatusOr<std::unique_ptr<Gemm>> Gemm::create(const GemmDesc& d, const CpuFeatures& f) {
  const std::string ta = typeString(d.dtype, d.a) + (d.transA ? " (transposed)" : "");
  const std::string tb = typeString(d.dtype, d.b) + (d.transB ? " (transposed)" : "");
  auto error = [&](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat("Gemm ", ta, " x ", tb, ": ", parts...));
  };
  // The dtypes amp.matmul computes with: every float but f64 (which is I/O only).
  if (!isFloat(d.dtype) || d.dtype == DType::F64)
    return error("element type ", std::string(dtypeName(d.dtype)), " is not f32, f16, bf16 or f8");
  if (d.a.size() < 2 || d.b.size() < 2) return error("operands must have rank >= 2");
  for (const Shape* s : {&d.a, &d.b})
    for (int64_t dim : *s)
      if (dim < 0) return error("negative dimension");

  auto im = std::make_unique<Impl>();
  im->dtype = d.dtype;
  // Conversions run on this machine whatever `f` claims, so both must allow the instructions.
  const CpuFeatures& host = CpuFeatures::host();
  im->simdConvert = f.avx2 && f.f16c && host.avx2 && host.f16c;
  const size_t ra = d.a.size(), rb = d.b.size();
  Problem p;
  p.transA = d.transA;
  p.transB = d.transB;
  p.bias = d.bias;
  im->hasBias = d.bias;
  p.M = d.transA ? d.a[ra - 1] : d.a[ra - 2];
  p.K = d.transA ? d.a[ra - 2] : d.a[ra - 1];
  const int64_t kb = d.transB ? d.b[rb - 1] : d.b[rb - 2];
  p.N = d.transB ? d.b[rb - 2] : d.b[rb - 1];
  if (p.K != kb) return error("contraction dims differ (", p.K, " vs ", kb, ")");
  im->N = p.N;

  // Numpy broadcast of the batch dims, right-aligned; a missing leading dim acts as 1.
  const size_t la = ra - 2, lb = rb - 2, L = std::max(la, lb);
  std::vector<BatchDim> full(L);
  for (size_t j = 0; j < L; ++j) {
    const int64_t ea = j + la >= L ? d.a[j + la - L] : 1;
    const int64_t eb = j + lb >= L ? d.b[j + lb - L] : 1;
    if (ea != eb && ea != 1 && eb != 1) return error("batch dims do not broadcast");
    full[j] = {ea, eb, ea == 1 ? eb : ea};
    im->resultShape.push_back(full[j].out);
  }
  im->resultShape.push_back(p.M);
  im->resultShape.push_back(p.N);
  if (!checkedProduct(d.a, &im->numelA) || !checkedProduct(d.b, &im->numelB) ||
      !checkedProduct(im->resultShape, &im->numelC))
    return error("element count overflows int64");

  if (im->numelC == 0) {  // oneDNN divides by zero on empty dims; nothing to compute anyway
    im->mode = Impl::Mode::kEmpty;
    im->implName = "none (empty result)";
    return std::unique_ptr<Gemm>(new Gemm(std::move(im)));
  }
  if (p.K == 0) {  // an empty sum: +0 in every float format, i.e. all-zero bytes (plus the bias)
    im->mode = Impl::Mode::kZeroFill;
    im->implName = d.bias ? "none (K = 0: bias broadcast)" : "none (K = 0: zero fill)";
    return std::unique_ptr<Gemm>(new Gemm(std::move(im)));
  }

  // Collapse the batch: size-1 output dims vanish; adjacent dims with the same broadcast pattern
  // are contiguous in both operands and merge into one.
  for (const BatchDim& bd : full) {
    if (bd.out == 1) continue;
    BatchDim n = bd;
    if (!p.batch.empty()) {
      BatchDim& last = p.batch.back();
      if ((last.a == 1) == (n.a == 1) && (last.b == 1) == (n.b == 1)) {
        last = {last.a * n.a, last.b * n.b, last.out * n.out};
        continue;
      }
    }
    p.batch.push_back(n);
  }
  // A weight shared by every batch (the linear-layer case [B, T, K] x [K, N]): the batch rows of a
  // non-transposed a are consecutive rows of one [batch*M, K] matrix, and so are c's.
  bool folded = false;
  if (p.batch.size() == 1 && p.batch[0].b == 1 && !p.transA) {
    p.M *= p.batch[0].out;
    p.batch.clear();
    folded = true;
  }

  try {
    bool built = false;
    if (d.dtype == DType::F32) {
      built = im->build(p, dt::f32);
    } else if (d.dtype == DType::BF16 &&
               f.nativeBf16Gemm(2.0 * static_cast<double>(im->numelC) * static_cast<double>(p.K))) {
      built = im->build(p, dt::bf16);
    }
    if (!built && d.dtype != DType::F32) {
      im->widen = true;
      built = im->build(p, dt::f32);
    }
    if (!built)
      return absl::InternalError(absl::StrCat("Gemm ", ta, " x ", tb, ": oneDNN has no matmul implementation"));
    // oneDNN's f32 GEMM without brgemm (gemm:jit, what it runs below AVX-512) is about 1.7x faster
    // on a transposed b ([N, K], x·Wᵀ as nn.Linear stores it) than on a [K, N] one: 59 against 34
    // GFLOP/s for 256x1024x1024 on one core (docs/cpu-device.md). Where the GEMM is large enough
    // for that to pay for a transposing copy of b (K·N elements against M·N·K multiply-adds), b
    // is copied transposed (widened, where it is) into scratch on each run. The sum is still one
    // f32 dot product per element, within the same bound.
    constexpr int64_t kTransposeMinM = 128;
    const bool f32Compute = d.dtype == DType::F32 || im->widen;
    if (f32Compute && !p.transB && p.batch.empty() && p.M >= kTransposeMinM &&
        im->implName.rfind("gemm:", 0) == 0) {
      Problem t = p;
      t.transB = true;
      im->transposeB = true;
      im->K = p.K;
      if (!im->build(t, dt::f32) || im->implName.rfind("gemm:", 0) != 0) {  // keep b as it is
        im->transposeB = false;
        if (!im->build(p, dt::f32))
          return absl::InternalError(absl::StrCat("Gemm ", ta, " x ", tb, ": oneDNN has no matmul implementation"));
      }
    }
  } catch (const dnnl::error& e) {
    return absl::InternalError(absl::StrCat("Gemm ", ta, " x ", tb, ": oneDNN: ", e.what()));
  }
  im->mode = Impl::Mode::kPrimitive;
  if (folded) absl::StrAppend(&im->implName, " (batch folded into M)");
  return std::unique_ptr<Gemm>(new Gemm(std::move(im)));
}

Gemm::Gemm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Gemm::~Gemm() = default;

const Shape& Gemm::resultShape() const { return impl_->resultShape; }
size_t Gemm::scratchBytes() const { return impl_->scratchBytes; }
std::string Gemm::implName() const { return impl_->implName; }

void Gemm::run(const void* a, const void* b, const void* bias, void* c, void* scratch) const {
  const Impl& im = *impl_;
  if ((bias != nullptr) != im.hasBias) {
    std::fprintf(stderr, "amp cpu Gemm: run() %s a bias but the Gemm was created %s one\n",
                 bias ? "got" : "did not get", im.hasBias ? "with" : "without");
    std::abort();
  }
  if (im.mode == Impl::Mode::kEmpty) return;
  if (im.mode == Impl::Mode::kZeroFill) {
    if (!im.hasBias) {
      std::memset(c, 0, size_t(im.numelC) * dtypeSize(im.dtype));
      return;
    }
    // rne_T(+0 + f32(bias[n])) in every row: the bias itself, except that -0 becomes +0.
    const size_t es = dtypeSize(im.dtype);
    for (int64_t i = 0; i < im.numelC; i += im.N)
      for (int64_t n = 0; n < im.N; ++n)
        storeFromF32(im.dtype, static_cast<char*>(c) + size_t(i) * es, n, 0.0f + loadAsF32(im.dtype, bias, n));
    return;
  }
  auto* s = static_cast<char*>(scratch);
  const char* pa = static_cast<const char*>(a);
  const char* pb = static_cast<const char*>(b);
  char* pc = static_cast<char*>(c);
  if (im.widen) {  // exact: every f16/bf16/FP8 value is an f32
    widenAcrossThreads(im.dtype, a, reinterpret_cast<float*>(s + im.offA), im.numelA, im.simdConvert);
    if (!im.transposeB) widenAcrossThreads(im.dtype, b, reinterpret_cast<float*>(s + im.offB), im.numelB, im.simdConvert);
    pa = s + im.offA;
    pb = s + im.offB;
    pc = s + im.offC;
    if (im.hasBias) {
      widenToF32(im.dtype, bias, reinterpret_cast<float*>(s + im.offBias), im.N, im.simdConvert);
      bias = s + im.offBias;
    }
  }
  if (im.transposeB) {
    // The primitive reads b as f32 [N, K]: b [K, N] transposed, widened on the way where it is.
    if (im.widen) widenTransposed(im.dtype, b, reinterpret_cast<float*>(s + im.offBT), im.K, im.N, im.simdConvert);
    else transposeF32(reinterpret_cast<const float*>(pb), reinterpret_cast<float*>(s + im.offBT), im.K, im.N);
    pb = s + im.offBT;
  }
  {
    std::lock_guard<std::mutex> lock(im.mu);
    // The C API: the C++ set_data_handle/execute wrappers may throw and build a std::unordered_map
    // of arguments on every call.
    auto setHandle = [](const dnnl::memory& m, const void* p) {
      dnnl_status_t st = dnnl_memory_set_data_handle_v2(m.get(), const_cast<void*>(p), nullptr);
      if (st != dnnl_success) die("set_data_handle", st);
    };
    if (im.memPad) setHandle(im.memPad, s + im.offPad);
    if (im.hasBias) setHandle(im.memBias, bias);
    const size_t n = im.loopA.empty() ? 1 : im.loopA.size();
    for (size_t i = 0; i < n; ++i) {
      const size_t oa = im.loopA.empty() ? 0 : size_t(im.loopA[i]) * im.computeBytes;
      const size_t ob = im.loopB.empty() ? 0 : size_t(im.loopB[i]) * im.computeBytes;
      const size_t oc = i * size_t(im.loopStrideC) * im.computeBytes;
      setHandle(im.memA, pa + oa);
      setHandle(im.memB, pb + ob);
      setHandle(im.memC, pc + oc);
      dnnl_status_t st = dnnl_primitive_execute(im.prim.get(), im.stream.get(), im.nargs, im.args);
      if (st != dnnl_success) die("dnnl_primitive_execute", st);
    }
    dnnl_status_t st = dnnl_stream_wait(im.stream.get());
    if (st != dnnl_success) die("dnnl_stream_wait", st);
  }
  // The one RNE rounding of each result element.
  if (im.widen) narrowAcrossThreads(reinterpret_cast<const float*>(s + im.offC), im.dtype, c, im.numelC, im.simdConvert);
}

}  // namespace amp::rt::cpu
