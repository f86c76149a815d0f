// conv2d and its two gradients on the cpu device (NCHW, OIHW weights, groups, stride, padding,
// dilation).
//
// A 1x1 output plane (a ResNet's last stage on small images): one GEMM, ConvAsGemm.h; the weight
// gradient over a small output plane (up to 16 positions): a GEMM per kernel tap, ConvTapGemms.h.
//
// Fast path: oneDNN 2.6 primitives (convolution_forward, convolution_backward_data,
// convolution_backward_weights; algorithm::convolution_direct, in the layouts the primitive
// chooses (format_tag::any: blocked for its jit kernels, which are several times faster than the
// gemm-based ones plain layouts get), with exact reorders from the plan's nchw/oihw/goihw buffers
// into blocked copies in scratch and of the result back), created once at prepare time with the
// scratchpad and the blocked copies in the entry's shared scratch (scratchpad_mode::user) and
// fpmath_mode::strict. f32 runs in f32; bf16 runs as a bf16
// primitive (f32 accumulation, one rounding of each result) where the features allow native bf16
// GEMMs and oneDNN has a bf16 implementation on this CPU; every other float (f16, f8, bf16 without
// one) is widened exactly to f32 in scratch, computed in f32 and rounded once to its dtype. The
// summation order is oneDNN's, so results agree with the reference within the dot-product bound
// (docs/cpu-device.md), not bit for bit. The reference adds fl(0 * v) for padded taps, which is
// NaN for a non-finite weight (forward) or output gradient (grad_weight) while oneDNN skips the
// padding; a run whose padded op meets such a value therefore takes the direct loops below. When
// oneDNN cannot create the primitive at all, the step runs the direct loops.
//
// Direct loops: bit for bit the reference (docs/reference-executor.md, "Linear algebra" and
// "Gradient ops"). The summation order of every output element is the reference's; the loops are
// reordered so that the lanes of a vector are different output elements, each still accumulating
// its own terms in the documented order:
// - conv2d: one output row (n, o, oh) at a time, lanes over ow, terms over (ci, kh, kw), padded
//   taps contributing fl(0 * w), bias last.
// - conv2d_grad_input: one input row (n, c, ih), lanes over iw, terms over (o in group, kh, kw) for
//   the taps that exist.
// - conv2d_grad_weight: one (o, ci) slice of the weight, lanes over (kh, kw), terms over
//   (n, oh, ow), padded taps contributing fl(0 * dy).
// Adding fl(0 * v) for a finite v adds a signed zero to an accumulator that started at +0 and can
// therefore never be -0, which changes nothing; those adds are skipped, the non-finite ones are
// kept (0 * inf is NaN). Operands that are not f32 are widened once per call into the entry's shared
// scratch (sized at prepare). Rows (or weight slices) are split across threads.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/steps/ConvAsGemm.h"
#include "runtime/devices/cpu/steps/ConvTapGemms.h"
#include "runtime/devices/cpu/steps/CpuKernelUtil.h"
#include "runtime/devices/cpu/CpuReport.h"
#include "runtime/devices/cpu/CpuStep.h"
#include "runtime/devices/cpu/kernels/Gemm.h"
#include "runtime/devices/cpu/kernels/NonFiniteScan.h"
#include "runtime/WindowGeometry.h"
#include "dnnl.hpp"

