// The compilation target, typed: what `ampc --target=` and amp-autocast's `target=` name, parsed in
// one place, and the auto dtype rule (`--precision=auto`) that ampc and the devices share.
// Spellings (docs/precision-policy.md, "dtype=auto"):
//   reference                 the bit-exact reference executor
//   cpu                       the compiling machine's CPU, as the cpu device detects it
//   cpu:FEATURE[,FEATURE]     a named x86 CPU: avx512_bf16, amx_bf16, amd (the vendor), generic
//                             (none); "-FEATURE" removes one. For compiling on one machine for another.
//   cuda:sm_NN                an NVIDIA GPU of compute capability N.N
#ifndef AMP_RUNTIME_SCHEMA_TARGET_H
#define AMP_RUNTIME_SCHEMA_TARGET_H

#include <optional>
#include <string>
#include <string_view>

#include "runtime/schema/CpuFeatures.h"

namespace amp::rt {

enum class TargetKind { Reference, Cpu, Cuda };

struct Target {
  TargetKind kind = TargetKind::Cpu;
  // Cpu: the features the auto dtype rule reads. For plain "cpu", those of the compiling machine
  // (CpuFeatures::host(), so AMP_CPU_FEATURES lowers them as it does for the cpu device).
  bool hostCpu = false;
  CpuFeatures cpu;
  // Cuda: the compute capability as major*10 + minor (sm_90 -> 90).
  int sm = 0;

  // The target `spec` names, or nullopt with `error` set. Plain "cpu" reads the host's features
  // and fails when AMP_CPU_FEATURES names no level.
  static std::optional<Target> parse(std::string_view spec, std::string& error);

  bool isCpu() const { return kind == TargetKind::Cpu; }
  bool isCuda() const { return kind == TargetKind::Cuda; }
  // "sm_90" for a cuda target.
  std::string cudaArch() const { return "sm_" + std::to_string(sm); }
};

// The low precision that computes faster than f32 on the target, if any.
enum class AutoDtype { BF16, F16, F32 };
// bf16 where the target has bf16 compute units faster than f32 (CUDA sm_80+; CPUs where
// CpuFeatures::nativeBf16(): AMX, or AVX512-BF16 on AMD), f16 on CUDA GPUs without bf16, f32 on other
// CPUs (their bf16 GEMMs run widened to f32, so low precision only adds conversions, and for f16
// loss scaling). `why` explains the choice in one clause.
AutoDtype autoDtypeFor(const Target& target, std::string& why);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_SCHEMA_TARGET_H
