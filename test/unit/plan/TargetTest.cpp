// The typed target (runtime/schema/Target.h): every spelling ampc accepts, the refusals, and the auto
// dtype rule, which must give a named CPU the same answer as a host with the same features.
#include "runtime/schema/Target.h"

#include <gtest/gtest.h>

namespace amp::rt {
namespace {

Target parsed(const std::string& spec) {
  std::string error;
  auto t = Target::parse(spec, error);
  EXPECT_TRUE(t.has_value()) << spec << ": " << error;
  return t.value_or(Target{});
}

std::string refusal(const std::string& spec) {
  std::string error;
  EXPECT_FALSE(Target::parse(spec, error).has_value()) << spec;
  return error;
}

AutoDtype autoOf(const Target& t) {
  std::string why;
  AutoDtype d = autoDtypeFor(t, why);
  EXPECT_FALSE(why.empty());
  return d;
}

TEST(Target, ParsesEverySpelling) {
  EXPECT_EQ(parsed("reference").kind, TargetKind::Reference);
  Target sm90 = parsed("cuda:sm_90");
  EXPECT_TRUE(sm90.isCuda());
  EXPECT_EQ(sm90.sm, 90);
  EXPECT_EQ(sm90.cudaArch(), "sm_90");
  Target named = parsed("cpu:avx512_bf16,amd");
  EXPECT_TRUE(named.isCpu());
  EXPECT_FALSE(named.hostCpu);
  EXPECT_TRUE(named.cpu.avx512_bf16);
  EXPECT_TRUE(named.cpu.amd);
  EXPECT_FALSE(named.cpu.amx_bf16);
  Target removed = parsed("cpu:amx_bf16, -amx_bf16");
  EXPECT_FALSE(removed.cpu.amx_bf16);
  if (CpuFeatures::maskError().empty()) {
    Target host = parsed("cpu");
    EXPECT_TRUE(host.hostCpu);
    EXPECT_EQ(host.cpu.summary(), CpuFeatures::host().summary());
  }
}

TEST(Target, RefusesWhatItCannotName) {
  EXPECT_EQ(refusal("cuda:volta"), "bad CUDA target 'cuda:volta' (expected cuda:sm_NN, e.g. cuda:sm_80)");
  refusal("cuda:sm_");
  refusal("cuda:sm_90a");
  refusal("cuda:sm_-5");
  EXPECT_EQ(refusal("cpu:avx9"), "unknown cpu feature 'avx9' (expected avx512_bf16, amx_bf16, amd or generic)");
  EXPECT_EQ(refusal("tpu"), "unknown target 'tpu' (expected cpu, cpu:FEATURES, cuda:sm_NN or reference)");
  refusal("");
}

TEST(Target, AutoDtypeFollowsTheComputeUnits) {
  EXPECT_EQ(autoOf(parsed("reference")), AutoDtype::BF16);
  EXPECT_EQ(autoOf(parsed("cuda:sm_80")), AutoDtype::BF16);
  EXPECT_EQ(autoOf(parsed("cuda:sm_75")), AutoDtype::F16);
  EXPECT_EQ(autoOf(parsed("cpu:amx_bf16")), AutoDtype::BF16);
  EXPECT_EQ(autoOf(parsed("cpu:avx512_bf16,amd")), AutoDtype::BF16);
  EXPECT_EQ(autoOf(parsed("cpu:avx512_bf16")), AutoDtype::F32);
  EXPECT_EQ(autoOf(parsed("cpu:generic")), AutoDtype::F32);
}

// One rule for a host and for a named CPU with the same features: the cpu device's nativeBf16().
TEST(Target, NamedCpuAndHostAgree) {
  for (int bits = 0; bits < 8; ++bits) {
    Target host;
    host.hostCpu = true;
    host.cpu.avx512_bf16 = bits & 1;
    host.cpu.amx_bf16 = host.cpu.amx_tile = bits & 2;
    host.cpu.amd = bits & 4;
    Target named = host;
    named.hostCpu = false;
    EXPECT_EQ(autoOf(host), autoOf(named)) << bits;
    EXPECT_EQ(autoOf(host) == AutoDtype::BF16, host.cpu.nativeBf16()) << bits;
  }
}

}  // namespace
}  // namespace amp::rt
