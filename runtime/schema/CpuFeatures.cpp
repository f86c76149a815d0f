#include "runtime/schema/CpuFeatures.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define AMP_CPU_X86 1
#endif

#if defined(__linux__) && defined(AMP_CPU_X86)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace amp::rt {
namespace {

#ifdef AMP_CPU_X86

struct Regs {
  uint32_t a = 0, b = 0, c = 0, d = 0;
};

Regs cpuid(uint32_t leaf, uint32_t subleaf) {
  Regs r;
  __cpuid_count(leaf, subleaf, r.a, r.b, r.c, r.d);
  return r;
}

bool bit(uint32_t v, int i) { return (v >> i) & 1u; }

// XCR0: which register state the OS saves on context switch. Inline asm so that this file needs
// no -mxsave (the caller has checked OSXSAVE, so the instruction exists and is enabled).
uint64_t xgetbv0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

// Linux (>= 5.16) keeps AMX tile data disabled per process until asked; without the permission
// the first tile instruction raises SIGILL even though XCR0 advertises the state.
bool requestAmxPermission() {
#ifdef __linux__
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return true;  // Other OSes: XCR0 alone decides.
#endif
}

CpuFeatures detect() {
  CpuFeatures f;
  const uint32_t maxLeaf = __get_cpuid_max(0, nullptr);
  if (maxLeaf < 1) return f;
  const Regs vendor = cpuid(0, 0);  // "AuthenticAMD" in b, d, c
  f.amd = vendor.b == 0x68747541 && vendor.d == 0x69746e65 && vendor.c == 0x444d4163;
  const Regs l1 = cpuid(1, 0);
  f.fma = bit(l1.c, 12);
  f.movbe = bit(l1.c, 22);
  f.f16c = bit(l1.c, 29);
  const bool osxsave = bit(l1.c, 27);
  const uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  // AVX state needs XMM (bit 1) and YMM (bit 2); AVX-512 adds opmask (5), ZMM_Hi256 (6) and
  // Hi16_ZMM (7); AMX needs XTILECFG (17) and XTILEDATA (18).
  const bool osAvx = (xcr0 & 0x6) == 0x6;
  const bool osAvx512 = (xcr0 & 0xE6) == 0xE6;
  const bool osAmx = (xcr0 & 0x60000) == 0x60000;
  f.avx = bit(l1.c, 28) && osAvx;
  // FMA and F16C operate on YMM registers, so they are usable only with AVX state enabled.
  f.fma = f.fma && f.avx;
  f.f16c = f.f16c && f.avx;

  if (__get_cpuid_max(0x80000000, nullptr) >= 0x80000001) f.lzcnt = bit(cpuid(0x80000001, 0).c, 5);

  if (maxLeaf >= 7) {
    const Regs l7 = cpuid(7, 0);
    f.bmi1 = bit(l7.b, 3);
    f.avx2 = bit(l7.b, 5) && f.avx;
    f.bmi2 = bit(l7.b, 8);
    f.avx512f = bit(l7.b, 16) && osAvx512;
    f.avx512dq = bit(l7.b, 17) && f.avx512f;
    f.avx512cd = bit(l7.b, 28) && f.avx512f;
    f.avx512bw = bit(l7.b, 30) && f.avx512f;
    f.avx512vl = bit(l7.b, 31) && f.avx512f;
    f.avx512_fp16 = bit(l7.d, 23) && f.avx512f;
    const bool cpuAmxTile = bit(l7.d, 24), cpuAmxBf16 = bit(l7.d, 22);
    if (l7.a >= 1) f.avx512_bf16 = bit(cpuid(7, 1).a, 5) && f.avx512f;
    if (cpuAmxTile && osAmx && requestAmxPermission()) {
      f.amx_tile = true;
      f.amx_bf16 = cpuAmxBf16;
    }
  }
  return f;
}

#else  // !AMP_CPU_X86

CpuFeatures detect() { return CpuFeatures(); }

#endif

}  // namespace

std::string CpuFeatures::summary() const {
  const std::pair<bool, const char*> flags[] = {
      {avx2, "avx2"},         {fma, "fma"},           {f16c, "f16c"},
      {avx512f, "avx512f"},   {avx512bw, "avx512bw"}, {avx512vl, "avx512vl"},
      {avx512_bf16, "avx512_bf16"}, {avx512_fp16, "avx512_fp16"},
      {amx_tile, "amx_tile"}, {amx_bf16, "amx_bf16"},
  };
  std::string s;
  for (const auto& [on, name] : flags) {
    if (!on) continue;
    if (!s.empty()) s += ' ';
    s += name;
  }
  return s.empty() ? "none" : s;
}

std::string CpuFeatures::isaLevel() const {
  const bool v3 = avx && avx2 && bmi1 && bmi2 && f16c && fma && lzcnt && movbe;
  if (v3 && avx512f && avx512bw && avx512cd && avx512dq && avx512vl) return "x86-64-v4";
  if (v3) return "x86-64-v3";
  return "x86-64";
}

namespace {
// The levels lowerTo accepts, lowest first.
constexpr const char* kLevels[] = {"x86-64", "x86-64-v3", "x86-64-v4", "avx512_bf16", "host"};
}  // namespace

bool CpuFeatures::lowerTo(const std::string& level) {
  // Each level keeps what the one above it keeps, minus its own cut.
  int rank = -1;
  for (int i = 0; i < 5; ++i)
    if (level == kLevels[i]) rank = i;
  if (rank < 0) return false;
  if (rank < 4) amx_tile = amx_bf16 = false;
  if (rank < 3) avx512_bf16 = avx512_fp16 = false;
  if (rank < 2) avx512f = avx512dq = avx512cd = avx512bw = avx512vl = false;
  if (rank < 1) avx = avx2 = fma = f16c = bmi1 = bmi2 = lzcnt = movbe = false;
  return true;
}

const std::string& CpuFeatures::levels() {
  static const std::string joined = [] {
    std::string s;
    for (const char* l : kLevels) s += (s.empty() ? "" : ", ") + std::string(l);
    return s;
  }();
  return joined;
}

const CpuFeatures& CpuFeatures::detected() {
  static const CpuFeatures features = detect();  // C++11 magic static: detected exactly once.
  return features;
}

namespace {

struct Masked {
  CpuFeatures features;
  std::string level, error;
};

const Masked& masked() {
  static const Masked m = [] {
    Masked r{CpuFeatures::detected(), "", ""};
    const char* env = std::getenv("AMP_CPU_FEATURES");
    if (env == nullptr || *env == '\0') return r;
    if (r.features.lowerTo(env))
      r.level = env;
    else
      r.error = std::string("AMP_CPU_FEATURES='") + env + "' is not a CPU level; expected one of " +
                CpuFeatures::levels();
    return r;
  }();
  return m;
}

}  // namespace

const CpuFeatures& CpuFeatures::host() { return masked().features; }

const std::string& CpuFeatures::maskError() { return masked().error; }

const std::string& CpuFeatures::maskLevel() { return masked().level; }

}  // namespace amp::rt
