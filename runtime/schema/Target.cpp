#include "runtime/schema/Target.h"

#include <charconv>

namespace amp::rt {
namespace {

bool consumePrefix(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// "cpu:" followed by comma-separated features, each optionally prefixed by '+' or '-'.
bool parseCpuFeatures(std::string_view list, CpuFeatures& out, std::string& error) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view f = trim(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (f.empty()) continue;
    const bool on = !consumePrefix(f, "-");
    consumePrefix(f, "+");
    if (f == "avx512_bf16") {
      out.avx512_bf16 = on;
    } else if (f == "amx_bf16") {
      out.amx_bf16 = out.amx_tile = on;
    } else if (f == "amd") {
      out.amd = on;
    } else if (f != "generic") {
      error = "unknown cpu feature '" + std::string(f) + "' (expected avx512_bf16, amx_bf16, amd or generic)";
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<Target> Target::parse(std::string_view spec, std::string& error) {
  Target t;
  std::string_view rest = spec;
  if (spec == "reference") {
    t.kind = TargetKind::Reference;
    return t;
  }
  if (spec == "cpu") {
    if (!CpuFeatures::maskError().empty()) {
      error = "--target=cpu: " + CpuFeatures::maskError();
      return std::nullopt;
    }
    t.hostCpu = true;
    t.cpu = CpuFeatures::host();
    return t;
  }
  if (consumePrefix(rest, "cpu:")) {
    if (!parseCpuFeatures(rest, t.cpu, error)) return std::nullopt;
    return t;
  }
  if (consumePrefix(rest, "cuda:")) {
    t.kind = TargetKind::Cuda;
    int sm = 0;
    const bool named = consumePrefix(rest, "sm_");
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), sm);
    if (!named || rest.empty() || ec != std::errc() || end != rest.data() + rest.size() || sm < 10) {
      error = "bad CUDA target '" + std::string(spec) + "' (expected cuda:sm_NN, e.g. cuda:sm_80)";
      return std::nullopt;
    }
    t.sm = sm;
    return t;
  }
  error = "unknown target '" + std::string(spec) + "' (expected cpu, cpu:FEATURES, cuda:sm_NN or reference)";
  return std::nullopt;
}

AutoDtype autoDtypeFor(const Target& target, std::string& why) {
  switch (target.kind) {
    case TargetKind::Reference:
      why = "target 'reference' emulates bf16 exactly";
      return AutoDtype::BF16;
    case TargetKind::Cuda:
      if (target.sm >= 80) {
        why = "cuda:" + target.cudaArch() + " has bf16 tensor cores (sm_80 and newer)";
        return AutoDtype::BF16;
      }
      why = "cuda:" + target.cudaArch() + " has no bf16 tensor cores (needs sm_80); using f16";
      return AutoDtype::F16;
    case TargetKind::Cpu: break;
  }
  // One rule for the host and for a named CPU: the cpu device's own (CpuFeatures::nativeBf16).
  const CpuFeatures& f = target.cpu;
  const std::string who = target.hostCpu ? "cpu: the compiling machine has " : "cpu: the target has ";
  if (f.amx_bf16) {
    why = who + "amx_bf16, so bf16 GEMMs run on AMX tiles";
    return AutoDtype::BF16;
  }
  if (f.avx512_bf16 && f.amd) {
    why = who + "avx512_bf16 on an AMD core, whose bf16 dot products do twice the multiply-adds of f32 FMA";
    return AutoDtype::BF16;
  }
  if (f.avx512_bf16) {
    why = who + "avx512_bf16 but no amx_bf16" + (target.hostCpu ? "" : " and is not an AMD core (name amd for one)") +
          "; on Intel cores its bf16 dot product does no more multiply-adds per cycle than f32 FMA, so bf16 "
          "GEMMs run no faster than f32 ones (the cpu device widens the large ones to f32) and bf16 would "
          "only add conversions: f32 is faster";
    return AutoDtype::F32;
  }
  why = who + "neither avx512_bf16 nor amx_bf16, so no low-precision compute units; f16 would only add "
              "conversions and loss scaling, so f32 is faster and safer";
  return AutoDtype::F32;
}

}  // namespace amp::rt
