// The cpu kernels of CpuNorm, CpuEmbedding, CpuShape and CpuGrad against the reference kernels on
// single-step plans: bit-identical results (NaN, infinities and signed zeros included where the
// op's domain allows them) and no step on the reference fallback. Sizes are odd, and some are
// large enough that the kernels split their work across threads.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <limits>

#include "gtest/gtest.h"
#include "runtime/plan/OpAttrs.h"
#include "runtime/devices/cpu/CpuExecutor.h"
#include "runtime/exec/Session.h"
#include "runtime/numerics/Convert.h"
#include "runtime/devices/Devices.h"
#include "test/unit/cpu/ParityUtil.h"

namespace amp::rt {
namespace {

using parity::expectParity;
using parity::Operand;

const DType kFloats[] = {DType::F32, DType::BF16, DType::F16};
const DType kAllFloats[] = {DType::F32, DType::BF16, DType::F16, DType::F8E4M3FN, DType::F8E5M2};

AttrMap axisAttr(int64_t axis) { return {{"axis", axis}}; }

TEST(CpuLibraryOpParity, SoftmaxAndLogSoftmaxAlongEveryAxis) {
  for (const char* op : {"amp.softmax", "amp.log_softmax"}) {
    for (DType t : kFloats) {
      expectParity(op, {{t, {33, 70}}}, {{t, {33, 70}}}, axisAttr(1));   // rows
      expectParity(op, {{t, {33, 70}}}, {{t, {33, 70}}}, axisAttr(0));   // columns: strided tiles
      expectParity(op, {{t, {4, 5, 67}}}, {{t, {4, 5, 67}}}, axisAttr(1));
      expectParity(op, {{t, {1001}}}, {{t, {1001}}}, axisAttr(0));
      expectParity(op, {{t, {3, 0, 5}}}, {{t, {3, 0, 5}}}, axisAttr(1));  // empty slices
      expectParity(op, {{t, {3, 1, 5}}}, {{t, {3, 1, 5}}}, axisAttr(1));  // length-1 slices
    }
    for (DType t : {DType::F8E4M3FN, DType::F8E5M2}) expectParity(op, {{t, {9, 31}}}, {{t, {9, 31}}}, axisAttr(1));
    // Big enough to split across threads, both along rows and in tiles.
    expectParity(op, {{DType::F32, {517, 301}}}, {{DType::F32, {517, 301}}}, axisAttr(1));
    expectParity(op, {{DType::BF16, {301, 2, 517}}}, {{DType::BF16, {301, 2, 517}}}, axisAttr(0));
    // Masked attention scores and slices of all -inf (NaN, as PyTorch).
    Operand masked{DType::F32, {2, 3, 8, 8}, {0.5, -1e9, 1.25, -1e9, -3.0, 2.0, -1e9}};
    expectParity(op, {masked}, {{DType::F32, {2, 3, 8, 8}}}, axisAttr(3));
    Operand ninf{DType::F32, {4, 6}, {-INFINITY}};
    expectParity(op, {ninf}, {{DType::F32, {4, 6}}}, axisAttr(1));
    Operand mixed{DType::BF16, {5, 4}, {INFINITY, 1.0, -INFINITY, NAN, 2.0, 0.0, -0.0}};
    expectParity(op, {mixed}, {{DType::BF16, {5, 4}}}, axisAttr(0));
  }
}

AttrMap normAttrs(int64_t ndim, double eps, bool weight, bool bias) {
  return {{"normalized_ndim", ndim}, {"eps", eps}, {"has_weight", weight}, {"has_bias", bias}};
}

// [37, 300]: varied finite values, but group 3 holds a NaN, group 17 +inf, group 20 -inf and
// group 30 is constant (variance 0).
Operand groupsWithNonFinites(DType t) {
  Operand o{t, {37, 300}, {}};
  std::mt19937 rng(7);
  std::normal_distribution<double> normal(0.0, 2.0);
  for (int64_t g = 0; g < 37; ++g)
    for (int64_t j = 0; j < 300; ++j) o.values.push_back(g == 30 ? 1.5 : normal(rng));
  o.values[3 * 300 + 11] = NAN;
  o.values[17 * 300 + 299] = INFINITY;
  o.values[20 * 300] = -INFINITY;
  return o;
}

TEST(CpuLibraryOpParity, LayerNormAndRmsNorm) {
  for (DType t : kAllFloats) {
    const Shape x{33, 70}, w{70};
    for (bool weight : {false, true})
      for (bool bias : {false, true}) {
        std::vector<Operand> ops{{t, x}};
        if (weight) ops.push_back({t, w});
        if (bias) ops.push_back({t, w});
        expectParity("amp.layer_norm", ops, {{t, x}}, normAttrs(1, 1e-5, weight, bias));
      }
    expectParity("amp.rms_norm", {{t, x}}, {{t, x}}, normAttrs(1, 1e-6, false, false));
    expectParity("amp.rms_norm", {{t, x}, {t, w}}, {{t, x}}, normAttrs(1, 1e-6, true, false));
  }
  for (DType t : kFloats) {
    // Two normalized dims, eps 0 (a constant group gives 0 * inf = NaN, as the reference).
    expectParity("amp.layer_norm", {{t, {4, 5, 6}}, {t, {5, 6}}, {t, {5, 6}}}, {{t, {4, 5, 6}}},
                 normAttrs(2, 0.0, true, true));
    expectParity("amp.layer_norm", {{t, {3, 4}, {1.5}}}, {{t, {3, 4}}}, normAttrs(1, 0.0, false, false));
    expectParity("amp.rms_norm", {{t, {4, 5, 6}}, {t, {4, 5, 6}}}, {{t, {4, 5, 6}}}, normAttrs(3, 1e-5, true, false));
    expectParity("amp.rms_norm", {{t, {3, 4}, {0.0}}}, {{t, {3, 4}}}, normAttrs(1, 0.0, false, false));
    // Many groups: split across threads.
    expectParity("amp.layer_norm", {{t, {1031, 64}}, {t, {64}}, {t, {64}}}, {{t, {1031, 64}}},
                 normAttrs(1, 1e-5, true, true), false);
    expectParity("amp.rms_norm", {{t, {1031, 64}}, {t, {64}}}, {{t, {1031, 64}}}, normAttrs(1, 1e-5, true, false), false);
    // One long group.
    expectParity("amp.layer_norm", {{t, {2, 40001}}}, {{t, {2, 40001}}}, normAttrs(1, 1e-5, false, false), false);
    // Groups of more than 2^18 elements go through the lanes one at a time.
    expectParity("amp.layer_norm", {{t, {3, 270001}}}, {{t, {3, 270001}}}, normAttrs(1, 1e-5, false, false), false);
    // Groups run 16 at a time as vector lanes: non-finite values stay in their own group's lane,
    // and a block of 16 groups is followed by a partial one (37 = 2·16 + 5), rows over 256 (two blocks of the sum).
    const Operand odd = groupsWithNonFinites(t);
    // (specials off: a NaN of the weight meeting a group's NaN is a NaN either way, docs/numerics.md)
    expectParity("amp.layer_norm", {odd, {t, {300}}, {t, {300}}}, {{t, {37, 300}}}, normAttrs(1, 1e-5, true, true), false);
    expectParity("amp.rms_norm", {odd}, {{t, {37, 300}}}, normAttrs(1, 1e-5, false, false), false);
  }
}

TEST(CpuLibraryOpParity, NormGradients) {
  for (DType t : kAllFloats) {
    const Shape x{33, 70}, w{70};
    expectParity("amp.layer_norm_grad", {{t, x}, {t, w}, {t, x}}, {{t, x}, {t, w}, {t, w}},
                 {{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}});
    expectParity("amp.layer_norm_grad", {{t, x}, {t, x}}, {{t, x}, {t, w}, {t, w}},
                 {{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}});
    expectParity("amp.rms_norm_grad", {{t, x}, {t, w}, {t, x}}, {{t, x}, {t, w}},
                 {{"normalized_ndim", int64_t{1}}, {"eps", 1e-6}});
    expectParity("amp.rms_norm_grad", {{t, x}, {t, x}}, {{t, x}, {t, w}}, {{"normalized_ndim", int64_t{1}}, {"eps", 1e-6}});
  }
  for (DType t : kFloats) {
    const Shape x{4, 5, 6}, w{5, 6};
    expectParity("amp.layer_norm_grad", {{t, x}, {t, w}, {t, x}}, {{t, x}, {t, w}, {t, w}},
                 {{"normalized_ndim", int64_t{2}}, {"eps", 0.0}});
    expectParity("amp.rms_norm_grad", {{t, x}, {t, x}}, {{t, x}, {t, w}}, {{"normalized_ndim", int64_t{2}}, {"eps", 1e-5}});
    // Many groups (pass 1 split by groups, pass 2 by columns) and wide groups.
    for (const Shape& big : {Shape{1031, 64}, Shape{37, 1203}}) {
      const Shape bw{big[1]};
      expectParity("amp.layer_norm_grad", {{t, big}, {t, bw}, {t, big}}, {{t, big}, {t, bw}, {t, bw}},
                   {{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}}, false);
      expectParity("amp.rms_norm_grad", {{t, big}, {t, bw}, {t, big}}, {{t, big}, {t, bw}},
                   {{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}}, false);
    }
  }
  expectParity("amp.layer_norm_grad", {{DType::F32, {3, 270001}}, {DType::F32, {270001}}, {DType::F32, {3, 270001}}},
               {{DType::F32, {3, 270001}}, {DType::F32, {270001}}, {DType::F32, {270001}}},
               {{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}}, false);
  for (DType t : kFloats) {  // non-finite values in some groups' lanes (see LayerNormAndRmsNorm)
    const Operand odd = groupsWithNonFinites(t);
    expectParity("amp.layer_norm_grad", {odd, {t, {300}}, {t, {37, 300}}}, {{t, {37, 300}}, {t, {300}}, {t, {300}}},
                 {{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}}, false);
    expectParity("amp.rms_norm_grad", {{t, {37, 300}}, odd}, {{t, {37, 300}}, {t, {300}}},
                 {{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}}, false);
  }
  // No groups: the weight and bias gradients are +0.
  expectParity("amp.layer_norm_grad", {{DType::F32, {0, 7}}, {DType::F32, {7}}, {DType::F32, {0, 7}}},
               {{DType::F32, {0, 7}}, {DType::F32, {7}}, {DType::F32, {7}}}, {{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}});
}

// Channels split across threads, each in the reference's order: the same bits in every float
// type, training and inference, [N, C], [N, C, L], NCHW and [N, C, D, H, W], with more channels
// than threads and channels whose M spans several (n) blocks.
TEST(CpuLibraryOpParity, BatchNormAndItsGradient) {
  const Shape c{5};
  auto attrs = [](bool training) {
    return AttrMap{{"epsilon", 1e-5}, {"momentum", 0.1}, {"training", training}};
  };
  for (DType t : kFloats)
    for (bool training : {true, false})
      for (Shape x : {Shape{7, 5}, Shape{4, 5, 9}, Shape{3, 5, 4, 6}, Shape{2, 5, 33, 17}, Shape{2, 5, 3, 4, 2}}) {
        // Positive running variances: a random negative one would make the inference result NaN.
        Operand var{DType::F32, c, {0.5, 1.0, 1.5, 2.0, 0.25}};
        expectParity("amp.batch_norm", {{t, x}, {DType::F32, c}, {DType::F32, c}, {DType::F32, c}, var},
                     {{t, x}, {DType::F32, c}, {DType::F32, c}}, attrs(training), false);
        expectParity("amp.batch_norm_grad", {{t, x}, {t, x}, {DType::F32, c}, {DType::F32, c}, var},
                     {{t, x}, {DType::F32, c}, {DType::F32, c}}, {{"epsilon", 1e-5}, {"training", training}},
                     false, 2);
      }
}

// Channels run as vector lanes in blocks of up to 16 (ChannelLanes.h): several blocks, a partial
// last block, one spatial element per channel (layer4 of a small-image ResNet), channels of more
// than 65536 elements (re-gathered image by image instead of kept whole) and NaN/inf/-0 inputs,
// which must stay in their own channel.
TEST(CpuLibraryOpParity, BatchNormChannelBlocks) {
  auto attrs = [](bool training) {
    return AttrMap{{"epsilon", 1e-5}, {"momentum", 0.1}, {"training", training}};
  };
  for (DType t : kFloats)
    for (bool training : {true, false})
      for (Shape x : {Shape{3, 37, 5, 3}, Shape{4, 64, 7, 7}, Shape{9, 40, 1, 1}, Shape{130, 21}, Shape{2, 18, 200, 170}}) {
        const Shape c{x[1]};
        std::vector<double> var(static_cast<size_t>(x[1]));
        for (size_t i = 0; i < var.size(); ++i) var[i] = 0.25 + 0.125 * double(i % 7);
        for (bool specials : {false, true}) {
          expectParity("amp.batch_norm", {{t, x}, {DType::F32, c}, {DType::F32, c}, {DType::F32, c}, {DType::F32, c, var}},
                       {{t, x}, {DType::F32, c}, {DType::F32, c}}, attrs(training), specials, 3, 0, specials);
          expectParity("amp.batch_norm_grad",
                       {{t, x}, {t, x}, {DType::F32, c}, {DType::F32, c}, {DType::F32, c, var}},
                       {{t, x}, {DType::F32, c}, {DType::F32, c}}, {{"epsilon", 1e-5}, {"training", training}},
                       specials, 4, 0, specials);
        }
      }
}

TEST(CpuLibraryOpParity, EmbeddingAndItsGradient) {
  // Random ids are in [0, 10).
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::F8E5M2, DType::I32, DType::I64}) {
    expectParity("amp.embedding", {{t, {10, 7}}, {DType::I64, {3, 5}}}, {{t, {3, 5, 7}}});
    expectParity("amp.embedding", {{t, {13, 1}}, {DType::I32, {11}}}, {{t, {11, 1}}});
  }
  expectParity("amp.embedding", {{DType::BF16, {10, 300}}, {DType::I64, {64, 50}}}, {{DType::BF16, {64, 50, 300}}});
  expectParity("amp.embedding", {{DType::F32, {10, 0}}, {DType::I64, {4}}}, {{DType::F32, {4, 0}}});
  for (DType t : kAllFloats) {
    expectParity("amp.embedding_grad", {{DType::I64, {3, 5}}, {t, {3, 5, 7}}}, {{t, {10, 7}}},
                 {{"num_embeddings", int64_t{10}}});
    expectParity("amp.embedding_grad", {{DType::I32, {11}}, {t, {11, 3}}}, {{t, {13, 3}}},
                 {{"num_embeddings", int64_t{13}}});  // rows 10..12 get no id: +0
  }
  for (DType t : kFloats)  // many rows per id (order matters), split across threads by table rows
    expectParity("amp.embedding_grad", {{DType::I64, {64, 50}}, {t, {64, 50, 300}}}, {{t, {12, 300}}},
                 {{"num_embeddings", int64_t{12}}});
  expectParity("amp.embedding_grad", {{DType::I64, {0}}, {DType::F32, {0, 5}}}, {{DType::F32, {4, 5}}},
               {{"num_embeddings", int64_t{4}}});
}

