#include "runtime/plan/Init.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "runtime/numerics/Philox.h"

namespace amp::rt {
namespace {

// Two independent uniforms in (0, 1] / [0, 1) for element i.
std::array<uint32_t, 4> bitsFor(int64_t seed, int64_t index) {
  uint64_t s = static_cast<uint64_t>(seed), i = static_cast<uint64_t>(index);
  // Counter word 3 = 0x1417 separates this stream from dropout's (which uses the step there).
  uint32_t key[2] = {static_cast<uint32_t>(s), static_cast<uint32_t>(s >> 32)};
  uint32_t counter[4] = {static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), 0u, 0x1417u};
  return philox4x32_10(key, counter);
}

double uniform01(uint32_t bits) { return uniformFromBits(bits); }

double standardNormal(int64_t seed, int64_t index) {
  auto b = bitsFor(seed, index);
  double u1 = 1.0 - uniform01(b[0]);  // (0, 1]: log is finite
  double u2 = uniform01(b[1]);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

double symmetricUniform(int64_t seed, int64_t index) {  // U(-1, 1)
  return 2.0 * uniform01(bitsFor(seed, index)[0]) - 1.0;
}

}  // namespace

std::pair<int64_t, int64_t> computeFans(const Shape& shape) {
  if (shape.empty()) return {1, 1};
  if (shape.size() == 1) return {shape[0], shape[0]};
  if (shape.size() == 2) return {shape[0], shape[1]};
  int64_t receptive = 1;
  for (size_t i = 2; i < shape.size(); ++i) receptive *= shape[i];
  return {shape[1] * receptive, shape[0] * receptive};
}

absl::StatusOr<Tensor> initializeParam(const InitSpec& spec, const Shape& shape) {
  if (spec.kind == "stored") {
    if (!spec.stored || spec.stored->dtype() != DType::F32 || spec.stored->shape() != shape)
      return absl::InvalidArgumentError(absl::StrCat("stored initial values must be f32 ", shapeToString(shape)));
    return *spec.stored;
  }
  Tensor t(DType::F32, shape);
  float* out = t.as<float>();
  int64_t n = t.numel();
  auto [fanIn, fanOut] = computeFans(shape);
  auto fillUniform = [&](double bound) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(bound * symmetricUniform(spec.seed, i));
  };
  auto fillNormal = [&](double stddev) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(stddev * standardNormal(spec.seed, i));
  };
  const std::string& k = spec.kind;
  if (k == "zeros") {
  } else if (k == "ones") {
    for (int64_t i = 0; i < n; ++i) out[i] = 1.0f;
  } else if (k == "constant") {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(spec.scale);
  } else if (k == "normal") {
    fillNormal(spec.scale);
  } else if (k == "uniform") {
    fillUniform(spec.scale);
  } else if (k == "xavier_uniform") {
    fillUniform(spec.scale * std::sqrt(6.0 / static_cast<double>(fanIn + fanOut)));
  } else if (k == "xavier_normal") {
    fillNormal(spec.scale * std::sqrt(2.0 / static_cast<double>(fanIn + fanOut)));
  } else if (k == "kaiming_uniform") {  // ReLU gain sqrt(2): bound = gain * sqrt(3 / fan_in)
    fillUniform(spec.scale * std::sqrt(6.0 / static_cast<double>(fanIn)));
  } else if (k == "kaiming_normal") {
    fillNormal(spec.scale * std::sqrt(2.0 / static_cast<double>(fanIn)));
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown initialiser kind '", k, "'"));
  }
  return t;
}

}  // namespace amp::rt
