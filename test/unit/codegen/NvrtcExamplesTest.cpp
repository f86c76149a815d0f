// Every CUDA kernel ampc generates for the examples (mlp, transformer_lm; trained in f32, bf16
// and f16 with fusion on; sources written by `ampc --emit=cuda` at build time) compiles with NVRTC
// for sm_80 and sm_90 into a cubin and PTX that defines each kernel, and ptxas accepts the PTX.
// Needs the CUDA toolkit, not a GPU: skipped when this build has no NVRTC or ptxas.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>

#include "codegen/CudaToolchain.h"
#include "gtest/gtest.h"

namespace amp::codegen {
namespace {

struct Case {
  std::string model, precision, arch;
};

std::string readFile(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.model << " " << c.precision << " " << c.arch; }

class NvrtcExamples : public ::testing::TestWithParam<Case> {};

TEST_P(NvrtcExamples, EveryKernelCompilesAndPassesPtxas) {
  if (!haveNvrtc()) GTEST_SKIP() << "built without the CUDA toolkit";
  const std::string ptxas = AMP_TEST_PTXAS;
  if (ptxas.empty() || access(ptxas.c_str(), X_OK) != 0) GTEST_SKIP() << "no ptxas";
  const Case& c = GetParam();
  const std::string source = readFile(std::string(AMP_TEST_CUDA_SOURCE_DIR) + "/" + c.model + "_" + c.precision + ".cu");
  ASSERT_FALSE(source.empty());
  std::set<std::string> kernels;
  const std::regex kernel(R"(extern "C" __global__ void __launch_bounds__\(256\) (\w+)\()");
  for (auto it = std::sregex_iterator(source.begin(), source.end(), kernel); it != std::sregex_iterator(); ++it)
    kernels.insert((*it)[1]);
  ASSERT_FALSE(kernels.empty()) << "the fused training step has no kernels";

  CudaCode code;
  std::string error;
  ASSERT_TRUE(compileCuda(source, c.model + "_" + c.precision + ".cu", c.arch, code, error)) << error;
  EXPECT_EQ(code.arch, c.arch);
  ASSERT_GE(code.cubin.size(), 4u);
  EXPECT_EQ(std::string(code.cubin.begin(), code.cubin.begin() + 4), "\x7f" "ELF");
  EXPECT_NE(code.ptx.find(".target " + c.arch), std::string::npos);
  for (const std::string& k : kernels)
    EXPECT_NE(code.ptx.find(".visible .entry " + k + "("), std::string::npos) << k << " is not in the PTX";
  // Every example is compiled for training, so its code object carries the device's loss-scaling
  // and optimizer kernels (runtime/kernels/cuda/TrainKernels.cu), by gradient type and
  // low-precision copy.
  std::vector<std::string> library = {"amp_global_norm",          "amp_mt_clip",
                                      "amp_step_counters_kernel", "amp_lr_schedule_kernel",
                                      "amp_update_scale_kernel",  "amp_optimizer_scalars",
                                      "amp_mt_sum_squares_f32",   "amp_cross_entropy_count_i64",
                                      "amp_cross_entropy_count_i32"};
  for (const char* t : {"f32", "bf16", "f16", "f32_bf16", "f32_f16"})  // amp.softmax_grad by y's and dy's types
    library.push_back(std::string("amp_softmax_grad_") + t);
  for (const char* g : {"f32", "bf16", "f16"}) {
    library.push_back(std::string("amp_mt_unscale_check_") + g);
    for (const char* op : {"sum", "mean", "max"}) library.push_back(std::string("amp_reduce_") + op + "_" + g);
    for (const char* labels : {"i64", "i32"}) {
      library.push_back(std::string("amp_cross_entropy_") + g + "_" + labels);
      library.push_back(std::string("amp_cross_entropy_mean_") + g + "_" + labels);
      library.push_back(std::string("amp_cross_entropy_grad_") + g + "_" + labels);
    }
    for (const char* copy : {"none", "bf16", "f16"})
      for (const char* kind : {"adam", "sgd"}) library.push_back(std::string("amp_mt_") + kind + "_" + g + "_" + copy);
  }
  for (const std::string& k : library)
    EXPECT_NE(code.ptx.find(".visible .entry " + k + "("), std::string::npos) << k << " is not in the PTX";
  // The vector paths become 128-bit accesses. The MLP has none: its forward epilogues live in the
  // GEMMs, and its fused backward kernels end in bias gradients (column kernels).
  const bool vectorStores = source.find("((uint4*)out") != std::string::npos;
  if (c.model == "transformer_lm") {
    EXPECT_TRUE(vectorStores) << "no kernel of the transformer is vectorised";
  }
  if (vectorStores) {
    EXPECT_NE(code.ptx.find("st.global.v4"), std::string::npos) << "no 16-byte store in the PTX";
  }

  char path[] = "/tmp/amp-nvrtc-XXXXXX.ptx";
  const int fd = mkstemps(path, 4);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, code.ptx.data(), code.ptx.size()), static_cast<ssize_t>(code.ptx.size()));
  close(fd);
  const std::string command = ptxas + " -arch=" + c.arch + " " + path + " -o /dev/null 2>&1";
  const int status = std::system(command.c_str());
  unlink(path);
  EXPECT_EQ(status, 0) << command;
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (const char* model : {"mlp", "transformer_lm"})
    for (const char* precision : {"f32", "bf16", "f16"})
      for (const char* arch : {"sm_80", "sm_90"}) all.push_back({model, precision, arch});
  return all;
}

INSTANTIATE_TEST_SUITE_P(Examples, NvrtcExamples, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.model + "_" + info.param.precision + "_" + info.param.arch;
                         });

TEST(Nvrtc, CompileErrorsCarryTheLocatedLog) {
  if (!haveNvrtc()) GTEST_SKIP() << "built without the CUDA toolkit";
  CudaCode code;
  std::string error;
  EXPECT_FALSE(compileCuda("extern \"C\" __global__ void k() {\n  undeclared_name = 1;\n}\n", "broken.cu", "sm_90",
                           code, error));
  EXPECT_NE(error.find("NVRTC (sm_90)"), std::string::npos) << error;
  EXPECT_NE(error.find("broken.cu(2)"), std::string::npos) << error;  // file and line of the error
  EXPECT_NE(error.find("undeclared_name"), std::string::npos) << error;
  EXPECT_FALSE(compileCuda("", "empty.cu", "sm_75", code, error));
  EXPECT_NE(error.find("unsupported CUDA architecture 'sm_75'"), std::string::npos) << error;
}

TEST(Nvrtc, OptionsKeepTheNumericsOfTheOtherDevices) {
  const std::vector<std::string> options = nvrtcOptions("sm_80");
  auto has = [&](const char* o) { return std::find(options.begin(), options.end(), o) != options.end(); };
  EXPECT_TRUE(has("--gpu-architecture=sm_80"));
  EXPECT_TRUE(has("--fmad=false"));
  EXPECT_TRUE(has("--ftz=false"));
  EXPECT_TRUE(has("--prec-div=true"));
  EXPECT_TRUE(has("--prec-sqrt=true"));
}

}  // namespace
}  // namespace amp::codegen