// Ids out of range are the reference's error on the cpu device too, before anything is written.
TEST(CpuLibraryOpParity, EmbeddingIdsOutOfRangeAreTheReferencesError) {
  struct Case {
    std::string op;
    std::vector<Operand> operands;
    std::pair<DType, Shape> result;
    AttrMap attrs;
  };
  const std::vector<Case> cases = {
      {"amp.embedding", {{DType::F32, {4, 3}}, {DType::I64, {2, 2}, {0, 1, 4, 2}}}, {DType::F32, {2, 2, 3}}, {}},
      {"amp.embedding", {{DType::F32, {4, 3}}, {DType::I32, {3}, {0, -1, 2}}}, {DType::F32, {3, 3}}, {}},
      {"amp.embedding_grad", {{DType::I64, {2, 2}, {0, 1, 2, 9}}, {DType::BF16, {2, 2, 3}}}, {DType::BF16, {4, 3}},
       {{"num_embeddings", int64_t{4}}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    parity::SingleStep s = parity::singleStepPlan(c.op, c.operands, {c.result}, c.attrs, true, 1);
    auto ref = openSession(s.plan, Device::Reference);
    auto cpu = openSession(s.plan, Device::Cpu);
    ASSERT_TRUE(ref.ok() && cpu.ok());
    auto want = ref->run("eval", s.feeds);
    auto got = cpu->run("eval", s.feeds);
    ASSERT_FALSE(want.ok());
    ASSERT_FALSE(got.ok());
    // Both name the id and its position; the reference's message is the tail of the cpu's.
    const std::string w(want.status().message()), g(got.status().message());
    const std::string tail = w.substr(w.find(c.op + ": id "));
    EXPECT_NE(g.find(tail), std::string::npos) << "reference: " << w << "\ncpu: " << g;
    EXPECT_NE(g.find("parity.mlir:1:1"), std::string::npos) << g;
  }
}

TEST(CpuLibraryOpParity, DropoutUsesTheSharedPhiloxStream) {
  for (DType t : kAllFloats)
    for (double rate : {0.0, 0.1, 0.5, 0.9})
      expectParity("amp.dropout", {{t, {33, 71}}}, {{t, {33, 71}}}, {{"rate", rate}, {"seed", int64_t{1234}}});
  // Odd sizes split across threads, steps that use the counter's high words, negative seeds.
  for (int64_t step : {int64_t{0}, int64_t{7}, (int64_t{1} << 33) + 5})
    for (int64_t seed : {int64_t{0}, int64_t{-3}, int64_t{0x123456789ab}})
      expectParity("amp.dropout", {{DType::BF16, {100003}}}, {{DType::BF16, {100003}}}, {{"rate", 0.3}, {"seed", seed}},
                   true, 1, step);
  expectParity("amp.dropout", {{DType::F32, {5}}}, {{DType::F32, {5}}}, {{"rate", 0.5}, {"seed", int64_t{1}}}, true, 1, 3);
}

TEST(CpuLibraryOpParity, GeluGrad) {
  for (DType t : kAllFloats)
    for (const char* approx : {"none", "tanh"}) {
      expectParity("amp.gelu_grad", {{t, {33, 70}}, {t, {33, 70}}}, {{t, {33, 70}}}, {{"approximate", std::string(approx)}});
      expectParity("amp.gelu_grad", {{t, {}}, {t, {}}}, {{t, {}}}, {{"approximate", std::string(approx)}});
    }
  expectParity("amp.gelu_grad", {{DType::BF16, {100003}}, {DType::BF16, {100003}}}, {{DType::BF16, {100003}}},
               {{"approximate", std::string("tanh")}});
  expectParity("amp.gelu_grad", {{DType::F32, {8, 32, 257}}, {DType::F32, {8, 32, 257}}}, {{DType::F32, {8, 32, 257}}});
}

TEST(CpuLibraryOpParity, MseLoss) {
  for (DType t : kAllFloats) {
    expectParity("amp.mse_loss", {{t, {33, 70}}, {t, {33, 70}}}, {{t, {}}}, {}, false);
    // NaN/inf inputs: the mean is NaN on both devices. Which NaN (+NaN from NaN - NaN, or the
    // default -NaN of inf - inf) survives the sum depends on how the compiler ordered the adds'
    // operands in each build, so here NaN matches NaN, as the contract says.
    expectParity("amp.mse_loss", {{t, {33, 70}}, {t, {33, 70}}}, {{t, {}}}, {}, true, 1, 0, /*anyNan=*/true);
    expectParity("amp.mse_loss", {{t, {0}}, {t, {0}}}, {{t, {}}});  // 0/0 = NaN
  }
  expectParity("amp.mse_loss", {{DType::F32, {100003}}, {DType::F32, {100003}}}, {{DType::F32, {}}}, {}, false);
  expectParity("amp.mse_loss", {{DType::F16, {}}, {DType::F16, {}}}, {{DType::F16, {}}}, {}, false);
}

TEST(CpuLibraryOpParity, BroadcastTo) {
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::I64, DType::I32, DType::Bool, DType::F8E4M3FN}) {
    expectParity("amp.broadcast_to", {{t, {5}}}, {{t, {3, 4, 5}}});
    expectParity("amp.broadcast_to", {{t, {3, 1}}}, {{t, {2, 3, 4}}});
    expectParity("amp.broadcast_to", {{t, {}}}, {{t, {7, 7}}});
    expectParity("amp.broadcast_to", {{t, {1, 1}}}, {{t, {4, 6}}});
    expectParity("amp.broadcast_to", {{t, {2, 1, 3}}}, {{t, {2, 5, 3}}});
    expectParity("amp.broadcast_to", {{t, {4, 6}}}, {{t, {4, 6}}});
    expectParity("amp.broadcast_to", {{t, {}}}, {{t, {}}});
  }
  expectParity("amp.broadcast_to", {{DType::F32, {1, 301}}}, {{DType::F32, {257, 301}}});
  expectParity("amp.broadcast_to", {{DType::BF16, {257, 1}}}, {{DType::BF16, {3, 257, 301}}});
  expectParity("amp.broadcast_to", {{DType::F32, {3}}}, {{DType::F32, {0, 3}}});
}