namespace amp::rt::cpu {
namespace {

constexpr int64_t kWork = 16384;

// An operand as f32: the buffer itself when it is f32, else widened into `out` (parallel).
const float* widenAll(DType t, const uint8_t* p, int64_t n, float* out) {
  if (t == DType::F32) return reinterpret_cast<const float*>(p);
  parallelFor(n, 65536, [&](int64_t b, int64_t e) { convertBuffer(t, p + b * dtypeSize(t), DType::F32, out + b, e - b); });
  return out;
}

// True if any of the n elements is NaN or infinite: NonFiniteScan.h's branch-free scan of the
// exponent bits in chunks across threads (a yes/no, so the chunking cannot change it).
bool anyNonFiniteParallel(DType t, const uint8_t* p, int64_t n) {
  std::atomic<bool> found{false};
  const int64_t es = static_cast<int64_t>(dtypeSize(t));
  parallelFor(n, 262144, [&](int64_t b, int64_t e) {
    if (!found.load(std::memory_order_relaxed) && anyNonFinite(t, p + b * es, e - b))
      found.store(true, std::memory_order_relaxed);
  });
  return found.load();
}

[[noreturn]] void dnnlDie(const char* what, dnnl_status_t st) {
  std::fprintf(stderr, "amp cpu conv: %s failed (dnnl status %d)\n", what, static_cast<int>(st));
  std::abort();
}

// A prepared oneDNN convolution (forward, backward data or backward weights) over plain layouts.
// a/b/out follow ConvStep's operand naming.
// One tensor of the convolution: the plan's plain buffer (user) and, when the primitive wants
// another (blocked) layout, its copy in scratch and the exact reorder between them.
struct DnnPort {
  dnnl::memory user, inner;
  dnnl::primitive reorder;  // user -> inner for operands, inner -> user for the result
  dnnl_exec_arg_t args[2] = {};
  size_t innerBytes = 0;
  int64_t scratch = 0;  // SharedFloats offset of inner
  bool reordered = false;
};

struct DnnConv {
  dnnl::primitive prim;
  dnnl::stream stream;
  DnnPort ports[3];  // a, b, out
  dnnl::memory memBias, memPad;
  dnnl_exec_arg_t args[5] = {};
  int nargs = 0;
  size_t padBytes = 0;
  bool lowPrecision = false;  // the primitive's data type is bf16 (else f32)
  std::string impl;
  std::mutex mu;  // guards the memory objects' data handles
};

std::unique_ptr<DnnConv> makeDnnConv(ConvKind kind, const ConvGeom& g, bool bias, bool bf16) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  using md = dnnl::memory::desc;
  const dt type = bf16 ? dt::bf16 : dt::f32;
  const int64_t groups = g.o / g.og;
  const md x({g.n, g.c, g.h, g.w}, type, tag::nchw);
  const md y({g.n, g.o, g.oh, g.ow}, type, tag::nchw);
  const md w = groups > 1 ? md({groups, g.og, g.cg, g.kh, g.kw}, type, tag::goihw)
                          : md({g.o, g.cg, g.kh, g.kw}, type, tag::oihw);
  // The primitive picks its layouts (format_tag::any): its blocked kernels are far faster than
  // the gemm-based ones plain layouts get; the plain buffers are reordered in and out.
  const md xa({g.n, g.c, g.h, g.w}, type, tag::any);
  const md ya({g.n, g.o, g.oh, g.ow}, type, tag::any);
  const md wa = groups > 1 ? md({groups, g.og, g.cg, g.kh, g.kw}, type, tag::any)
                           : md({g.o, g.cg, g.kh, g.kw}, type, tag::any);
  const md b({g.o}, type, tag::x);
  const dnnl::memory::dims strides{g.sh, g.sw}, dil{g.dh - 1, g.dw - 1}, padL{g.ph, g.pw}, padR{g.ph, g.pw};
  const dnnl::engine& eng = cpuEngine();
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  attr.set_fpmath_mode(dnnl::fpmath_mode::strict);
  auto out = std::make_unique<DnnConv>();
  try {
    const auto alg = dnnl::algorithm::convolution_direct;
    const auto fwdDesc = bias && kind == ConvKind::Forward
                             ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, xa, wa, b, ya,
                                                               strides, dil, padL, padR)
                             : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, xa, wa, ya,
                                                               strides, dil, padL, padR);
    const dnnl::convolution_forward::primitive_desc fwd(fwdDesc, attr, eng);
    dnnl::memory::desc pad, aDesc, bDesc, outDesc;
    switch (kind) {
      case ConvKind::Forward:
        out->prim = dnnl::convolution_forward(fwd);
        out->impl = fwd.impl_info_str();
        pad = fwd.scratchpad_desc();
        aDesc = fwd.src_desc(), bDesc = fwd.weights_desc(), outDesc = fwd.dst_desc();
        break;
      case ConvKind::GradInput: {
        const dnnl::convolution_backward_data::primitive_desc pd(
            dnnl::convolution_backward_data::desc(alg, xa, wa, ya, strides, dil, padL, padR), attr, eng, fwd);
        out->prim = dnnl::convolution_backward_data(pd);
        out->impl = pd.impl_info_str();
        pad = pd.scratchpad_desc();
        aDesc = pd.diff_dst_desc(), bDesc = pd.weights_desc(), outDesc = pd.diff_src_desc();
        break;
      }
      case ConvKind::GradWeight: {
        const dnnl::convolution_backward_weights::primitive_desc pd(
            dnnl::convolution_backward_weights::desc(alg, xa, wa, ya, strides, dil, padL, padR), attr, eng, fwd);
        out->prim = dnnl::convolution_backward_weights(pd);
        out->impl = pd.impl_info_str();
        pad = pd.scratchpad_desc();
        aDesc = pd.src_desc(), bDesc = pd.diff_dst_desc(), outDesc = pd.diff_weights_desc();
        break;
      }
    }
    // The primitive's layouts (blocked where its kernels want them); plain ones need no reorder.
    const md& plainA = kind == ConvKind::GradInput ? y : x;
    const md& plainB = kind == ConvKind::GradWeight ? y : w;
    const md& plainOut = kind == ConvKind::Forward ? y : kind == ConvKind::GradInput ? x : w;
    out->stream = dnnl::stream(eng);
    const md* plain[3] = {&plainA, &plainB, &plainOut};
    const md inner[3] = {aDesc, bDesc, outDesc};
    for (int i = 0; i < 3; ++i) {
      DnnPort& p = out->ports[i];
      p.user = dnnl::memory(*plain[i], eng, DNNL_MEMORY_NONE);
      p.reordered = inner[i] != *plain[i];
      if (!p.reordered) continue;
      p.inner = dnnl::memory(inner[i], eng, DNNL_MEMORY_NONE);
      p.innerBytes = inner[i].get_size();
      p.reorder = i < 2 ? dnnl::reorder(dnnl::reorder::primitive_desc(p.user, p.inner))
                        : dnnl::reorder(dnnl::reorder::primitive_desc(p.inner, p.user));
      p.args[0] = {DNNL_ARG_FROM, (i < 2 ? p.user : p.inner).get()};
      p.args[1] = {DNNL_ARG_TO, (i < 2 ? p.inner : p.user).get()};
    }
    const int argA = kind == ConvKind::GradInput ? DNNL_ARG_DIFF_DST : DNNL_ARG_SRC;
    const int argB = kind == ConvKind::Forward ? DNNL_ARG_WEIGHTS : kind == ConvKind::GradInput ? DNNL_ARG_WEIGHTS
                                                                                                : DNNL_ARG_DIFF_DST;
    const int argOut = kind == ConvKind::Forward ? DNNL_ARG_DST : kind == ConvKind::GradInput ? DNNL_ARG_DIFF_SRC
                                                                                              : DNNL_ARG_DIFF_WEIGHTS;
    const int argOf[3] = {argA, argB, argOut};
    for (int i = 0; i < 3; ++i) {
      const DnnPort& p = out->ports[i];
      out->args[out->nargs++] = {argOf[i], (p.reordered ? p.inner : p.user).get()};
    }
    if (bias && kind == ConvKind::Forward) {
      out->memBias = dnnl::memory(fwd.bias_desc(), eng, DNNL_MEMORY_NONE);
      out->args[out->nargs++] = {DNNL_ARG_BIAS, out->memBias.get()};
    }
    out->padBytes = pad.get_size();
    if (out->padBytes > 0) {
      out->memPad = dnnl::memory(pad, eng, DNNL_MEMORY_NONE);
      out->args[out->nargs++] = {DNNL_ARG_SCRATCHPAD, out->memPad.get()};
    }
  } catch (const dnnl::error&) {
    return nullptr;
  }
  out->lowPrecision = bf16;
  return out;
}

