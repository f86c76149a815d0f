// The bundle metadata codec: what ampc writes decodes to the same recipe, values round-trip
// exactly, and every malformed value is refused with the key and the value named.
#include "runtime/plan/TrainingConfig.h"

#include <string>

#include "gtest/gtest.h"

namespace amp::rt {
namespace {

TEST(TrainingConfig, RoundTripsEveryField) {
  TrainingConfig c;
  c.precision = Precision::F16;
  c.optimizer = OptimizerKind::AdamW;
  c.lossScaling = ScalingKind::Dynamic;
  c.accumulate = 4;
  c.dataParallel = true;
  c.reducePrecision = Precision::BF16;
  c.shardWorldSize = 2;
  c.lr = 0.1;  // not a binary fraction: %.17g must bring back the same double
  c.initScale = 65536.0;
  c.growthFactor = 2.0;
  c.backoffFactor = 0.5;
  c.growthInterval = 2000;
  Metadata m = c.encodeRecipe(/*training=*/true);
  m.emplace_back("model", "mlp");
  m.emplace_back("cuda_toolkit", "13.0");
  m.emplace_back("some_future_key", "whatever");  // ignored
  auto d = TrainingConfig::decode(m);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->model, "mlp");
  EXPECT_EQ(d->precision, Precision::F16);
  EXPECT_EQ(d->optimizer, OptimizerKind::AdamW);
  EXPECT_EQ(d->lossScaling, ScalingKind::Dynamic);
  EXPECT_EQ(d->accumulate, 4);
  EXPECT_TRUE(d->dataParallel);
  EXPECT_EQ(d->reducePrecision, Precision::BF16);
  EXPECT_EQ(d->shardWorldSize, 2);
  EXPECT_EQ(*d->lr, 0.1);
  EXPECT_EQ(*d->initScale, 65536.0);
  EXPECT_EQ(*d->growthFactor, 2.0);
  EXPECT_EQ(*d->backoffFactor, 0.5);
  EXPECT_EQ(*d->growthInterval, 2000);
  EXPECT_EQ(d->cudaToolkit, "13.0");
  EXPECT_EQ(d->encodeRecipe(true), c.encodeRecipe(true));
}

TEST(TrainingConfig, DefaultsAreAPlainSingleProcessRecipe) {
  auto d = TrainingConfig::decode({});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->precision, Precision::F32);
  EXPECT_FALSE(d->optimizer.has_value());
  EXPECT_EQ(d->lossScaling, ScalingKind::None);
  EXPECT_EQ(d->accumulate, 1);
  EXPECT_FALSE(d->dataParallel);
  EXPECT_EQ(d->shardWorldSize, 0);
  EXPECT_FALSE(d->lr.has_value());
}

TEST(TrainingConfig, RefusesEveryMalformedValueNamingIt) {
  struct Bad {
    const char* key;
    const char* value;
    const char* message;
  };
  const Bad bads[] = {
      {"accumulate", "0", "'accumulate' is 0; it must be in [1, 2^20]"},
      {"accumulate", "1048577", "'accumulate' is 1048577; it must be in [1, 2^20]"},
      {"accumulate", "x", "'accumulate' is not an integer ('x')"},
      {"accumulate", "9223372036854775808", "'accumulate' is not an integer"},
      {"shard_world_size", "0", "'shard_world_size' is 0; it must be in [1, 65536]"},
      {"shard_world_size", "65537", "it must be in [1, 65536]"},
      {"growth_interval", "-1", "'growth_interval' is -1"},
      {"data_parallel", "yes", "'data_parallel' is 'yes'; expected true or false"},
      {"precision", "fp16", "'precision' is 'fp16'; expected f32, f16 or bf16"},
      {"optimizer", "lamb", "expected sgd, adam or adamw"},
      {"loss_scaling", "", "'loss_scaling' is ''"},
      {"lr", "nan", "'lr' is 'nan'; expected a finite number"},
      {"init_scale", "inf", "'init_scale' is 'inf'"},
      {"backoff_factor", "half", "'backoff_factor' is 'half'"},
  };
  for (const Bad& b : bads) {
    auto d = TrainingConfig::decode({{b.key, b.value}});
    ASSERT_FALSE(d.ok()) << b.key << "=" << b.value;
    EXPECT_NE(std::string(d.status().message()).find(b.message), std::string::npos)
        << d.status().message() << " lacks " << b.message;
  }
}

}  // namespace
}  // namespace amp::rt