AttrMap sliceAttrs(std::vector<int64_t> starts, std::vector<int64_t> limits, std::vector<int64_t> strides) {
  return {{"starts", std::move(starts)}, {"limits", std::move(limits)}, {"strides", std::move(strides)}};
}

TEST(CpuLibraryOpParity, SliceAndSliceGrad) {
  struct Case {
    Shape x, sliced;
    AttrMap attrs;
  };
  const std::vector<Case> cases = {
      {{10, 12}, {4, 3}, sliceAttrs({1, 2}, {9, 11}, {2, 3})},
      {{10, 12}, {10, 12}, sliceAttrs({0, 0}, {10, 12}, {1, 1})},
      {{10, 12}, {3, 12}, sliceAttrs({7, 0}, {10, 12}, {1, 1})},
      {{10, 12}, {10, 1}, sliceAttrs({0, 11}, {10, 12}, {1, 1})},
      {{4, 5, 6}, {2, 2, 3}, sliceAttrs({1, 0, 1}, {4, 5, 6}, {2, 3, 2})},
      {{4, 5, 6}, {0, 5, 6}, sliceAttrs({2, 0, 0}, {2, 5, 6}, {1, 1, 1})},
      {{7}, {3}, sliceAttrs({1}, {7}, {2})},
      {{}, {}, sliceAttrs({}, {}, {})},
      {{300, 517}, {150, 500}, sliceAttrs({1, 17}, {300, 517}, {2, 1})},
  };
  for (const Case& c : cases)
    for (DType t : {DType::F32, DType::BF16, DType::I64, DType::Bool}) {
      expectParity("amp.slice", {{t, c.x}}, {{t, c.sliced}}, c.attrs);
      if (isFloat(t)) expectParity("amp.slice_grad", {{t, c.sliced}}, {{t, c.x}}, c.attrs);
    }
  expectParity("amp.slice_grad", {{DType::F16, {2, 2, 3}}}, {{DType::F16, {4, 5, 6}}}, sliceAttrs({1, 0, 1}, {4, 5, 6}, {2, 3, 2}));
}

