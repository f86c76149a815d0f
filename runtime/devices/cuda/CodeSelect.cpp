#include "runtime/devices/cuda/CodeSelect.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace amp::rt::cuda {
namespace {

// "sm_90" -> (9, 0); false when it is not sm_<major><minor>.
bool parseArch(const std::string& isa, int& major, int& minor) {
  if (isa.size() < 5 || isa.compare(0, 3, "sm_") != 0) return false;
  for (size_t i = 3; i < isa.size(); ++i)
    if (isa[i] < '0' || isa[i] > '9') return false;
  const int n = std::atoi(isa.c_str() + 3);
  major = n / 10;
  minor = n % 10;
  return major > 0;
}

}  // namespace

int parseCudaVersion(const std::string& text) {
  const size_t dot = text.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 >= text.size() || text.size() > 8) return 0;
  for (size_t i = 0; i < text.size(); ++i)
    if (i != dot && (text[i] < '0' || text[i] > '9')) return 0;
  return 1000 * std::atoi(text.substr(0, dot).c_str()) + 10 * std::atoi(text.substr(dot + 1).c_str());
}

std::string cudaVersionString(int version) { return absl::StrCat(version / 1000, ".", version % 1000 / 10); }

absl::StatusOr<CodeChoice> selectCudaCode(const Plan& plan, const GpuInfo& gpu) {
  const std::string gpuArch = absl::StrCat("sm_", gpu.ccMajor, gpu.ccMinor);
  auto config = plan.trainingConfig();
  const int toolkit = config.ok() ? parseCudaVersion(config->cudaToolkit) : 0;
  if (toolkit == 0)
    return absl::FailedPreconditionError(
        "the bundle records no CUDA toolkit version (metadata \"cuda_toolkit\"); it was not compiled for a cuda "
        "target by this ampc: recompile it with --target=cuda:" + gpuArch);
  const CodeObject* cubin = nullptr;
  const CodeObject* ptx = nullptr;
  int cubinMinor = -1, ptxArch = -1;
  std::string compiled;
  for (const CodeObject& code : plan.code) {
    int major = 0, minor = 0;
    if (!parseArch(code.isa, major, minor)) continue;
    if (code.format != "cubin" && code.format != "ptx") continue;
    absl::StrAppend(&compiled, compiled.empty() ? "" : ", ", code.isa, " ", code.format);
    const int arch = 10 * major + minor;
    if (code.format == "cubin" && major == gpu.ccMajor && minor <= gpu.ccMinor && minor > cubinMinor) {
      cubin = &code;
      cubinMinor = minor;
    }
    if (code.format == "ptx" && arch <= 10 * gpu.ccMajor + gpu.ccMinor && arch > ptxArch) {
      ptx = &code;
      ptxArch = arch;
    }
  }
  if (compiled.empty())
    return absl::FailedPreconditionError("the bundle carries no CUDA code (it was compiled for a cpu target); "
                                         "recompile it with --target=cuda:" + gpuArch);
  const std::string driver = cudaVersionString(gpu.driverVersion);
  CodeChoice choice;
  if (cubin && gpu.driverVersion / 1000 >= toolkit / 1000) {
    choice.object = cubin;
    choice.summary = cubin->isa + " cubin";
    return choice;
  }
  if (ptx && gpu.driverVersion >= toolkit) {
    choice.object = ptx;
    choice.jit = true;
    choice.summary = absl::StrCat(ptx->isa, " PTX, JIT-compiled for ", gpuArch);
    return choice;
  }
  if (cubin || ptx) {
    // A cubin runs on any driver of its CUDA major release; PTX needs the release itself.
    const int needed = cubin ? toolkit / 1000 * 1000 : toolkit;
    return absl::FailedPreconditionError(absl::StrCat(
        "the NVIDIA driver supports CUDA ", driver, ", older than the CUDA ", cudaVersionString(toolkit),
        " this bundle was compiled with (", compiled, "): update the driver to one for CUDA ",
        cudaVersionString(needed), " or newer"));
  }
  return absl::FailedPreconditionError(absl::StrCat("this GPU (", gpu.name, ", ", gpuArch,
                                                    ") cannot run the bundle's code (", compiled,
                                                    "): recompile with --target=cuda:", gpuArch));
}

}  // namespace amp::rt::cuda
