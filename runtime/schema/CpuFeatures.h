// The CPU target, shared by ampc and amp-run: x86 feature bits, the psABI ISA levels and the rule
// for native bf16 GEMMs, with run-time detection (cpuid + xgetbv) of the machine. The cpu device
// picks its GEMM paths and fused-kernel object by it; ampc's --precision=auto for --target=cpu
// asks the same rule, so the two cannot disagree. A feature counts only when both the CPU and the
// OS support it (the OS must save the register state it needs). AMP_CPU_FEATURES=LEVEL lowers
// what host() reports, so that every lower level's code path can be run and tested on a bigger
// machine (docs/cpu-device.md).
#ifndef AMP_RUNTIME_SCHEMA_CPUFEATURES_H
#define AMP_RUNTIME_SCHEMA_CPUFEATURES_H

#include <string>

namespace amp::rt {

// Plain flags so tests and callers can build a modified copy (e.g. "host without native bf16") to
// force a code path.
struct CpuFeatures {
  // x86-64-v3 building blocks.
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool bmi1 = false;
  bool bmi2 = false;
  bool lzcnt = false;
  bool movbe = false;
  // AVX-512 (all require the OS to save opmask and ZMM state: XCR0 & 0xE6 == 0xE6).
  bool avx512f = false;
  bool avx512dq = false;
  bool avx512cd = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512_bf16 = false;
  bool avx512_fp16 = false;
  // AMX (requires XCR0 bits 17/18 and, on Linux, per-process permission for tile data).
  bool amx_tile = false;
  bool amx_bf16 = false;

  // The vendor string is "AuthenticAMD": its AVX512-BF16 cores (Zen 4, Zen 5) issue VDPBF16PS at
  // the rate of a 512-bit FMA, so a bf16 dot product does twice the f32 work per instruction.
  bool amd = false;

  // bf16 GEMMs run natively (oneDNN's bf16 kernels) where that beats widening the operands to f32
  // and running the f32 GEMM: AMX tiles, or AVX512-BF16 on AMD. Intel cores with AVX512-BF16 but
  // no usable AMX (Cooper Lake; Sapphire Rapids where the OS or hypervisor hides AMX) issue
  // VDPBF16PS at half the 512-bit FMA rate, the same multiply-adds per cycle as f32, and oneDNN
  // 2.6's avx512_core_bf16 kernel measured 0.58x of its f32 kernel there (docs/cpu-device.md).
  bool nativeBf16() const { return amx_bf16 || (avx512_bf16 && amd); }

  // Whether one bf16 GEMM of `flops` (2·M·N·K over all batches) runs natively. On those Intel
  // cores, small GEMMs still do: they are bound by memory traffic, not multiply-adds, so the native
  // kernel is as fast as widening and needs no f32 copies of the operands in scratch; from
  // kWidenedBf16MinFlops on, the f32 kernel's rate pays for the widening (measured 20-30% faster).
  static constexpr double kWidenedBf16MinFlops = 64.0 * 1024 * 1024;
  bool nativeBf16Gemm(double flops) const {
    return nativeBf16() || (avx512_bf16 && flops < kWidenedBf16MinFlops);
  }

  // Space-separated list of the GEMM-relevant features present, in a fixed order, e.g.
  // "avx2 fma f16c avx512f avx512bw avx512vl avx512_bf16 amx_tile amx_bf16"; "none" if none.
  std::string summary() const;

  // psABI micro-architecture level: "x86-64-v4" (v3 + avx512f/bw/cd/dq/vl), "x86-64-v3" (avx,
  // avx2, bmi1, bmi2, f16c, fma, lzcnt, movbe), else "x86-64".
  std::string isaLevel() const;

  // This copy with every feature above `level` cleared; a mask only lowers, it never adds what the
  // machine lacks. Levels, lowest first: "x86-64" (no AVX), "x86-64-v3" (AVX2, no AVX-512),
  // "x86-64-v4" (AVX-512 without bf16/fp16 or AMX), "avx512_bf16" (no AMX), "host" (unchanged).
  // False, and this copy unchanged, for any other name.
  bool lowerTo(const std::string& level);

  // The levels lowerTo accepts, lowest first, for messages: "x86-64, x86-64-v3, ...".
  static const std::string& levels();

  // Features of the machine this process runs on, as detected. Detected once (thread-safe static
  // initialisation); on Linux this also requests AMX tile-data permission for the process.
  static const CpuFeatures& detected();

  // What the cpu device uses: detected(), lowered to the level in the environment variable
  // AMP_CPU_FEATURES when it is set (read once). An unknown level leaves detected() in force and
  // is reported by maskError().
  static const CpuFeatures& host();

  // Empty when AMP_CPU_FEATURES is unset or names a level; otherwise the message the cpu device
  // refuses to start with (an unknown level must not silently test the wrong code path).
  static const std::string& maskError();

  // The level AMP_CPU_FEATURES named; empty when it is unset or unknown.
  static const std::string& maskLevel();
};

}  // namespace amp::rt

#endif  // AMP_RUNTIME_SCHEMA_CPUFEATURES_H