TEST(CpuLibraryOpParity, Concat) {
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::I64, DType::Bool}) {
    expectParity("amp.concat", {{t, {2, 3}}, {t, {5, 3}}, {t, {1, 3}}}, {{t, {8, 3}}}, axisAttr(0));
    expectParity("amp.concat", {{t, {4, 3, 2}}, {t, {4, 1, 2}}, {t, {4, 0, 2}}, {t, {4, 5, 2}}}, {{t, {4, 9, 2}}},
                 axisAttr(1));
    expectParity("amp.concat", {{t, {4, 3, 2}}, {t, {4, 3, 7}}}, {{t, {4, 3, 9}}}, axisAttr(2));
    expectParity("amp.concat", {{t, {6}}}, {{t, {6}}}, axisAttr(0));
  }
  expectParity("amp.concat", {{DType::F32, {1000, 33}}, {DType::F32, {1000, 64}}}, {{DType::F32, {1000, 97}}}, axisAttr(1));
}


AttrMap poolAttrs(std::vector<int64_t> k, std::vector<int64_t> stride, std::vector<int64_t> pad) {
  return {{"kernel", std::move(k)}, {"stride", std::move(stride)}, {"padding", std::move(pad)}};
}

TEST(CpuLibraryOpParity, PoolingAndItsGradients) {
  struct Case {
    Shape x, y;
    AttrMap attrs;
  };
  const std::vector<Case> cases = {
      {{2, 3, 9, 11}, {2, 3, 4, 5}, poolAttrs({2, 2}, {2, 2}, {0, 0})},
      {{2, 3, 9, 11}, {2, 3, 5, 6}, poolAttrs({3, 3}, {2, 2}, {1, 1})},   // padding, overlapping windows
      {{1, 2, 7, 7}, {1, 2, 7, 7}, poolAttrs({3, 3}, {1, 1}, {1, 1})},    // stride 1: heavy overlap
      {{1, 1, 5, 8}, {1, 1, 2, 4}, poolAttrs({2, 3}, {3, 2}, {0, 1})},    // rectangular, stride > kernel
      {{16, 8, 28, 28}, {16, 8, 14, 14}, poolAttrs({2, 2}, {2, 2}, {0, 0})},  // many planes: threads
      {{4, 37, 14, 14}, {4, 37, 7, 7}, poolAttrs({3, 3}, {2, 2}, {1, 1})},    // ResNet stem, partial lane block
      {{1, 3, 180, 180}, {1, 3, 90, 90}, poolAttrs({2, 2}, {2, 2}, {0, 0})},  // planes too large for lanes
  };
  for (const Case& c : cases)
    for (DType t : kAllFloats) {
      expectParity("amp.max_pool2d", {{t, c.x}}, {{t, c.y}}, c.attrs);
      expectParity("amp.avg_pool2d", {{t, c.x}}, {{t, c.y}}, c.attrs);
      expectParity("amp.max_pool2d_grad", {{t, c.x}, {t, c.y}}, {{t, c.x}}, c.attrs);
      expectParity("amp.avg_pool2d_grad", {{t, c.y}}, {{t, c.x}}, c.attrs);
    }
  // Ties, NaN in a window (the last NaN takes the gradient), all -inf windows.
  Operand ties{DType::F32, {1, 1, 4, 4}, {1.0, 1.0, NAN, 2.0, -INFINITY, -INFINITY, 2.0, NAN}};
  expectParity("amp.max_pool2d", {ties}, {{DType::F32, {1, 1, 2, 2}}}, poolAttrs({2, 2}, {2, 2}, {0, 0}));
  expectParity("amp.max_pool2d_grad", {ties, {DType::F32, {1, 1, 3, 3}}}, {{DType::F32, {1, 1, 4, 4}}},
               poolAttrs({2, 2}, {1, 1}, {0, 0}));
  // The same in 19 planes at once (max pooling runs 16 planes as vector lanes).
  Operand manyTies{DType::F32, {1, 19, 4, 4}, ties.values};
  expectParity("amp.max_pool2d", {manyTies}, {{DType::F32, {1, 19, 2, 2}}}, poolAttrs({2, 2}, {2, 2}, {0, 0}));
  expectParity("amp.max_pool2d_grad", {manyTies, {DType::F32, {1, 19, 3, 3}}}, {{DType::F32, {1, 19, 4, 4}}},
               poolAttrs({2, 2}, {1, 1}, {0, 0}));
  Operand ninf{DType::BF16, {1, 2, 4, 4}, {-INFINITY}};
  expectParity("amp.max_pool2d_grad", {ninf, {DType::BF16, {1, 2, 5, 5}}}, {{DType::BF16, {1, 2, 4, 4}}},
               poolAttrs({2, 2}, {1, 1}, {1, 1}));
  // The gradients' stride is required (ir/AmpGradOps.td): a step without one is refused when its
  // attributes are decoded, before any kernel runs.
  AttrMap noStride{{"kernel", std::vector<int64_t>{2, 2}}, {"padding", std::vector<int64_t>{0, 0}}};
  for (OpCode code : {OpCode::MaxPool2DGrad, OpCode::AvgPool2DGrad}) {
    auto decoded = decodeOpAttrs(code, noStride);
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.status().message().find(std::string(opName(code)) + ": missing attribute 'stride'"),
              std::string::npos)
        << decoded.status();
  }
}

