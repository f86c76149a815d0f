#include "runtime/plan/TrainingConfig.h"

#include <cmath>
#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace amp::rt {
namespace {

std::string exact(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

absl::Status bad(const std::string& key, const std::string& value, const std::string& expected) {
  return absl::InvalidArgumentError(
      absl::StrCat("bundle metadata '", key, "' is '", value, "'; expected ", expected));
}

bool oneOf(const std::string& v, std::initializer_list<const char*> allowed) {
  for (const char* a : allowed)
    if (v == a) return true;
  return false;
}

// An enum's keyword (runtime/schema/OpEnums.h's parser), or an error naming the key.
template <typename Enum, typename Parse>
absl::Status keyword(const std::string& key, const std::string& v, Parse parse, const std::string& expected,
                     Enum* out) {
  std::optional<Enum> parsed = parse(v);
  if (!parsed) return bad(key, v, expected);
  *out = *parsed;
  return absl::OkStatus();
}

}  // namespace

Metadata TrainingConfig::encodeRecipe(bool training) const {
  Metadata m;
  m.emplace_back("precision", std::string(precisionKeyword(precision)));
  if (!training) return m;
  if (optimizer) m.emplace_back("optimizer", std::string(optimizerKindKeyword(*optimizer)));
  m.emplace_back("loss_scaling", std::string(scalingKindKeyword(lossScaling)));
  m.emplace_back("accumulate", std::to_string(accumulate));
  if (dataParallel) {
    m.emplace_back("data_parallel", "true");
    if (reducePrecision) m.emplace_back("reduce_precision", std::string(precisionKeyword(*reducePrecision)));
    if (shardWorldSize > 0) m.emplace_back("shard_world_size", std::to_string(shardWorldSize));
  }
  if (lr) m.emplace_back("lr", exact(*lr));
  if (initScale) m.emplace_back("init_scale", exact(*initScale));
  if (growthFactor) m.emplace_back("growth_factor", exact(*growthFactor));
  if (backoffFactor) m.emplace_back("backoff_factor", exact(*backoffFactor));
  if (growthInterval) m.emplace_back("growth_interval", std::to_string(*growthInterval));
  return m;
}

absl::StatusOr<TrainingConfig> TrainingConfig::decode(const Metadata& metadata) {
  TrainingConfig c;
  // `maxText` spells `max` as users read it ("2^20").
  auto positive = [](const std::string& key, const std::string& v, int64_t max, const std::string& maxText,
                     int64_t* out) -> absl::Status {
    if (!absl::SimpleAtoi(v, out))
      return absl::InvalidArgumentError(absl::StrCat("bundle metadata '", key, "' is not an integer ('", v, "')"));
    if (*out < 1 || *out > max)
      return absl::InvalidArgumentError(
          absl::StrCat("bundle metadata '", key, "' is ", *out, "; it must be in [1, ", maxText, "]"));
    return absl::OkStatus();
  };
  auto finite = [](const std::string& key, const std::string& v, std::optional<double>* out) -> absl::Status {
    double d = 0;
    if (!absl::SimpleAtod(v, &d) || !std::isfinite(d)) return bad(key, v, "a finite number");
    *out = d;
    return absl::OkStatus();
  };
  for (const auto& [key, v] : metadata) {
    absl::Status s = absl::OkStatus();
    if (key == "model") {
      c.model = v;
    } else if (key == "target") {
      c.target = v;
    } else if (key == "precision") {
      s = keyword(key, v, parsePrecision, "f32, f16 or bf16", &c.precision);
    } else if (key == "optimizer") {
      OptimizerKind kind{};
      s = keyword(key, v, parseOptimizerKind, "sgd, adam or adamw", &kind);
      c.optimizer = kind;
    } else if (key == "loss_scaling") {
      s = keyword(key, v, parseScalingKind, "none, static or dynamic", &c.lossScaling);
    } else if (key == "accumulate") {
      s = positive(key, v, kMaxAccumulate, "2^20", &c.accumulate);
    } else if (key == "data_parallel") {
      if (!oneOf(v, {"true", "false"})) return bad(key, v, "true or false");
      c.dataParallel = v == "true";
    } else if (key == "reduce_precision") {
      Precision p{};
      s = keyword(key, v, parsePrecision, "f32, f16 or bf16", &p);
      c.reducePrecision = p;
    } else if (key == "shard_world_size") {
      s = positive(key, v, kMaxWorldSize, "65536", &c.shardWorldSize);
    } else if (key == "lr") {
      s = finite(key, v, &c.lr);
    } else if (key == "init_scale") {
      s = finite(key, v, &c.initScale);
    } else if (key == "growth_factor") {
      s = finite(key, v, &c.growthFactor);
    } else if (key == "backoff_factor") {
      s = finite(key, v, &c.backoffFactor);
    } else if (key == "growth_interval") {
      int64_t n = 0;
      s = positive(key, v, int64_t{1} << 62, "2^62", &n);
      c.growthInterval = n;
    } else if (key == "cuda_toolkit") {
      c.cudaToolkit = v;
    }
    if (!s.ok()) return s;
  }
  return c;
}

}  // namespace amp::rt
