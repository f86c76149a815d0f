// Every cpu kernel against the reference kernel on single-step plans with random operands: the
// results must be bit-identical (the numeric contract for elementwise, loss, reduction and
// optimizer steps; GEMMs are checked within a bound in GemmTest). Each case also checks that the
// cpu device ran the step with its own kernel, not the reference fallback.
#include <cmath>
#include <cstring>
#include <random>

#include "gtest/gtest.h"
#include "runtime/devices/cpu/CpuExecutor.h"
#include "runtime/exec/Session.h"
#include "runtime/numerics/Convert.h"
#include "test/unit/cpu/ParityUtil.h"

namespace amp::rt {
namespace {

using parity::expectParity;
using parity::Operand;

const DType kFloats[] = {DType::F32, DType::BF16, DType::F16};

TEST(CpuParity, UnaryOps) {
  for (DType t : kFloats)
    for (const char* op : {"amp.neg", "amp.abs", "amp.exp", "amp.log", "amp.sqrt", "amp.rsqrt", "amp.reciprocal",
                           "amp.tanh", "amp.erf", "amp.sigmoid", "amp.relu", "amp.silu", "amp.gelu"})
      expectParity(op, {{t, {33, 70}}}, {{t, {33, 70}}});
  expectParity("amp.gelu", {{DType::F32, {1000}}}, {{DType::F32, {1000}}}, {{"approximate", std::string("tanh")}});
}

TEST(CpuParity, BinaryOpsWithBroadcasts) {
  for (DType t : kFloats)
    for (const char* op : {"amp.add", "amp.sub", "amp.mul", "amp.div", "amp.maximum", "amp.minimum", "amp.pow"}) {
      expectParity(op, {{t, {64, 300}}, {t, {64, 300}}}, {{t, {64, 300}}});  // same shape
      expectParity(op, {{t, {64, 300}}, {t, {300}}}, {{t, {64, 300}}});      // bias (suffix)
      expectParity(op, {{t, {}}, {t, {64, 30}}}, {{t, {64, 30}}});           // scalar
      expectParity(op, {{t, {64, 1}}, {t, {64, 30}}}, {{t, {64, 30}}});      // column (indexed)
      expectParity(op, {{t, {4, 1, 5}}, {t, {3, 1}}}, {{t, {4, 3, 5}}});     // both broadcast
    }
}

TEST(CpuParity, CastsBetweenEveryFloatType) {
  for (DType from : kFloats)
    for (DType to : kFloats) expectParity("amp.cast", {{from, {100003}}}, {{to, {100003}}});
}

TEST(CpuParity, CompareAndSelect) {
  for (const char* pred : {"eq", "ne", "lt", "le", "gt", "ge"})
    expectParity("amp.compare", {{DType::F32, {128, 256}}, {DType::F32, {}, {0.0}}}, {{DType::Bool, {128, 256}}},
                 {{"predicate", std::string(pred)}});
  expectParity("amp.select", {{DType::Bool, {128, 256}}, {DType::F32, {128, 256}}, {DType::F32, {}, {0.0}}},
               {{DType::F32, {128, 256}}});
  expectParity("amp.select", {{DType::Bool, {8, 1}}, {DType::BF16, {8, 5}}, {DType::BF16, {5}}}, {{DType::BF16, {8, 5}}});
}

TEST(CpuParity, Reductions) {
  for (DType t : kFloats)
    for (const char* op : {"amp.reduce_sum", "amp.reduce_mean", "amp.reduce_max"}) {
      expectParity(op, {{t, {128, 256}}}, {{t, {256}}}, {{"dims", std::vector<int64_t>{0}}, {"keepdim", false}});
      expectParity(op, {{t, {6, 7, 300}}}, {{t, {6, 1, 1}}}, {{"dims", std::vector<int64_t>{1, 2}}, {"keepdim", true}});
      expectParity(op, {{t, {6, 7, 30}}}, {{t, {6, 30}}}, {{"dims", std::vector<int64_t>{1}}, {"keepdim", false}});
    }
}

TEST(CpuParity, CrossEntropyAndItsGradient) {
  for (DType t : kFloats) {
    AttrMap attrs{{"ignore_index", int64_t{3}}, {"label_smoothing", 0.1}};
    expectParity("amp.cross_entropy", {{t, {128, 10}}, {DType::I64, {128}}}, {{t, {}}}, attrs, false);
    expectParity("amp.cross_entropy_grad", {{t, {128, 10}}, {DType::I64, {128}}, {t, {}, {65536.0}}}, {{t, {128, 10}}},
                 attrs, false);
    // Blocks of rows split across threads (2050 rows of 170 classes: 17 blocks, the last partial);
    // the mean still adds the rows' losses in order.
    for (const AttrMap& a : {attrs, AttrMap{{"ignore_index", int64_t{-100}}, {"label_smoothing", 0.0}}}) {
      expectParity("amp.cross_entropy", {{t, {2050, 170}}, {DType::I64, {2050}}}, {{t, {}}}, a, false);
      expectParity("amp.cross_entropy_grad", {{t, {2050, 170}}, {DType::I64, {2050}}, {t, {}, {1.0}}},
                   {{t, {2050, 170}}}, a, false);
    }
  }
}

TEST(CpuParity, Transpose) {
  expectParity("amp.transpose", {{DType::BF16, {4, 5, 6}}}, {{DType::BF16, {6, 4, 5}}},
               {{"permutation", std::vector<int64_t>{2, 0, 1}}});
  expectParity("amp.transpose", {{DType::F32, {33, 70}}}, {{DType::F32, {70, 33}}},
               {{"permutation", std::vector<int64_t>{1, 0}}});
}

TEST(CpuParity, ScalerOps) {
  for (double scale : {65536.0, 1.0})
    expectParity("amp.unscale_check", {{DType::F32, {300, 7}}, {DType::BF16, {50}}, {DType::F32, {}, {scale}}},
                 {{DType::F32, {300, 7}}, {DType::BF16, {50}}, {DType::F32, {}}});
  AttrMap scaleAttrs{{"growth_factor", 2.0}, {"backoff_factor", 0.5}, {"growth_interval", int64_t{3}}};
  for (double found : {0.0, 1.0})
    for (double tracker : {0.0, 2.0})
      expectParity("amp.update_scale", {{DType::F32, {}, {1024.0}}, {DType::I32, {}, {tracker}}, {DType::F32, {}, {found}}},
                   {{DType::F32, {}}, {DType::I32, {}}}, scaleAttrs);
  for (double found : {0.0, 1.0})
    expectParity("amp.step_counters", {{DType::I64, {}, {7}}, {DType::I64, {}, {2}}, {DType::F32, {}, {found}}},
                 {{DType::I64, {}}, {DType::I64, {}}});
  AttrMap cosine{{"kind", std::string("cosine")}, {"base_lr", 0.01}, {"warmup_steps", int64_t{5}},
                 {"total_steps", int64_t{100}}, {"min_lr", 0.001}};
  for (double step : {0.0, 3.0, 50.0, 200.0})
    expectParity("amp.lr_schedule", {{DType::I64, {}, {step}}}, {{DType::F32, {}}}, cosine);
  expectParity("amp.global_norm", {{DType::F32, {300, 7}}, {DType::F32, {50}}}, {{DType::F32, {}}}, {}, false);
  expectParity("amp.clip_grads", {{DType::F32, {300, 7}}, {DType::F32, {50}}, {DType::F32, {}, {40.0}}},
               {{DType::F32, {300, 7}}, {DType::F32, {50}}}, {{"max_norm", 1.0}}, false);
}

TEST(CpuParity, Optimizers) {
  for (bool decoupled : {false, true})
    for (double found : {0.0, 1.0})
      for (DType g : {DType::F32, DType::BF16}) {
        AttrMap attrs{{"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}, {"weight_decay", 0.01}, {"decoupled", decoupled}};
        Operand v{DType::F32, {40000}};
        v.values = {0.25, 0.5, 1e-3, 4.0};  // second moments are >= 0
        expectParity("amp.adam_update",
                     {{DType::F32, {40000}}, {g, {40000}}, {DType::F32, {40000}}, v, {DType::I64, {}, {3}},
                      {DType::F32, {}, {0.002}}, {DType::F32, {}, {found}}},
                     {{DType::F32, {40000}}, {DType::F32, {40000}}, {DType::F32, {40000}}}, attrs, false);
        // bf16 moments (stochastically rounded): an odd count, so the threads' ranges start
        // inside a 4-element Philox group.
        AttrMap seeded = attrs;
        seeded.set("rounding_seed", int64_t{12345});
        Operand vb{DType::BF16, {40001}, v.values};
        expectParity("amp.adam_update",
                     {{DType::F32, {40001}}, {g, {40001}}, {DType::BF16, {40001}}, vb, {DType::I64, {}, {3}},
                      {DType::F32, {}, {0.002}}, {DType::F32, {}, {found}}},
                     {{DType::F32, {40001}}, {DType::BF16, {40001}}, {DType::BF16, {40001}}}, seeded, false);
        expectParity("amp.sgd_update",
                     {{DType::F32, {40000}}, {g, {40000}}, {DType::F32, {}, {0.1}}, {DType::F32, {}, {found}},
                      {DType::F32, {40000}}},
                     {{DType::F32, {40000}}, {DType::F32, {40000}}},
                     {{"momentum", 0.9}, {"nesterov", decoupled}, {"weight_decay", 1e-4}}, false);
      }
}

}  // namespace
}  // namespace amp::rt