AttrMap convAttrs(std::vector<int64_t> stride, std::vector<int64_t> pad, std::vector<int64_t> dil, int64_t groups) {
  return {{"stride", std::move(stride)}, {"padding", std::move(pad)}, {"dilation", std::move(dil)}, {"groups", groups}};
}

// The direct loops (the fallback, and the path for padding that meets a non-finite weight or
// output gradient) are bit-exact. A conv sum that meets a NaN and an inf (inf - inf) is NaN on both
// devices, but which NaN an f32 add returns when both operands are NaN follows the compiler's
// operand order (the reference's scalar loop and these vector lanes differ), so here NaN matches
// any NaN, as docs/numerics.md allows; every other value, and where the NaNs are, must be identical.
void expectConvParity(const std::string& op, const std::vector<Operand>& operands,
                      const std::vector<std::pair<DType, Shape>>& results, const AttrMap& attrs) {
  expectParity(op, operands, results, attrs, true, 1, 0, /*anyNan=*/true);
}

// oneDNN convolutions sum in their own order: each result element within the dot-product bound of
// its K terms (docs/cpu-device.md, "Convolution numerics").
double expectConvBound(const std::string& op, const std::vector<Operand>& operands,
                       const std::vector<std::pair<DType, Shape>>& results, const AttrMap& attrs, int64_t K,
                       bool specials) {
  return parity::expectParityWithinDotBound(op, operands, results, attrs, K, specials);
}

TEST(CpuLibraryOpParity, Conv2dAndItsGradients) {
  struct Case {
    Shape x, w, y;
    AttrMap attrs;
    int64_t groups;
  };
  const std::vector<Case> cases = {
      {{2, 3, 9, 11}, {4, 3, 3, 3}, {2, 4, 7, 9}, convAttrs({1, 1}, {0, 0}, {1, 1}, 1), 1},
      {{2, 3, 9, 11}, {4, 3, 3, 3}, {2, 4, 9, 11}, convAttrs({1, 1}, {1, 1}, {1, 1}, 1), 1},    // same padding
      {{2, 4, 9, 11}, {6, 2, 3, 2}, {2, 6, 5, 6}, convAttrs({2, 2}, {1, 1}, {1, 1}, 2), 2},    // stride 2, groups
      {{1, 2, 10, 9}, {3, 2, 3, 3}, {1, 3, 5, 3}, convAttrs({2, 3}, {2, 1}, {2, 2}, 1), 1},    // dilation
      {{1, 4, 6, 6}, {4, 1, 3, 3}, {1, 4, 6, 6}, convAttrs({1, 1}, {1, 1}, {1, 1}, 4), 4},     // depthwise
      {{2, 3, 5, 5}, {5, 3, 1, 1}, {2, 5, 5, 5}, convAttrs({1, 1}, {0, 0}, {1, 1}, 1), 1},     // 1x1
      {{2, 8, 7, 7}, {16, 8, 1, 1}, {2, 16, 4, 4}, convAttrs({2, 2}, {0, 0}, {1, 1}, 1), 1},   // 1x1 stride 2 (downsample)
      {{2, 1, 28, 28}, {8, 1, 7, 7}, {2, 8, 14, 14}, convAttrs({2, 2}, {3, 3}, {1, 1}, 1), 1},  // 7x7 stride 2 stem
      {{1, 1, 4, 4}, {2, 1, 5, 5}, {1, 2, 4, 4}, convAttrs({1, 1}, {2, 2}, {1, 1}, 1), 1},     // kernel > input
      {{8, 16, 28, 28}, {32, 16, 3, 3}, {8, 32, 28, 28}, convAttrs({1, 1}, {1, 1}, {1, 1}, 1), 1},  // threads
      {{2, 32, 7, 7}, {128, 32, 3, 3}, {2, 128, 7, 7}, convAttrs({1, 1}, {1, 1}, {1, 1}, 1), 1},  // squeezenet fire at 7x7
      {{2, 512, 3, 3}, {10, 512, 1, 1}, {2, 10, 3, 3}, convAttrs({1, 1}, {0, 0}, {1, 1}, 1), 1},  // padded oc
      {{2, 3, 64, 64}, {64, 3, 3, 3}, {2, 64, 31, 31}, convAttrs({2, 2}, {0, 0}, {1, 1}, 1), 1},  // squeezenet stem
  };
  double worstF32 = 0.0;
  std::map<DType, double> worst;
  for (const Case& c : cases)
    for (DType t : kFloats)
      for (bool specials : {false, true}) {
        // bf16 primitives may turn an infinite operand into NaN (docs/cpu-device.md); their
        // non-finite cases are the f32 and f16 (widened) ones.
        if (specials && t == DType::BF16) continue;
        SCOPED_TRACE(::testing::Message() << dtypeName(t) << " x" << shapeToString(c.x) << " w" << shapeToString(c.w)
                                          << (specials ? " with NaN/inf operands" : ""));
        const Shape bias{c.w[0]};
        const int64_t kFwd = c.w[1] * c.w[2] * c.w[3], kIn = c.w[0] / c.groups * c.w[2] * c.w[3];
        const int64_t kW = c.y[0] * c.y[2] * c.y[3];
        double w = expectConvBound("amp.conv2d", {{t, c.x}, {t, c.w}}, {{t, c.y}}, c.attrs, kFwd, specials);
        w = std::max(w, expectConvBound("amp.conv2d", {{t, c.x}, {t, c.w}, {t, bias}}, {{t, c.y}}, c.attrs, kFwd + 1,
                                        specials));
        w = std::max(w, expectConvBound("amp.conv2d_grad_input", {{t, c.y}, {t, c.w}}, {{t, c.x}}, c.attrs, kIn, specials));
        w = std::max(w, expectConvBound("amp.conv2d_grad_weight", {{t, c.x}, {t, c.y}}, {{t, c.w}}, c.attrs, kW, specials));
        if (t == DType::F32 && !specials) worstF32 = std::max(worstF32, w);
        worst[t] = std::max(worst[t], w);
      }
  for (const auto& [t, w] : worst) std::printf("conv %s: worst |cpu - ref| / bound %.3g\n", std::string(dtypeName(t)).c_str(), w);
  // The f32 results came from oneDNN (its summation order differs from the reference's somewhere
  // in these sums), not from the bit-exact direct loops.
  EXPECT_GT(worstF32, 0.0) << "every conv was bit-identical to the reference: the oneDNN path did not run";
  // f8 operands (widened to f32), and non-finite weights and grads meeting the zero padding
  // (0 * inf = NaN in the reference): those runs take the direct loops, bit for bit.
  const Case& small = cases[1];
  for (DType t : {DType::F8E4M3FN, DType::F8E5M2}) {
    expectConvBound("amp.conv2d", {{t, small.x}, {t, small.w}}, {{t, small.y}}, small.attrs, 27, true);
    expectConvBound("amp.conv2d_grad_weight", {{t, small.x}, {t, small.y}}, {{t, small.w}}, small.attrs, 2 * 9 * 11, true);
  }
  Operand infW{DType::F32, small.w, {0.5, INFINITY, -1.0, 2.0, -INFINITY}};
  expectConvParity("amp.conv2d", {{DType::F32, small.x, {1.0, 2.0, -3.0}}, infW}, {{DType::F32, small.y}}, small.attrs);
  Operand infDy{DType::F32, small.y, {0.5, INFINITY, -1.0, 2.0, 3.0, 1.0, -2.0}};
  expectConvParity("amp.conv2d_grad_weight", {{DType::F32, small.x, {1.0, 2.0, -3.0}}, infDy}, {{DType::F32, small.w}},
                   small.attrs);
  expectConvBound("amp.conv2d_grad_input", {infDy, {DType::F32, small.w}}, {{DType::F32, small.x}}, small.attrs, 4 * 9,
                  true);
}

