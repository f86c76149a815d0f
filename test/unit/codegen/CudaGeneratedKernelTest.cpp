// The generated kernels' wrappers (codegen/emit/CudaFlavour.cpp's kernelText: the 16-byte vector
// path with its scalar tail, the scalar-only path of unaligned pointers, and the column kernel of
// row reductions) run on the host: the CUDA source ampc emits for a fused step, compiled by the
// system compiler as the C++ flavour's kernels are (codegen::compileSharedObject), with CUDA's
// built-ins mapped onto BlockEmulation.h's indices, launched on grids far smaller than the step
// (every grid-stride loop takes several turns; both schedules), against the reference executor
// running the same region op by op, bit for bit. The library kernels appended to the same source
// are left out: they run through the emulator in the kernel tests (amp-kernel-tests*).
#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "codegen/Toolchain.h"
#include "codegen/emit/KernelEmitter.h"
#include "gtest/gtest.h"
#include "runtime/devices/Devices.h"
#include "runtime/exec/Session.h"
#include "runtime/numerics/Convert.h"
#include "test/unit/common/FusedPlan.h"
#include "test/unit/common/BlockEmulation.h"

namespace amp::rt {
namespace {

// What host C++ lacks of CUDA for the generated kernels: the built-in vector types, and the
// built-in indices, read from the emulator's (emu::Index3 and emu::Dim3 have this layout). The
// kernels have no barriers, so each emulated thread runs its kernel to the end in one go.
const char* kEmulatedCuda = R"(
struct uint2 { unsigned x, y; };
struct uint4 { unsigned x, y, z, w; };
struct AmpEmuIndex { unsigned x, y, z; };
static const AmpEmuIndex *amp_emu_thread, *amp_emu_block, *amp_emu_block_dim, *amp_emu_grid_dim;
extern "C" __attribute__((visibility("default"))) void amp_emu_bind(const void* thread, const void* block,
                                                                    const void* blockDim, const void* gridDim) {
  amp_emu_thread = (const AmpEmuIndex*)thread, amp_emu_block = (const AmpEmuIndex*)block;
  amp_emu_block_dim = (const AmpEmuIndex*)blockDim, amp_emu_grid_dim = (const AmpEmuIndex*)gridDim;
}
#define threadIdx (*amp_emu_thread)
#define blockIdx (*amp_emu_block)
#define blockDim (*amp_emu_block_dim)
#define gridDim (*amp_emu_grid_dim)
#define __global__ __attribute__((visibility("default")))
#define __launch_bounds__(threads)
)";

// The generated kernels of `plan` as a loaded shared object; the library kernels cut off.
class GeneratedKernels {
 public:
  explicit GeneratedKernels(Plan& plan) {
    std::string source, error;
    EXPECT_TRUE(codegen::emitCudaSource(plan, source, error)) << error;
    const size_t library = source.find("\n// The CUDA device's library kernels.");
    EXPECT_NE(library, std::string::npos);
    std::vector<uint8_t> bytes;
    EXPECT_TRUE(codegen::compileSharedObject("c++", kEmulatedCuda + source.substr(0, library), "x86-64", bytes, error))
        << error;
    char path[] = "/tmp/amp-cuda-generated-XXXXXX";
    const int fd = mkstemp(path);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    close(fd);
    handle_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    unlink(path);
    EXPECT_NE(handle_, nullptr) << dlerror();
    if (!handle_) return;
    auto bind = reinterpret_cast<void (*)(const void*, const void*, const void*, const void*)>(dlsym(handle_, "amp_emu_bind"));
    EXPECT_NE(bind, nullptr);
    if (bind) bind(&emu::gThreadIdx, &emu::gBlockIdx, &emu::gBlockDim, &emu::gGridDim);
  }
  ~GeneratedKernels() {
    if (handle_) dlclose(handle_);
  }
  void* kernel(const std::string& name) const { return handle_ ? dlsym(handle_, name.c_str()) : nullptr; }

