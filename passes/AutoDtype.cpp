// The auto dtype: which low precision (if any) a target computes faster in (AutoDtype.h).
#include "passes/AutoDtype.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"
#include "mlir/Support/LLVM.h"
#include "runtime/schema/CpuFeatures.h"

using namespace mlir;
using namespace mlir::amp;

//===----------------------------------------------------------------------===//
// Targets and auto dtype
//===----------------------------------------------------------------------===//

FailureOr<mlir::amp::AutoDtype> mlir::amp::autoDtypeFor(StringRef target, std::string& why,
                                                     std::string& error) {
  if (target == "reference") {
    why = "target 'reference' emulates bf16 exactly";
    return AutoDtype::BF16;
  }
  if (target.consume_front("cuda:")) {
    unsigned sm = 0;
    if (!target.consume_front("sm_") || target.getAsInteger(10, sm)) {
      error = ("bad CUDA target 'cuda:" + target + "' (expected cuda:sm_NN, e.g. cuda:sm_80)").str();
      return failure();
    }
    if (sm >= 80) {
      why = ("cuda:sm_" + Twine(sm) + " has bf16 tensor cores (sm_80 and newer)").str();
      return AutoDtype::BF16;
    }
    why = ("cuda:sm_" + Twine(sm) + " has no bf16 tensor cores (needs sm_80); using f16").str();
    return AutoDtype::F16;
  }
  if (target == "cpu") {
    // The cpu device's own detection and rule for native bf16 GEMMs, so the two cannot disagree.
    if (const std::string& bad = ::amp::rt::CpuFeatures::maskError(); !bad.empty()) {
      error = "--target=cpu: " + bad;
      return failure();
    }
    const ::amp::rt::CpuFeatures& host = ::amp::rt::CpuFeatures::host();
    const bool avx = host.avx512_bf16, amx = host.amx_bf16, amd = host.amd;
    if (amx) {
      why = "cpu: the compiling machine has amx_bf16, so bf16 GEMMs run on AMX tiles";
      return AutoDtype::BF16;
    }
    if (avx && amd) {
      why = "cpu: the compiling machine has avx512_bf16 on an AMD core, whose bf16 dot products do twice "
            "the multiply-adds of f32 FMA";
      return AutoDtype::BF16;
    }
    if (avx) {
      why = "cpu: the compiling machine has avx512_bf16 but no amx_bf16; on Intel cores its bf16 dot "
            "product does no more multiply-adds per cycle than f32 FMA, so bf16 GEMMs run no faster than "
            "f32 ones (the cpu device widens the large ones to f32) and bf16 would only add "
            "conversions: f32 is faster";
      return AutoDtype::F32;
    }
    why = "cpu: the compiling machine has neither avx512_bf16 nor amx_bf16, so no low-precision compute "
          "units; f16 would only add conversions and loss scaling, so f32 is faster and safer";
    return AutoDtype::F32;
  }
  if (target.consume_front("cpu:")) {
    SmallVector<StringRef> features;
    target.split(features, ',', -1, false);
    bool bf16 = false;
    std::string found;
    for (StringRef f : features) {
      f = f.trim();
      bool negated = f.consume_front("-");
      f.consume_front("+");
      if (f != "avx512_bf16" && f != "amx_bf16" && f != "generic") {
        error = ("unknown cpu feature '" + f + "' (expected avx512_bf16, amx_bf16 or generic)").str();
        return failure();
      }
      if (f != "generic" && !negated) {
        bf16 = true;
        found = f.str();
      }
    }
    why = bf16 ? "cpu feature " + found + " supports bf16"
               : std::string("cpu features name no bf16 support, so no low-precision compute units; f16 "
                             "would only add conversions and loss scaling, so f32 is faster and safer");
    return bf16 ? AutoDtype::BF16 : AutoDtype::F32;
  }
  error = ("unknown target '" + target +
           "' (expected cpu, cpu:FEATURES, cuda:sm_NN or reference)")
              .str();
  return failure();
}