// A convolution over 1x1 input and output planes (a ResNet's last stage on small images) runs as
// one GEMM on the one tap that reads the input (ConvAsGemm.h): within the GEMM's own bound
// (K = C, O/groups or N terms, not times the taps), and the entry's report says it ran so. A
// non-finite weight (forward) or output gradient (grad_weight) meets the padded taps' fl(0 * v):
// those runs take the bit-exact direct loops.
TEST(CpuLibraryOpParity, ConvWithOneOutputPositionIsOneGemm) {
  struct Case {
    Shape x, w, y;
    AttrMap attrs;
    int64_t taps;  // that read the input
  };
  const std::vector<Case> cases = {
      {{6, 24, 1, 1}, {20, 24, 3, 3}, {6, 20, 1, 1}, convAttrs({1, 1}, {1, 1}, {1, 1}, 1), 1},  // centre tap
      {{5, 12, 1, 1}, {8, 12, 3, 3}, {5, 8, 1, 1}, convAttrs({2, 2}, {2, 2}, {2, 2}, 1), 1},    // dilated
      {{3, 6, 1, 1}, {5, 6, 2, 2}, {3, 5, 1, 1}, convAttrs({2, 2}, {1, 1}, {1, 1}, 1), 1},      // tap (1, 1) of 2x2
      {{4, 10, 1, 1}, {7, 10, 1, 1}, {4, 7, 1, 1}, convAttrs({1, 1}, {0, 0}, {1, 1}, 1), 1},    // 1x1 kernel
      {{2, 3, 1, 1}, {4, 3, 3, 1}, {2, 4, 1, 1}, convAttrs({1, 1}, {1, 0}, {1, 1}, 1), 1},      // 3x1 kernel
      {{64, 96, 1, 1}, {80, 96, 3, 3}, {64, 80, 1, 1}, convAttrs({1, 1}, {1, 1}, {1, 1}, 1), 1},  // threads
      {{8, 16, 2, 2}, {12, 16, 3, 3}, {8, 12, 1, 1}, convAttrs({2, 2}, {1, 1}, {1, 1}, 1), 4},  // stride 2 over 2x2
      {{4, 5, 3, 3}, {6, 5, 2, 2}, {4, 6, 1, 1}, convAttrs({2, 2}, {0, 0}, {1, 1}, 1), 4},     // input gathered
      {{3, 4, 3, 3}, {5, 4, 3, 3}, {3, 5, 1, 1}, convAttrs({1, 1}, {0, 0}, {1, 1}, 1), 9},     // the whole plane
  };
  for (const Case& c : cases)
    for (DType t : kFloats) {
      SCOPED_TRACE(::testing::Message() << dtypeName(t) << " x" << shapeToString(c.x) << " w" << shapeToString(c.w));
      const bool specials = t != DType::BF16;  // bf16 GEMMs may turn inf into NaN (docs/cpu-device.md)
      const Shape bias{c.w[0]};
      const int64_t C = c.x[1] * c.taps, O = c.w[0], N = c.x[0];
      expectConvBound("amp.conv2d", {{t, c.x}, {t, c.w}}, {{t, c.y}}, c.attrs, C, false);
      expectConvBound("amp.conv2d", {{t, c.x}, {t, c.w}, {t, bias}}, {{t, c.y}}, c.attrs, C + 1, false);
      expectConvBound("amp.conv2d_grad_input", {{t, c.y}, {t, c.w}}, {{t, c.x}}, c.attrs, O, specials);
      expectConvBound("amp.conv2d_grad_weight", {{t, c.x}, {t, c.y}}, {{t, c.w}}, c.attrs, N, false);
      for (const auto& [op, operands, result] :
           {std::tuple{"amp.conv2d", std::vector<Operand>{{t, c.x}, {t, c.w}}, c.y},
            std::tuple{"amp.conv2d_grad_input", std::vector<Operand>{{t, c.y}, {t, c.w}}, c.x},
            std::tuple{"amp.conv2d_grad_weight", std::vector<Operand>{{t, c.x}, {t, c.y}}, c.w}}) {
        parity::SingleStep single = parity::singleStepPlan(op, operands, {{t, result}}, c.attrs, false, 1);
        auto cpu = openSession(single.plan, Device::Cpu);
        ASSERT_TRUE(cpu.ok()) << cpu.status();
        ASSERT_TRUE(cpu->run("eval", single.feeds).ok());
        auto prepared = cpu->prepared("eval");
        ASSERT_TRUE(prepared.ok());
        EXPECT_EQ((**prepared).report().count("convolutions as one GEMM (1x1 output planes)"), 1) << op;
      }
    }
  // Non-finite values the padded taps meet: the reference's NaN, bit for bit.
  const Case& centre = cases[0];
  Operand infW{DType::F32, centre.w, {0.5, INFINITY, -1.0, 2.0, NAN}};
  expectConvParity("amp.conv2d", {{DType::F32, centre.x, {1.0, 2.0, -3.0}}, infW}, {{DType::F32, centre.y}},
                   centre.attrs);
  Operand infDy{DType::F32, centre.y, {0.5, INFINITY, -1.0, 2.0, 3.0, 1.0, -2.0}};
  expectConvParity("amp.conv2d_grad_weight", {{DType::F32, centre.x, {1.0, 2.0, -3.0}}, infDy},
                   {{DType::F32, centre.w}}, centre.attrs);
  // Groups: not this form.
  parity::SingleStep grouped = parity::singleStepPlan("amp.conv2d", {{DType::F32, {2, 4, 1, 1}}, {DType::F32, {6, 2, 3, 3}}},
                                                      {{DType::F32, {2, 6, 1, 1}}}, convAttrs({1, 1}, {1, 1}, {1, 1}, 2),
                                                      false, 1);
  auto cpu = openSession(grouped.plan, Device::Cpu);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  ASSERT_TRUE(cpu->run("eval", grouped.feeds).ok());
  EXPECT_EQ((**cpu->prepared("eval")).report().count("convolutions as one GEMM (1x1 output planes)"), 0);
}