class ConvStep final : public CpuStep {
 public:
  // Forward: a = x, b = w, bias (or -1) -> y. GradInput: a = dy, b = w -> dx. GradWeight: a = x,
  // b = dy -> dw.
  ConvStep(ConvKind kind, ConvGeom g, DType dtype, int32_t a, int32_t b, int32_t bias, int32_t out)
      : kind_(kind), g_(g), dtype_(dtype), a_(a), b_(b), bias_(bias), out_(out) {
    const int64_t x = g_.n * g_.c * g_.h * g_.w, w = g_.o * g_.cg * g_.kh * g_.kw, y = g_.n * g_.o * g_.oh * g_.ow;
    const int64_t aN = kind_ == ConvKind::GradInput ? y : x;
    const int64_t bN = kind_ == ConvKind::GradWeight ? y : w;
    outN_ = kind_ == ConvKind::Forward ? y : kind_ == ConvKind::GradInput ? x : w;
    if (dtype_ != DType::F32) {
      abuf_ = shared_.reserve(aN);
      bbuf_ = shared_.reserve(bN);
      biasBuf_ = shared_.reserve(bias_ >= 0 ? g_.o : 0);
      outBuf_ = shared_.reserve(outN_);
    }
    aN_ = aN;
    bN_ = bN;
  }

