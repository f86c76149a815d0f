#include "codegen/CudaToolchain.h"

#ifdef AMP_HAVE_CUDA
#include <nvrtc.h>
#endif

namespace amp::codegen {

bool isSupportedCudaArch(const std::string& arch) { return arch == "sm_80" || arch == "sm_90"; }

std::vector<std::string> nvrtcOptions(const std::string& arch) {
  return {
      "--gpu-architecture=" + arch,
      // One rounding per operation, as the reference executor and the cpu flavour's
      // -ffp-contract=off: NVRTC would otherwise contract a * b + c into an FMA.
      "--fmad=false",
      // NVRTC's defaults, spelled out because the kernels' bits depend on them: f32 subnormals
      // kept, division and square root correctly rounded.
      "--ftz=false",
      "--prec-div=true",
      "--prec-sqrt=true",
      "--std=c++17",
  };
}

#ifdef AMP_HAVE_CUDA

bool haveNvrtc() { return true; }

std::string nvrtcVersionString() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "";
  return std::to_string(major) + "." + std::to_string(minor);
}

namespace {

std::string programLog(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return "";
  log.resize(size - 1);  // the terminating NUL
  return log;
}

}  // namespace

bool compileCuda(const std::string& source, const std::string& name, const std::string& arch, CudaCode& code,
                 std::string& error) {
  if (!isSupportedCudaArch(arch)) {
    error = "unsupported CUDA architecture '" + arch + "' (sm_80 or sm_90)";
    return false;
  }
  nvrtcProgram program;
  nvrtcResult status = nvrtcCreateProgram(&program, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  if (status != NVRTC_SUCCESS) {
    error = std::string("NVRTC: cannot create the program: ") + nvrtcGetErrorString(status);
    return false;
  }
  const std::vector<std::string> options = nvrtcOptions(arch);
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  status = nvrtcCompileProgram(program, static_cast<int>(argv.size()), argv.data());
  if (status != NVRTC_SUCCESS) {
    error = "NVRTC (" + arch + "): compiling " + name + " failed: " + nvrtcGetErrorString(status) + "\n" +
            programLog(program);
    nvrtcDestroyProgram(&program);
    return false;
  }
  code.arch = arch;
  size_t ptxSize = 0, cubinSize = 0;
  bool ok = nvrtcGetPTXSize(program, &ptxSize) == NVRTC_SUCCESS && ptxSize > 1 &&
            nvrtcGetCUBINSize(program, &cubinSize) == NVRTC_SUCCESS && cubinSize > 0;
  if (ok) {
    code.ptx.assign(ptxSize, '\0');
    code.cubin.assign(cubinSize, 0);
    ok = nvrtcGetPTX(program, code.ptx.data()) == NVRTC_SUCCESS &&
         nvrtcGetCUBIN(program, reinterpret_cast<char*>(code.cubin.data())) == NVRTC_SUCCESS;
    code.ptx.resize(ptxSize - 1);  // the terminating NUL
  }
  nvrtcDestroyProgram(&program);
  if (!ok) error = "NVRTC (" + arch + "): " + name + " compiled but produced no PTX or cubin";
  return ok;
}

#else  // built without the CUDA toolkit

bool haveNvrtc() { return false; }

std::string nvrtcVersionString() { return ""; }

bool compileCuda(const std::string&, const std::string&, const std::string& arch, CudaCode&, std::string& error) {
  error = "this ampc was built without the CUDA toolkit (NVRTC), so it cannot compile kernels for " + arch;
  return false;
}

#endif

}  // namespace amp::codegen
