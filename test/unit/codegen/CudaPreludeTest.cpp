// The conversions of the CUDA kernels' prelude (codegen/emit/CudaFlavour.cpp) compiled as host C++
// by the system compiler: they must be bit-identical to runtime/numerics (which the cpu flavour's
// conversions equal), so the device rounds f16/bf16 exactly as the other devices do. The same
// integer code runs on the GPU; only FP modes could change it there, and the kernels are compiled
// with --ftz=false (and use no FP arithmetic in the stores at all).
#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include "codegen/Toolchain.h"
#include "codegen/emit/KernelEmitter.h"
#include "gtest/gtest.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt {
namespace {

// The toolchain compiles with -fvisibility=hidden (only a kernel table is exported), so the
// wrappers export themselves.
const char* kWrappers = R"(
#define AMP_TEST_EXPORT extern "C" __attribute__((visibility("default")))
AMP_TEST_EXPORT void t_ld_f16(const unsigned short* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] = amp_ld_f16(x[i]); }
AMP_TEST_EXPORT void t_ld_bf16(const unsigned short* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] = amp_ld_bf16(x[i]); }
AMP_TEST_EXPORT void t_st_f16(const float* x, unsigned short* y, long n) { for (long i = 0; i < n; ++i) y[i] = amp_st_f16(x[i]); }
AMP_TEST_EXPORT void t_st_bf16(const float* x, unsigned short* y, long n) { for (long i = 0; i < n; ++i) y[i] = amp_st_bf16(x[i]); }
AMP_TEST_EXPORT void t_rn_f16(const float* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] = amp_rn_f16(x[i]); }
)";

using LoadFn = void (*)(const uint16_t*, float*, long);
using StoreFn = void (*)(const float*, uint16_t*, long);
using RoundFn = void (*)(const float*, float*, long);

class CudaPrelude : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::vector<uint8_t> bytes;
    std::string error;
    // x86-64 baseline: nothing in the prelude may depend on F16C or other ISA extensions.
    ASSERT_TRUE(codegen::compileSharedObject("c++", std::string(codegen::cudaPrelude()) + kWrappers, "x86-64", bytes,
                                             error))
        << error;
    char path[] = "/tmp/amp-cuda-prelude-XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    close(fd);
    handle_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    unlink(path);
    ASSERT_NE(handle_, nullptr) << dlerror();
  }
  static void TearDownTestSuite() {
    if (handle_) dlclose(handle_);
    handle_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(handle_, nullptr) << "the prelude did not compile or load"; }
  template <typename Fn>
  static Fn symbol(const char* name) {
    void* fn = dlsym(handle_, name);
    EXPECT_NE(fn, nullptr) << "the prelude object does not export " << name;
    return reinterpret_cast<Fn>(fn);
  }
  static void* handle_;
};
void* CudaPrelude::handle_ = nullptr;

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Every f32 exponent/sign/top-mantissa pattern (the upper 16 bits) with low halves around the f16
// and bf16 rounding points (ties, one either side, bit 13 odd/even), plus random patterns.
std::vector<float> f32Patterns() {
  std::vector<uint32_t> lows = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x2001, 0x2fff, 0x3000,
                                0x3001, 0x7fff, 0x8000, 0x8001, 0xbfff, 0xc000, 0xefff, 0xf000, 0xf001, 0xffff};
  std::mt19937 rng(7);
  for (int k = 0; k < 12; ++k) lows.push_back(rng() & 0xffffu);
  std::vector<float> xs;
  for (uint32_t hi = 0; hi < 0x10000u; ++hi)
    for (uint32_t lo : lows) xs.push_back(floatOf(hi << 16 | lo));
  for (int k = 0; k < (1 << 22); ++k) xs.push_back(floatOf(static_cast<uint32_t>(rng())));
  return xs;
}

TEST_F(CudaPrelude, LoadsOfEveryF16AndBf16PatternAreExact) {
  std::vector<uint16_t> all(1 << 16);
  for (uint32_t h = 0; h < all.size(); ++h) all[h] = static_cast<uint16_t>(h);
  std::vector<float> f16(all.size()), bf16(all.size());
  const auto ld_f16 = symbol<LoadFn>("t_ld_f16");
  ASSERT_NE(ld_f16, nullptr);
  ld_f16(all.data(), f16.data(), static_cast<long>(all.size()));
  const auto ld_bf16 = symbol<LoadFn>("t_ld_bf16");
  ASSERT_NE(ld_bf16, nullptr);
  ld_bf16(all.data(), bf16.data(), static_cast<long>(all.size()));
  int bad = 0;
  for (uint32_t h = 0; h < all.size() && bad < 5; ++h) {
    if (bitsOf(f16[h]) != bitsOf(f16ToF32(all[h]))) ADD_FAILURE() << "f16 0x" << std::hex << h << " bad: " << ++bad;
    if (bitsOf(bf16[h]) != bitsOf(bf16ToF32(all[h]))) ADD_FAILURE() << "bf16 0x" << std::hex << h << " bad: " << ++bad;
  }
}

TEST_F(CudaPrelude, StoresRoundExactlyAsTheRuntime) {
  const std::vector<float> xs = f32Patterns();
  std::vector<uint16_t> f16(xs.size()), bf16(xs.size());
  std::vector<float> rounded(xs.size());
  const auto st_f16 = symbol<StoreFn>("t_st_f16");
  ASSERT_NE(st_f16, nullptr);
  st_f16(xs.data(), f16.data(), static_cast<long>(xs.size()));
  const auto st_bf16 = symbol<StoreFn>("t_st_bf16");
  ASSERT_NE(st_bf16, nullptr);
  st_bf16(xs.data(), bf16.data(), static_cast<long>(xs.size()));
  const auto rn_f16 = symbol<RoundFn>("t_rn_f16");
  ASSERT_NE(rn_f16, nullptr);
  rn_f16(xs.data(), rounded.data(), static_cast<long>(xs.size()));
  int bad = 0;
  for (size_t k = 0; k < xs.size() && bad < 5; ++k) {
    const uint32_t x = bitsOf(xs[k]);
    if (f16[k] != f32ToF16(xs[k]))
      ADD_FAILURE() << "f16 of 0x" << std::hex << x << ": 0x" << f16[k] << " vs 0x" << f32ToF16(xs[k]) << " " << ++bad;
    if (bf16[k] != f32ToBF16(xs[k]))
      ADD_FAILURE() << "bf16 of 0x" << std::hex << x << ": 0x" << bf16[k] << " vs 0x" << f32ToBF16(xs[k]) << " " << ++bad;
    if (bitsOf(rounded[k]) != bitsOf(f16ToF32(f32ToF16(xs[k]))))
      ADD_FAILURE() << "f16 rounding of 0x" << std::hex << x << " " << ++bad;
  }
  EXPECT_GT(xs.size(), size_t{2} << 20);
}

}  // namespace
}  // namespace amp::rt