  // Prepares the oneDNN primitive (see the file comment); without one the step runs the direct
  // loops.
  void prepareOneDnn(const CpuFeatures& f) {
    const ConvGeom& g = g_;
    for (int64_t d : {g.n, g.c, g.h, g.w, g.o, g.cg, g.kh, g.kw, g.oh, g.ow})
      if (d <= 0) return;  // empty problems: the direct loops write the zeros
    // AMP_CPU_CONV_AS_GEMM=0 keeps these on oneDNN's convolutions, to measure the two side by side.
    const char* asGemm = std::getenv("AMP_CPU_CONV_AS_GEMM");
    if (!asGemm || std::strcmp(asGemm, "0") != 0) {
      asGemm_ = ConvAsGemm::create(kind_, g, dtype_, bias_ >= 0, f, shared_);
      if (!asGemm_) tapGemms_ = ConvTapGemms::create(kind_, g, dtype_, f, shared_);
    }
    if (asGemm_ || tapGemms_) return;
    const double flops = 2.0 * double(g.n * g.o * g.oh * g.ow) * double(g.cg * g.kh * g.kw);
    if (dtype_ == DType::BF16 && f.nativeBf16Gemm(flops)) dnn_ = makeDnnConv(kind_, g, bias_ >= 0, true);
    if (!dnn_) dnn_ = makeDnnConv(kind_, g, bias_ >= 0, false);
    if (!dnn_) return;
    if (dnn_->padBytes > 0) padBuf_ = shared_.reserve(int64_t((dnn_->padBytes + 3) / 4));
    for (DnnPort& p : dnn_->ports)
      if (p.reordered) p.scratch = shared_.reserve(int64_t((p.innerBytes + 3) / 4));
  }
  std::string implName() const {
    if (asGemm_) return asGemm_->implName();
    if (tapGemms_) return tapGemms_->implName();
    if (!dnn_) return "direct loops";
    if (dtype_ != DType::F32 && !dnn_->lowPrecision) return dnn_->impl + " (" + std::string(dtypeName(dtype_)) + " widened to f32)";
    return dnn_->impl;
  }
  int64_t sharedScratchBytes() const override { return shared_.bytes(); }
  std::string_view reportCount() const override {
    return asGemm_ ? kConvsAsGemm : tapGemms_ ? kConvsAsTapGemms : std::string_view();
  }
  void bindSharedScratch(uint8_t* p) override { shared_.bind(p); }

  absl::Status run(BufferPtrs ptr) override {
    if (asGemm_ && !paddingMeetsNonFinite(ptr)) {
      asGemm_->run(ptr[a_], ptr[b_], bias_ >= 0 ? ptr[bias_] : nullptr, ptr[out_], shared_);
      return absl::OkStatus();
    }
    if (tapGemms_ && !paddingMeetsNonFinite(ptr)) {
      tapGemms_->run(ptr[a_], ptr[b_], ptr[out_], shared_);
      return absl::OkStatus();
    }
    if (dnn_ && !paddingMeetsNonFinite(ptr)) {
      runOneDnn(ptr);
      return absl::OkStatus();
    }
    const float* a = widenAll(dtype_, ptr[a_], aN_, shared_.at(abuf_));
    const float* b = widenAll(dtype_, ptr[b_], bN_, shared_.at(bbuf_));
    const float* bias = bias_ >= 0 ? widenAll(dtype_, ptr[bias_], g_.o, shared_.at(biasBuf_)) : nullptr;
    float* out = dtype_ == DType::F32 ? reinterpret_cast<float*>(ptr[out_]) : shared_.at(outBuf_);
    switch (kind_) {
      case ConvKind::Forward: forward(a, b, bias, out); break;
      case ConvKind::GradInput: gradInput(a, b, out); break;
      case ConvKind::GradWeight: gradWeight(a, b, out); break;
    }
    if (dtype_ != DType::F32) {
      uint8_t* dst = ptr[out_];
      parallelFor(outN_, 65536, [&](int64_t s, int64_t e) { narrowRun(out + s, dtype_, dst, s, e - s); });
    }
    return absl::OkStatus();
  }