 private:
  void* handle_ = nullptr;
};

// Runs a kernel of inputs then outputs, all pointers, on two blocks of 64 threads.
std::string launch(void* kernel, const std::vector<void*>& p, emu::Schedule schedule) {
  return emu::launch({2, 1, 1}, {64, 1, 1}, [&] {
    switch (p.size()) {
      case 2: reinterpret_cast<void (*)(void*, void*)>(kernel)(p[0], p[1]); break;
      case 3: reinterpret_cast<void (*)(void*, void*, void*)>(kernel)(p[0], p[1], p[2]); break;
      case 4: reinterpret_cast<void (*)(void*, void*, void*, void*)>(kernel)(p[0], p[1], p[2], p[3]); break;
      case 5: reinterpret_cast<void (*)(void*, void*, void*, void*, void*)>(kernel)(p[0], p[1], p[2], p[3], p[4]); break;
      default: ADD_FAILURE() << p.size() << " pointers";
    }
  }, schedule);
}

// Normal values with NaN, -0, -inf and a subnormal among them.
std::map<std::string, Tensor> randomFeeds(const Plan& plan, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::map<std::string, Tensor> feeds;
  for (const BufferDesc& b : plan.buffers) {
    if (b.kind != BufferKind::Input) continue;
    Tensor t(b.dtype, b.shape);
    for (int64_t i = 0; i < t.numel(); ++i) storeFromF32(b.dtype, t.data(), i, normal(rng));
    if (t.numel() >= 8) {
      storeFromF32(b.dtype, t.data(), 1, NAN);
      storeFromF32(b.dtype, t.data(), 3, -0.0f);
      storeFromF32(b.dtype, t.data(), 5, -INFINITY);
      storeFromF32(b.dtype, t.data(), 7, 1e-40f);
    }
    feeds.emplace(b.name, std::move(t));
  }
  return feeds;
}

// The fused step of `c` emitted, compiled and run through the emulator (with its pointers 16-byte
// aligned, then each a few bytes off so only the scalar loop runs), against the reference executor.
// Returns the step's vector width.
int64_t expectReferenceBits(const FusedCase& c) {
  Plan plan = fusedPlan(c);
  GeneratedKernels kernels(plan);
  const PlanStep& step = plan.entries[0].steps[0];
  void* kernel = kernels.kernel(*step.attrs.getString(step.op, "cuda_symbol"));
  EXPECT_NE(kernel, nullptr);
  if (!kernel) return 0;
  const std::map<std::string, Tensor> feeds = randomFeeds(plan, 5);
  auto reference = openSession(plan, Device::Reference);
  EXPECT_TRUE(reference.ok()) << reference.status();
  if (!reference.ok()) return 0;
  auto want = reference->run("eval", feeds);
  EXPECT_TRUE(want.ok()) << want.status();
  if (!want.ok()) return 0;
  for (size_t offset : {size_t{0}, size_t{4}}) {
    // One arena of 16-byte aligned slots, each buffer `offset` bytes into its slot.
    std::vector<const Tensor*> inputs;
    for (size_t i = 0; i < c.inputs.size(); ++i) inputs.push_back(&feeds.at("in" + std::to_string(i)));
    std::vector<size_t> sizes;
    for (const Tensor* t : inputs) sizes.push_back(t->nbytes());
    for (const NamedTensor& r : *want) sizes.push_back(r.tensor.nbytes());
    std::vector<size_t> starts;
    size_t total = 0;
    for (size_t n : sizes) starts.push_back(total + offset), total += (n + offset + 15) / 16 * 16 + 16;
    alignas(16) static uint8_t arena[1 << 20];
    EXPECT_LE(total, sizeof(arena));
    std::vector<void*> pointers;
    for (size_t i = 0; i < sizes.size(); ++i) pointers.push_back(arena + starts[i]);
    for (emu::Schedule schedule : {emu::Schedule::Forward, emu::Schedule::Reverse}) {
      std::memset(arena, 0xcd, total);  // a fill the kernel must overwrite everywhere
      for (size_t i = 0; i < inputs.size(); ++i) std::memcpy(arena + starts[i], inputs[i]->data(), sizes[i]);
      SCOPED_TRACE(testing::Message() << (offset ? "unaligned" : "aligned") << " pointers, "
                                      << (schedule == emu::Schedule::Forward ? "forward" : "reverse") << " schedule");
      EXPECT_EQ(launch(kernel, pointers, schedule), "");
      for (size_t r = 0; r < want->size(); ++r) {
        const Tensor& w = (*want)[r].tensor;
        const uint8_t* got = arena + starts[inputs.size() + r];
        const size_t es = dtypeSize(w.dtype());
        for (int64_t k = 0; k < w.numel(); ++k) {
          const float g = loadAsF32(w.dtype(), got, k), v = loadAsF32(w.dtype(), w.data(), k);
          if (std::memcmp(got + k * es, w.data() + k * es, es) == 0 || (std::isnan(g) && std::isnan(v))) continue;
          ADD_FAILURE() << "result " << r << " element " << k << ": " << g << ", the reference " << v;
          break;
        }
      }
    }
  }
  return *step.attrs.getInt(step.op, "cuda_vector_width");
}

// The MLP's forward pattern: a GEMM output cast to f32, + bias per column, relu, cast back. 5 rows
// of 131: the vector loop, then a tail of 3 elements.
TEST(CudaGeneratedKernel, VectorPathAndScalarTailAreTheReferencesBits) {
  for (DType t : {DType::BF16, DType::F16, DType::F32}) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    EXPECT_EQ(expectReferenceBits({{{t, {5, 131}}, {DType::F32, {131}}},
                                   {5, 131},
                                   {{"amp.cast", {0}, DType::F32},
                                    {"amp.add", {2, 1}, DType::F32},
                                    {"amp.relu", {3}, DType::F32},
                                    {"amp.cast", {4}, t}},
                                   {3, 5}}),
              4)
        << "an f32 result: 16-byte vectors of 4";
    // Only 16-bit operands: vectors of 8.
    EXPECT_EQ(expectReferenceBits({{{t, {3, 45}}, {t, {3, 45}}},
                                   {3, 45},
                                   {{"amp.mul", {0, 1}, t}, {"amp.sub", {2, 0}, t}},
                                   {3}}),
              t == DType::F32 ? 4 : 8);
  }
}