// grad_weight over a small output plane (2 to 16 positions, one group): a GEMM per kernel tap
// over the positions it reads (ConvTapGemms.h), within the GEMM bound (K = N·OH·OW at most), with
// the report's count; the reference's NaN where padding meets a non-finite output gradient.
TEST(CpuLibraryOpParity, WeightGradientOverSmallPlanesIsAGemmPerTap) {
  struct Case {
    Shape x, w, y;
    AttrMap attrs;
  };
  const std::vector<Case> cases = {
      {{6, 24, 2, 2}, {20, 24, 3, 3}, {6, 20, 2, 2}, convAttrs({1, 1}, {1, 1}, {1, 1}, 1)},    // 2x2 map, 3x3 pad 1
      {{5, 12, 4, 4}, {8, 12, 3, 3}, {5, 8, 2, 2}, convAttrs({2, 2}, {1, 1}, {1, 1}, 1)},      // stride 2, 4x4 -> 2x2
      {{3, 6, 7, 7}, {5, 6, 3, 3}, {3, 5, 4, 4}, convAttrs({2, 2}, {1, 1}, {1, 1}, 1)},        // 7x7 -> 4x4
      {{4, 5, 3, 3}, {6, 5, 3, 3}, {4, 6, 3, 3}, convAttrs({1, 1}, {2, 2}, {2, 2}, 1)},        // dilated
      {{2, 3, 2, 5}, {4, 3, 1, 3}, {2, 4, 2, 3}, convAttrs({1, 1}, {0, 0}, {1, 1}, 1)},        // 1x3, not square
      {{3, 4, 2, 2}, {5, 4, 5, 5}, {3, 5, 2, 2}, convAttrs({1, 1}, {2, 2}, {1, 1}, 1)},        // taps that read nothing
      {{64, 96, 2, 2}, {80, 96, 3, 3}, {64, 80, 2, 2}, convAttrs({1, 1}, {1, 1}, {1, 1}, 1)},  // threads
  };
  for (const Case& c : cases)
    for (DType t : kFloats) {
      SCOPED_TRACE(::testing::Message() << dtypeName(t) << " x" << shapeToString(c.x) << " w" << shapeToString(c.w));
      const int64_t K = c.y[0] * c.y[2] * c.y[3];
      expectConvBound("amp.conv2d_grad_weight", {{t, c.x}, {t, c.y}}, {{t, c.w}}, c.attrs, K, false);
      parity::SingleStep single =
          parity::singleStepPlan("amp.conv2d_grad_weight", {{t, c.x}, {t, c.y}}, {{t, c.w}}, c.attrs, false, 1);
      auto cpu = openSession(single.plan, Device::Cpu);
      ASSERT_TRUE(cpu.ok()) << cpu.status();
      ASSERT_TRUE(cpu->run("eval", single.feeds).ok());
      auto prepared = cpu->prepared("eval");
      ASSERT_TRUE(prepared.ok());
      EXPECT_EQ((**prepared).report().count("weight gradients as a GEMM per tap (small output planes)"), 1);
    }
  const Case& padded = cases[0];
  Operand infDy{DType::F32, padded.y, {0.5, INFINITY, -1.0, 2.0, 3.0, 1.0, -2.0}};
  expectConvParity("amp.conv2d_grad_weight", {{DType::F32, padded.x, {1.0, 2.0, -3.0}}, infDy},
                   {{DType::F32, padded.w}}, padded.attrs);
}

TEST(CpuLibraryOpParity, ReductionsOverAnyDims) {
  for (DType t : kAllFloats)
    for (const char* op : {"amp.reduce_sum", "amp.reduce_mean", "amp.reduce_max"}) {
      expectParity(op, {{t, {6, 7, 30}}}, {{t, {7}}}, {{"dims", std::vector<int64_t>{0, 2}}, {"keepdim", false}});
      expectParity(op, {{t, {4, 5, 6, 7}}}, {{t, {1, 5, 1, 7}}}, {{"dims", std::vector<int64_t>{0, 2}}, {"keepdim", true}});
      expectParity(op, {{t, {4, 5, 6, 7}}}, {{t, {4, 6}}}, {{"dims", std::vector<int64_t>{1, 3}}, {"keepdim", false}});
      expectParity(op, {{t, {6, 7}}}, {{t, {6, 7}}}, {{"dims", std::vector<int64_t>{}}, {"keepdim", false}});
    }
  for (const char* op : {"amp.reduce_sum", "amp.reduce_mean", "amp.reduce_max"}) {
    expectParity(op, {{DType::F8E4M3FN, {128, 33}}}, {{DType::F8E4M3FN, {33}}}, {{"dims", std::vector<int64_t>{0}}});
    expectParity(op, {{DType::F32, {64, 3, 300}}}, {{DType::F32, {3}}}, {{"dims", std::vector<int64_t>{0, 2}}});
  }
  expectParity("amp.reduce_sum", {{DType::F32, {3, 0, 4}}}, {{DType::F32, {4}}}, {{"dims", std::vector<int64_t>{0, 1}}});
  expectParity("amp.reduce_mean", {{DType::BF16, {3, 0, 4}}}, {{DType::BF16, {0}}}, {{"dims", std::vector<int64_t>{0, 2}}});
}

// Values for reductions: normal values with NaN, +-inf, -0 and huge values sprinkled at prime
// spacings, so that rows see a NaN before or after their maximum, inf + -inf, overflow to inf,
// and others stay finite. Cycled over the tensor (1009 is prime, so rows start at varied phases).
std::vector<double> reductionValues() {
  std::mt19937 rng(11);
  std::normal_distribution<double> normal(0.0, 2.0);
  std::vector<double> v(1009);
  for (double& x : v) x = normal(rng);
  for (size_t i = 0; i < v.size(); ++i) {
    if (i % 211 == 17) v[i] = NAN;
    if (i % 307 == 40) v[i] = INFINITY;
    if (i % 401 == 90) v[i] = -INFINITY;
    if (i % 97 == 5) v[i] = -0.0;
    if (i % 151 == 3) v[i] = 3.0e38;  // a few of these overflow an f32 sum
  }
  return v;
}