 private:
  // The reference adds fl(0 * v) for every padded tap: NaN where v (a weight in the forward, an
  // output gradient in grad_weight) is not finite, which oneDNN (skipping the padding) would miss.
  bool paddingMeetsNonFinite(BufferPtrs ptr) const {
    if (kind_ == ConvKind::GradInput || (g_.ph == 0 && g_.pw == 0)) return false;
    return anyNonFiniteParallel(dtype_, ptr[b_], bN_);
  }

  void runOneDnn(BufferPtrs ptr) {
    DnnConv& d = *dnn_;
    const bool direct = dtype_ == DType::F32 || d.lowPrecision;  // the primitive reads our buffers
    const void *a = ptr[a_], *b = ptr[b_], *bias = bias_ >= 0 ? ptr[bias_] : nullptr;
    void* out = ptr[out_];
    if (!direct) {  // exact widening; the one rounding at the end
      a = widenAll(dtype_, ptr[a_], aN_, shared_.at(abuf_));
      b = widenAll(dtype_, ptr[b_], bN_, shared_.at(bbuf_));
      if (bias) bias = widenAll(dtype_, ptr[bias_], g_.o, shared_.at(biasBuf_));
      out = shared_.at(outBuf_);
    }
    {
      std::lock_guard<std::mutex> lock(d.mu);
      auto setHandle = [](const dnnl::memory& m, const void* p) {
        dnnl_status_t st = dnnl_memory_set_data_handle_v2(m.get(), const_cast<void*>(p), nullptr);
        if (st != dnnl_success) dnnlDie("set_data_handle", st);
      };
      const void* bufs[3] = {a, b, out};
      for (int i = 0; i < 3; ++i) {
        setHandle(d.ports[i].user, bufs[i]);
        if (d.ports[i].reordered) setHandle(d.ports[i].inner, shared_.at(d.ports[i].scratch));
      }
      if (bias) setHandle(d.memBias, bias);
      if (d.memPad) setHandle(d.memPad, shared_.at(padBuf_));
      auto exec = [&](const dnnl::primitive& p, int n, const dnnl_exec_arg_t* args) {
        dnnl_status_t st = dnnl_primitive_execute(p.get(), d.stream.get(), n, args);
        if (st != dnnl_success) dnnlDie("dnnl_primitive_execute", st);
      };
      for (int i = 0; i < 2; ++i)
        if (d.ports[i].reordered) exec(d.ports[i].reorder, 2, d.ports[i].args);
      exec(d.prim, d.nargs, d.args);
      if (d.ports[2].reordered) exec(d.ports[2].reorder, 2, d.ports[2].args);
      dnnl_status_t st = dnnl_status_t(dnnl_success);
      st = dnnl_stream_wait(d.stream.get());
      if (st != dnnl_success) dnnlDie("dnnl_stream_wait", st);
    }
    if (!direct) {
      const float* o = shared_.at(outBuf_);
      uint8_t* dst = ptr[out_];
      parallelFor(outN_, 65536, [&](int64_t s, int64_t e) { narrowRun(o + s, dtype_, dst, s, e - s); });
    }
  }

