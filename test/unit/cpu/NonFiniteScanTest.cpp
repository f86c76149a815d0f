// The found_inf check on the bits (NonFiniteScan.h) against std::isfinite of the widened value:
// every bf16 and f16 pattern, f32 specials (NaN payloads, +-inf, -0, the largest finite,
// subnormals) at every position of odd-sized runs; and amp.grad_stats without a norm result on the
// cpu device against the reference, with the non-finite value on either side of a piece boundary.
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "runtime/devices/Devices.h"
#include "runtime/devices/cpu/kernels/NonFiniteScan.h"
#include "runtime/exec/Session.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt {
namespace {

bool widenedNonFinite(DType t, const uint8_t* data, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float v;
    convertBuffer(t, data + i * static_cast<int64_t>(dtypeSize(t)), DType::F32, &v, 1);
    if (!std::isfinite(v)) return true;
  }
  return false;
}

TEST(NonFiniteScan, EverySixteenBitPatternAsTheWidenedValueSays) {
  for (DType t : {DType::BF16, DType::F16}) {
    for (uint32_t p = 0; p < 65536; ++p) {
      const uint16_t h = static_cast<uint16_t>(p);
      uint8_t run[2 * 7] = {};  // finite zeros around it: the pattern at element 3 of 7
      std::memcpy(run + 6, &h, 2);
      ASSERT_EQ(cpu::anyNonFinite(t, run, 7), widenedNonFinite(t, run, 7)) << dtypeName(t) << " pattern " << p;
    }
  }
}

TEST(NonFiniteScan, FloatSpecialsAtEveryPositionOfOddRuns) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  uint32_t payloadNan = 0xffc00123u, signalling = 0x7f800001u;
  float payload, snan;
  std::memcpy(&payload, &payloadNan, 4);
  std::memcpy(&snan, &signalling, 4);
  const float specials[] = {nan, -nan, payload, snan, inf, -inf, -0.0f, 0.0f, std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(), 1.0f};
  std::mt19937 rng(5);
  std::normal_distribution<float> value(0.0f, 1e30f);
  for (int64_t n : {1, 3, 17, 2047, 2048, 2049, 4097}) {
    std::vector<float> run(static_cast<size_t>(n));
    for (float& v : run) v = value(rng);
    const uint8_t* bytes = reinterpret_cast<const uint8_t*>(run.data());
    EXPECT_FALSE(cpu::anyNonFinite(DType::F32, bytes, n)) << n;
    for (float special : specials)
      for (int64_t at : {int64_t{0}, n / 2, n - 1}) {
        const float kept = run[static_cast<size_t>(at)];
        run[static_cast<size_t>(at)] = special;
        EXPECT_EQ(cpu::anyNonFinite(DType::F32, bytes, n), !std::isfinite(special)) << n << " at " << at << " " << special;
        run[static_cast<size_t>(at)] = kept;
      }
  }
}

// amp.grad_stats with only found_inf: gradients of three types, the f32 one spanning several of
// the check's pieces (so the threads split it), one bad element placed per case.
Plan checkOnlyPlan(const std::vector<std::pair<DType, Shape>>& grads) {
  Plan plan;
  EntryPoint entry;
  std::vector<int32_t> in;
  for (size_t i = 0; i < grads.size(); ++i) {
    plan.buffers.push_back({"g" + std::to_string(i), grads[i].first, grads[i].second, BufferKind::Input, std::nullopt});
    in.push_back(static_cast<int32_t>(i));
  }
  plan.buffers.push_back({"found_inf", DType::F32, {}, BufferKind::Temp, std::nullopt});
  const int32_t found = static_cast<int32_t>(plan.buffers.size() - 1);
  AttrMap attrs;
  attrs.set("unscales", false);
  entry.steps.push_back(PlanStep{"amp.grad_stats", in, {found}, attrs, "stats.mlir:1:1"});
  entry.results.push_back(found);
  entry.resultNames.push_back("found_inf");
  entry.name = "eval";
  plan.entries.push_back(std::move(entry));
  return plan;
}

TEST(NonFiniteScan, GradStatsWithoutANormMatchesTheReference) {
  const std::vector<std::pair<DType, Shape>> grads = {
      {DType::BF16, {300, 70}}, {DType::F32, {3, 40000}}, {DType::F16, {33, 5}}, {DType::F32, {7}}};
  const Plan plan = checkOnlyPlan(grads);
  struct Bad {
    size_t tensor;
    int64_t at;
    float value;
  };
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  // Tensor 9 (none): every gradient finite. f32 tensor 1: the first and last element, and both
  // sides of the 32768-element piece boundary.
  const Bad cases[] = {{9, 0, 0.0f},          {1, 0, nan},        {1, 32767, inf}, {1, 32768, -inf},
                       {1, 119999, nan},      {0, 20999, -inf},   {2, 0, nan},     {2, 164, inf},
                       {3, 6, -nan},          {1, 65536, -0.0f}};
  for (const Bad& bad : cases) {
    SCOPED_TRACE("tensor " + std::to_string(bad.tensor) + " element " + std::to_string(bad.at) + " = " +
                 std::to_string(bad.value));
    std::map<std::string, Tensor> feeds;
    std::mt19937 rng(3);
    std::normal_distribution<float> value(0.0f, 100.0f);
    for (size_t i = 0; i < grads.size(); ++i) {
      Tensor g32(DType::F32, grads[i].second);
      for (int64_t k = 0; k < g32.numel(); ++k) g32.as<float>()[k] = value(rng);
      if (i == bad.tensor) g32.as<float>()[bad.at] = bad.value;
      Tensor g(grads[i].first, grads[i].second);
      convertBuffer(DType::F32, g32.data(), g.dtype(), g.data(), g.numel());
      feeds.emplace("g" + std::to_string(i), std::move(g));
    }
    std::vector<Tensor> found;
    for (Device device : {Device::Reference, Device::Cpu}) {
      auto session = openSession(plan, device);
      ASSERT_TRUE(session.ok()) << session.status();
      auto out = session->run("eval", feeds);
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->size(), 1u);
      found.push_back(std::move((*out)[0].tensor));
    }
    EXPECT_EQ(found[0].as<float>()[0], std::isfinite(bad.value) ? 0.0f : 1.0f);
    EXPECT_TRUE(found[1].bitwiseEquals(found[0]));
  }
}

}  // namespace
}  // namespace amp::rt