// The cpu kernel's shapes of reduction: over the last dim (inner == 1: rows summed eight at a
// time, a group tail, rows longer than one converted tile), over a dim followed by a small inner
// (< 256: blocks of rows converted at once), and over a dim followed by a large one.
TEST(CpuLibraryOpParity, ReductionsOverTheLastDimAndSmallInners) {
  const std::vector<double> values = reductionValues();
  struct Case {
    Shape in;
    std::vector<int64_t> dims;
  };
  const Case cases[] = {
      {{1001, 128}, {1}},      // softmax backward's sum: 8-row groups, a tail of one row, threads
      {{37, 129}, {1}},        // a tail of five rows
      {{3, 5, 2500}, {2}},     // rows spanning three tiles
      {{5, 6, 7}, {1, 2}},     // last two dims reduced: inner == 1
      {{13, 1}, {1}},          // r == 1
      {{9, 0}, {1}},           // r == 0: sums are 0, means NaN
      {{7, 700, 3}, {1}},      // inner 3: several blocks of rows per output
      {{5, 1000, 2}, {1}},     // inner 2
      {{4, 33, 255}, {1}},     // inner 255, the largest small inner
      {{4, 9, 17}, {0}},       // outer 1, inner 153
      {{3, 11, 256}, {1}},     // inner 256: the chunked kernel
      {{2, 5, 600}, {1}},      // inner 600: a partial chunk
      {{2, 300, 260}, {1}},    // inner 260, 300 rows: the chunked kernel over two blocks of the sum order
  };
  for (DType t : kFloats)
    for (const char* op : {"amp.reduce_sum", "amp.reduce_mean", "amp.reduce_max"})
      for (const Case& c : cases) {
        if (std::string(op) == "amp.reduce_max" && c.in.back() == 0) continue;  // the reference's error
        for (bool keepdim : {false, true}) {
          Shape out;
          for (int64_t d = 0; d < int64_t(c.in.size()); ++d) {
            const bool reduced = std::find(c.dims.begin(), c.dims.end(), d) != c.dims.end();
            if (!reduced || keepdim) out.push_back(reduced ? 1 : c.in[d]);
          }
          SCOPED_TRACE(std::string(dtypeName(t)) + " " + shapeToString(c.in) + (keepdim ? " keepdim" : ""));
          // A sum meeting inf - inf's NaN and an input NaN returns either (docs/numerics.md); a
          // max picks its NaN by the reference's rule, so there every bit must match.
          const bool anyNan = std::string(op) != "amp.reduce_max";
          expectParity(op, {{t, c.in, values}}, {{t, out}}, {{"dims", c.dims}, {"keepdim", keepdim}}, true, 1, 0, anyNan);
          expectParity(op, {{t, c.in}}, {{t, out}}, {{"dims", c.dims}, {"keepdim", keepdim}}, true, 5);
        }
      }
}

// Transposes of ranks 2..5 and element sizes 1, 2, 4 and 8: the head split/merge (contiguous
// rows: memcpy), transposes of the last two dims and [B,T,D] -> [B,D,T] (tiles, with partial
// tiles), size-1 dims (dropped), runs of dims that stay together (merged) and an empty tensor.
TEST(CpuLibraryOpParity, TransposesOfEveryShapeOfCopy) {
  struct Case {
    Shape in;
    std::vector<int64_t> perm;
  };
  const Case cases[] = {
      {{33, 70}, {1, 0}},
      {{65, 130}, {1, 0}},
      {{1, 7}, {1, 0}},
      {{3, 37, 45}, {0, 2, 1}},
      {{3, 37, 45}, {2, 0, 1}},
      {{3, 37, 45}, {1, 0, 2}},
      {{4, 17, 3, 8}, {0, 2, 1, 3}},   // [B,T,H,D] -> [B,H,T,D]
      {{4, 3, 17, 8}, {0, 2, 1, 3}},   // and back
      {{4, 17, 3, 8}, {0, 2, 3, 1}},   // [B,T,H,D] -> [B,H,D,T]
      {{2, 33, 1, 40}, {0, 3, 2, 1}},  // a size-1 dim between
      {{5, 6, 7, 9}, {3, 2, 1, 0}},
      {{2, 3, 4, 5, 6}, {0, 1, 4, 2, 3}},  // the last dim moves before a merged pair
      {{2, 3, 4, 5, 6}, {4, 3, 0, 2, 1}},
      {{3, 1, 5, 1, 2}, {4, 3, 2, 1, 0}},
      {{3, 0, 5}, {2, 1, 0}},
      {{16, 128, 4, 32}, {0, 2, 1, 3}},  // GPT's head split: 64-byte bf16 rows, threads
      {{16, 128, 4, 32}, {0, 2, 3, 1}},  // and its key transpose: whole register blocks
      {{3, 67, 29}, {0, 2, 1}},          // blocks with ragged right and bottom edges
  };
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::I64, DType::Bool, DType::F8E4M3FN})
    for (const Case& c : cases) {
      Shape out;
      for (int64_t d : c.perm) out.push_back(c.in[d]);
      SCOPED_TRACE(std::string(dtypeName(t)) + " " + shapeToString(c.in));
      expectParity("amp.transpose", {{t, c.in}}, {{t, out}}, {{"permutation", c.perm}});
    }
}

TEST(CpuLibraryOpParity, CompareOnIntegersBoolsAndF8) {
  for (DType t : {DType::I64, DType::I32, DType::Bool, DType::U8, DType::F8E4M3FN, DType::F8E5M2})
    for (const char* pred : {"eq", "ne", "lt", "le", "gt", "ge"}) {
      expectParity("amp.compare", {{t, {33, 70}}, {t, {33, 70}}}, {{DType::Bool, {33, 70}}}, {{"predicate", std::string(pred)}});
      expectParity("amp.compare", {{t, {4, 1, 5}}, {t, {3, 1}}}, {{DType::Bool, {4, 3, 5}}}, {{"predicate", std::string(pred)}});
    }
  expectParity("amp.compare", {{DType::I64, {300, 257}}, {DType::I64, {}, {4}}}, {{DType::Bool, {300, 257}}},
               {{"predicate", std::string("le")}});
}

TEST(CpuLibraryOpParity, ScalarTranspose) {
  for (DType t : {DType::F32, DType::BF16, DType::I64})
    expectParity("amp.transpose", {{t, {}}}, {{t, {}}}, {{"permutation", std::vector<int64_t>{}}});
}

}  // namespace
}  // namespace amp::rt