  void forward(const float* x, const float* w, const float* bias, float* y) const {
    const ConvGeom& g = g_;
    const int64_t rows = g.n * g.o * g.oh;
    const int64_t rowWork = std::max<int64_t>(1, g.ow * g.cg * g.kh * g.kw);
    parallelFor(rows, std::max<int64_t>(1, kWork / rowWork), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t oh = r % g.oh, o = (r / g.oh) % g.o, n = r / (g.oh * g.o);
        const int64_t grp = o / g.og;
        float* acc = y + r * g.ow;  // y[n, o, oh, :]
        for (int64_t j = 0; j < g.ow; ++j) acc[j] = 0.0f;
        for (int64_t ci = 0; ci < g.cg; ++ci) {
          const float* xc = x + (n * g.c + grp * g.cg + ci) * g.h * g.w;
          for (int64_t kh = 0; kh < g.kh; ++kh) {
            const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
            const bool rowInside = ih >= 0 && ih < g.h;
            for (int64_t kw = 0; kw < g.kw; ++kw) {
              const float wv = w[((o * g.cg + ci) * g.kh + kh) * g.kw + kw];
              const bool finite = std::isfinite(wv);
              const float zero = 0.0f * wv;
              if (!rowInside) {
                if (!finite)
                  for (int64_t j = 0; j < g.ow; ++j) acc[j] += zero;
                continue;
              }
              // ow with iw = ow * sw - pw + kw * dw inside [0, W).
              const int64_t off = kw * g.dw - g.pw;
              int64_t lo = off >= 0 ? 0 : (-off + g.sw - 1) / g.sw;
              int64_t hi = g.w - 1 - off < 0 ? 0 : (g.w - 1 - off) / g.sw + 1;
              lo = std::min(lo, g.ow);
              hi = std::max(lo, std::min(hi, g.ow));
              if (!finite) {
                for (int64_t j = 0; j < lo; ++j) acc[j] += zero;
                for (int64_t j = hi; j < g.ow; ++j) acc[j] += zero;
              }
              const float* xr = xc + ih * g.w;
              if (g.sw == 1) {
                for (int64_t j = lo; j < hi; ++j) acc[j] += xr[j + off] * wv;
              } else {
                for (int64_t j = lo; j < hi; ++j) acc[j] += xr[j * g.sw + off] * wv;
              }
            }
          }
        }
        if (bias)
          for (int64_t j = 0; j < g.ow; ++j) acc[j] += bias[o];  // bias last, like a GEMM epilogue
      }
    });
  }

  void gradInput(const float* dy, const float* w, float* dx) const {
    const ConvGeom& g = g_;
    const int64_t rows = g.n * g.c * g.h;
    const int64_t rowWork = std::max<int64_t>(1, g.w * g.og * g.kh * g.kw);
    parallelFor(rows, std::max<int64_t>(1, kWork / rowWork), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t ih = r % g.h, ch = (r / g.h) % g.c, n = r / (g.h * g.c);
        const int64_t grp = ch / g.cg, ci = ch % g.cg;
        float* acc = dx + r * g.w;  // dx[n, ch, ih, :]
        for (int64_t j = 0; j < g.w; ++j) acc[j] = 0.0f;
        for (int64_t o = grp * g.og; o < (grp + 1) * g.og; ++o)
          for (int64_t kh = 0; kh < g.kh; ++kh) {
            const int64_t th = ih + g.ph - kh * g.dh;
            if (th < 0 || th % g.sh != 0 || th / g.sh >= g.oh) continue;
            const float* dyr = dy + ((n * g.o + o) * g.oh + th / g.sh) * g.ow;
            for (int64_t kw = 0; kw < g.kw; ++kw) {
              const float wv = w[((o * g.cg + ci) * g.kh + kh) * g.kw + kw];
              // iw with tw = iw + pw - kw * dw >= 0, tw % sw == 0 and tw / sw < OW.
              const int64_t shift = kw * g.dw - g.pw;  // iw = ow * sw + shift
              int64_t owLo = shift >= 0 ? 0 : (-shift + g.sw - 1) / g.sw;
              int64_t owHi = g.w - 1 - shift < 0 ? 0 : (g.w - 1 - shift) / g.sw + 1;
              owHi = std::min(owHi, g.ow);
              if (g.sw == 1) {
                for (int64_t j = owLo; j < owHi; ++j) acc[j + shift] += dyr[j] * wv;
              } else {
                for (int64_t j = owLo; j < owHi; ++j) acc[j * g.sw + shift] += dyr[j] * wv;
              }
            }
          }
      }
    });
  }

  void gradWeight(const float* x, const float* dy, float* dw) const {
    const ConvGeom& g = g_;
    const int64_t slices = g.o * g.cg, k = g.kh * g.kw;
    const int64_t sliceWork = std::max<int64_t>(1, k * g.n * g.oh * g.ow);
    parallelFor(slices, std::max<int64_t>(1, kWork / sliceWork), [&](int64_t s0, int64_t s1) {
      for (int64_t s = s0; s < s1; ++s) {
        const int64_t o = s / g.cg, ci = s % g.cg, grp = o / g.og;
        float* acc = dw + s * k;  // dw[o, ci, :, :]
        for (int64_t j = 0; j < k; ++j) acc[j] = 0.0f;
        for (int64_t n = 0; n < g.n; ++n) {
          const float* xc = x + (n * g.c + grp * g.cg + ci) * g.h * g.w;
          const float* dyc = dy + (n * g.o + o) * g.oh * g.ow;
          for (int64_t oh = 0; oh < g.oh; ++oh)
            for (int64_t ow = 0; ow < g.ow; ++ow) {
              const float d = dyc[oh * g.ow + ow];
              const bool finite = std::isfinite(d);
              const float zero = 0.0f * d;
              for (int64_t kh = 0; kh < g.kh; ++kh) {
                const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
                float* a = acc + kh * g.kw;
                if (ih < 0 || ih >= g.h) {
                  if (!finite)
                    for (int64_t kw = 0; kw < g.kw; ++kw) a[kw] += zero;
                  continue;
                }
                const float* xr = xc + ih * g.w;
                for (int64_t kw = 0; kw < g.kw; ++kw) {
                  const int64_t iw = ow * g.sw - g.pw + kw * g.dw;
                  if (iw >= 0 && iw < g.w) a[kw] += xr[iw] * d;
                  else if (!finite) a[kw] += zero;
                }
              }
            }
        }
      }
    });
  }

  ConvKind kind_;
  ConvGeom g_;
  DType dtype_;
  int32_t a_, b_, bias_, out_;
  int64_t aN_ = 0, bN_ = 0, outN_ = 0;
  SharedFloats shared_;
  int64_t abuf_ = 0, bbuf_ = 0, biasBuf_ = 0, outBuf_ = 0;  // widened operands and the f32 result
  std::unique_ptr<ConvAsGemm> asGemm_;  // a 1x1 output plane: one GEMM (ConvAsGemm.h)
  std::unique_ptr<ConvTapGemms> tapGemms_;  // grad_weight over a small plane: a GEMM per tap (ConvTapGemms.h)
  std::unique_ptr<DnnConv> dnn_;
  int64_t padBuf_ = 0;  // oneDNN's scratchpad
};

