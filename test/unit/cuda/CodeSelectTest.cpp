// Which code object of a cuda bundle a GPU runs (runtime/devices/cuda/CodeSelect.h): SASS
// compatibility within a major architecture, PTX JIT for newer GPUs, and the driver's CUDA
// release against the bundle's. Host logic, tested without a GPU.
#include "gtest/gtest.h"
#include "runtime/devices/cuda/CodeSelect.h"

namespace amp::rt::cuda {
namespace {

Plan cudaPlan(const std::string& arch, const std::string& toolkit = "13.0") {
  Plan plan;
  plan.metadata = {{"target", "cuda:" + arch}, {"cuda_toolkit", toolkit}};
  CodeObject cubin, ptx;
  cubin.isa = ptx.isa = arch;
  cubin.format = "cubin";
  ptx.format = "ptx";
  plan.code = {cubin, ptx};
  return plan;
}

GpuInfo gpu(int major, int minor, int driver = 13000) {
  GpuInfo g;
  g.name = "test GPU";
  g.ccMajor = major;
  g.ccMinor = minor;
  g.driverVersion = driver;
  return g;
}

TEST(CudaCodeSelect, CubinOnItsOwnArchitectureAndNewerMinors) {
  const Plan sm80 = cudaPlan("sm_80");
  for (auto [major, minor] : {std::pair{8, 0}, std::pair{8, 6}, std::pair{8, 9}}) {
    auto c = selectCudaCode(sm80, gpu(major, minor));
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_FALSE(c->jit);
    EXPECT_EQ(c->object->format, "cubin");
    EXPECT_EQ(c->summary, "sm_80 cubin");
  }
  const Plan sm90 = cudaPlan("sm_90");
  auto h200 = selectCudaCode(sm90, gpu(9, 0));
  ASSERT_TRUE(h200.ok());
  EXPECT_EQ(h200->summary, "sm_90 cubin");
}

TEST(CudaCodeSelect, PtxForANewerMajorArchitecture) {
  const Plan sm80 = cudaPlan("sm_80");  // the choice points into it (the sanitizer caught a temporary here)
  auto c = selectCudaCode(sm80, gpu(9, 0));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->jit);
  EXPECT_EQ(c->object->format, "ptx");
  EXPECT_EQ(c->summary, "sm_80 PTX, JIT-compiled for sm_90");
}

TEST(CudaCodeSelect, OlderGpusAreRefusedWithTheFix) {
  const Plan plan = cudaPlan("sm_90");
  auto c = selectCudaCode(plan, gpu(8, 0));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "this GPU (test GPU, sm_80) cannot run the bundle's code (sm_90 cubin, sm_90 ptx): recompile with "
            "--target=cuda:sm_80");
}

TEST(CudaCodeSelect, OldDriversAreRefusedWithTheRelease) {
  // CUDA 12.4 driver, 13.0 bundle: neither the cubin (major 13) nor the PTX runs.
  const Plan plan = cudaPlan("sm_90");
  auto c = selectCudaCode(plan, gpu(9, 0, 12040));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("supports CUDA 12.4, older than the CUDA 13.0"), std::string::npos)
      << c.status();
  // A 13.0 driver runs a 13.2 bundle's cubin (minor version compatibility) but not its PTX.
  const Plan minorPlan = cudaPlan("sm_90", "13.2");
  auto minor = selectCudaCode(minorPlan, gpu(9, 0, 13000));
  ASSERT_TRUE(minor.ok()) << minor.status();
  EXPECT_FALSE(minor->jit);
  const Plan jitPlan = cudaPlan("sm_80", "13.2");
  auto jit = selectCudaCode(jitPlan, gpu(9, 0, 13000));
  ASSERT_FALSE(jit.ok());
  EXPECT_NE(jit.status().message().find("update the driver to one for CUDA 13.2 or newer"), std::string::npos)
      << jit.status();
}

TEST(CudaCodeSelect, BundlesWithoutCudaCode) {
  Plan cpu;
  cpu.metadata = {{"cuda_toolkit", "13.0"}};
  CodeObject so;
  so.isa = "x86-64-v3";
  cpu.code = {so};
  auto c = selectCudaCode(cpu, gpu(9, 0));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("compiled for a cpu target"), std::string::npos);
  const Plan noToolkitPlan = cudaPlan("sm_90", "");
  auto noToolkit = selectCudaCode(noToolkitPlan, gpu(9, 0));
  ASSERT_FALSE(noToolkit.ok());
  EXPECT_NE(noToolkit.status().message().find("cuda_toolkit"), std::string::npos);
}

TEST(CudaCodeSelect, VersionStrings) {
  EXPECT_EQ(parseCudaVersion("13.0"), 13000);
  EXPECT_EQ(parseCudaVersion("12.4"), 12040);
  EXPECT_EQ(parseCudaVersion("12"), 0);
  EXPECT_EQ(parseCudaVersion("x.1"), 0);
  EXPECT_EQ(parseCudaVersion(".1"), 0);
  EXPECT_EQ(cudaVersionString(12040), "12.4");
}

}  // namespace
}  // namespace amp::rt::cuda