// The backward of a relu layer: the mask applied and the bias gradient (column sums, every row in
// order) in one column kernel; 300 columns cross the 128 threads; rank 3 sums two leading dims.
TEST(CudaGeneratedKernel, ColumnSumKernelIsTheReferencesBits) {
  AttrMap gt{{"predicate", std::string("gt")}};
  for (DType t : {DType::BF16, DType::F32, DType::F16}) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    EXPECT_EQ(expectReferenceBits({{{t, {40, 300}}, {t, {}}, {t, {40, 300}}},
                                   {40, 300},
                                   {{"amp.compare", {0, 1}, DType::Bool, gt},
                                    {"amp.select", {3, 2, 1}, t},
                                    {"amp.reduce_sum", {4}, t, {{"dims", std::vector<int64_t>{0}}, {"keepdim", false}}, {300}}},
                                   {4, 5}}),
              1);
  }
  // Over 256 rows: the blocked pairwise order of the reference's reduce_sum (3 blocks, the last partial).
  expectReferenceBits({{{DType::F32, {700, 33}}, {DType::F32, {33}}},
                       {700, 33},
                       {{"amp.add", {0, 1}, DType::F32},
                        {"amp.reduce_sum", {2}, DType::F32, {{"dims", std::vector<int64_t>{0}}, {"keepdim", false}}, {33}}},
                       {3}});
  expectReferenceBits({{{DType::F32, {4, 9, 70}}, {DType::F32, {70}}},
                       {4, 9, 70},
                       {{"amp.add", {0, 1}, DType::F32},
                        {"amp.reduce_sum", {2}, DType::F32, {{"dims", std::vector<int64_t>{0, 1}}, {"keepdim", false}}, {70}}},
                       {3}});
}

}  // namespace
}  // namespace amp::rt