absl::StatusOr<std::vector<int64_t>> pairAttr(const StepContext& c, const char* name,
                                              const absl::StatusOr<std::vector<int64_t>>& v, int64_t minValue) {
  if (!v.ok()) return v.status();
  if (v->size() != 2) return c.error(absl::StrCat("attribute '", name, "' must have 2 entries"));
  for (int64_t x : *v)
    if (x < minValue) return c.error(absl::StrCat("attribute '", name, "' entries must be >= ", minValue));
  return *v;
}

// The reference's checks (evalConv2d, checkConv) on x [N,C,H,W] and w [O,C/groups,KH,KW].
absl::StatusOr<ConvGeom> convGeom(const StepContext& c, const Shape& xs, const Shape& ws, bool forward) {
  auto window = c.step.withAttrsOf<Conv2DAttrs, Conv2DGradInputAttrs, Conv2DGradWeightAttrs>(
      [](const auto& a) { return std::array{a.stride, a.padding, a.dilation}; });
  if (!window.ok()) return window.status();
  auto stride = pairAttr(c, "stride", (*window)[0], 1);
  if (!stride.ok()) return stride.status();
  auto pad = pairAttr(c, "padding", (*window)[1], 0);
  if (!pad.ok()) return pad.status();
  auto dil = pairAttr(c, "dilation", (*window)[2], 1);
  if (!dil.ok()) return dil.status();
  auto groups = c.step.withAttrsOf<Conv2DAttrs, Conv2DGradInputAttrs, Conv2DGradWeightAttrs>(
      [](const auto& a) { return a.groups; });
  if (!groups.ok()) return groups.status();
  if (xs.size() != 4 || ws.size() != 4) return c.error("input and weight must have rank 4");
  const int64_t C = xs[1], O = ws[0];
  if (*groups < 1 || C % *groups != 0 || O % *groups != 0 || ws[1] != C / *groups)
    return c.error(absl::StrCat("groups = ", *groups, " does not fit input ", shapeToString(xs), " and weight ",
                                shapeToString(ws)));
  const std::optional<int64_t> spanHo = windowSpan(xs[2], (*pad)[0], (*dil)[0], ws[2]),
                               spanWo = windowSpan(xs[3], (*pad)[1], (*dil)[1], ws[3]);
  if (!spanHo || !spanWo) return c.error("the window's extent overflows int64 (padding, dilation or kernel out of range)");
  const int64_t spanH = *spanHo, spanW = *spanWo;
  if (spanH < 0 || spanW < 0 || (forward && (ws[2] < 1 || ws[3] < 1)))
    return c.error(absl::StrCat("kernel does not fit the padded input ", shapeToString(xs)));
  ConvGeom g;
  g.n = xs[0], g.c = C, g.h = xs[2], g.w = xs[3];
  g.o = O, g.cg = ws[1], g.kh = ws[2], g.kw = ws[3];
  g.oh = spanH / (*stride)[0] + 1, g.ow = spanW / (*stride)[1] + 1, g.og = O / *groups;
  g.sh = (*stride)[0], g.sw = (*stride)[1], g.ph = (*pad)[0], g.pw = (*pad)[1], g.dh = (*dil)[0], g.dw = (*dil)[1];
  return g;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CpuStep>> makeConvStep(const StepContext& c) {
  ConvKind kind;
  if (c.code == OpCode::Conv2D) kind = ConvKind::Forward;
  else if (c.code == OpCode::Conv2DGradInput) kind = ConvKind::GradInput;
  else if (c.code == OpCode::Conv2DGradWeight) kind = ConvKind::GradWeight;
  else return nullptr;
  const size_t nOps = c.step.operands.size();
  if ((kind == ConvKind::Forward ? (nOps < 2 || nOps > 3) : nOps != 2) || c.step.results.size() != 1)
    return c.error("wrong number of operands or results");
  const BufferDesc &a = c.operand(0), &b = c.operand(1), &out = c.result(0);
  const DType t = a.dtype;
  if (!isKernelFloat(t)) return c.error("operand 0 must have a float element type");
  for (size_t i = 1; i < nOps; ++i)
    if (c.operand(i).dtype != t) return c.error("operands must have the same element type");
  if (out.dtype != t) return c.error("the result must have the operands' element type");
  const Shape& xs = kind == ConvKind::GradInput ? out.shape : a.shape;
  const Shape& ws = kind == ConvKind::GradWeight ? out.shape : b.shape;
  auto g = convGeom(c, xs, ws, kind == ConvKind::Forward);
  if (!g.ok()) return g.status();
  const Shape ys{g->n, g->o, g->oh, g->ow};
  if (kind == ConvKind::Forward) {
    if (nOps == 3 && c.operand(2).shape != Shape{g->o}) return c.error(absl::StrCat("bias must have shape [", g->o, "]"));
    if (out.shape != ys) return c.error(absl::StrCat("the result must have shape ", shapeToString(ys)));
  } else {
    const Shape& dys = kind == ConvKind::GradInput ? a.shape : b.shape;
    if (dys != ys) return c.error(absl::StrCat("grad has shape ", shapeToString(dys), ", expected ", shapeToString(ys)));
  }
  auto step = std::make_unique<ConvStep>(kind, *g, t, c.step.operands[0], c.step.operands[1],
                                         nOps == 3 ? c.step.operands[2] : -1, c.step.results[0]);
  step->prepareOneDnn(c.features);
  if (std::getenv("AMP_CPU_CONV_VERBOSE"))
    std::fprintf(stderr, "amp cpu conv: %s %s: %s\n", c.step.op.c_str(), std::string(dtypeName(t)).c_str(),
                 step->implName().c_str());
  return std::unique_ptr<CpuStep>(std::move(step));
}

}  // namespace amp::rt::cpu
