// reshape, transpose, broadcast_to, slice, concat, embedding: bit copies checked index by index.
#include "RefTestUtil.h"

namespace amp::rt {
namespace {
using namespace reftest;

std::vector<double> iota(int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = double(i);
  return v;
}

TEST(RefShape, ReshapeKeepsRowMajorOrder) {
  Tensor X = make(DType::BF16, {2, 3}, iota(6));
  Tensor y = runOk("amp.reshape", {&X}, {}, {DType::BF16, {3, 1, 2}});
  EXPECT_EQ(y.shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(values(y), iota(6));
  expectError(run("amp.reshape", {&X}, {}, {DType::BF16, {4}}), "element counts differ");
  expectError(run("amp.reshape", {&X}, {}, {DType::F32, {6}}), "does not match the computed type");
}

TEST(RefShape, TransposeThreeDims) {
  Tensor X = make(DType::F32, {2, 3, 4}, iota(24));
  Tensor y = runOk("amp.transpose", {&X}, {{"permutation", std::vector<int64_t>{2, 0, 1}}}, {DType::F32, {4, 2, 3}});
  std::vector<double> g = values(y);
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 3; ++c) EXPECT_EQ(g[(a * 2 + b) * 3 + c], (b * 3 + c) * 4 + a);
  expectError(run("amp.transpose", {&X}, {{"permutation", std::vector<int64_t>{0, 0, 1}}}, {DType::F32, {2, 2, 3}}),
              "not a permutation");
}

TEST(RefShape, TransposeCopiesIntegerBits) {
  Tensor X = makeI64({2, 2}, {int64_t{1} << 60, 2, 3, -(int64_t{1} << 62)});
  Tensor y = runOk("amp.transpose", {&X}, {{"permutation", std::vector<int64_t>{1, 0}}}, {DType::I64, {2, 2}});
  EXPECT_EQ(y.as<int64_t>()[1], 3);
  EXPECT_EQ(y.as<int64_t>()[2], 2);
  EXPECT_EQ(y.as<int64_t>()[3], -(int64_t{1} << 62));
}

TEST(RefShape, BroadcastToNumpyRules) {
  Tensor X = make(DType::F16, {3, 1}, {1, 2, 3});
  Tensor y = runOk("amp.broadcast_to", {&X}, {}, {DType::F16, {2, 3, 4}});
  std::vector<double> g = values(y);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(g[i], 1 + (i / 4) % 3);
  expectError(run("amp.broadcast_to", {&X}, {}, {DType::F16, {2, 4}}), "cannot broadcast");
  expectError(run("amp.broadcast_to", {&X}, {}, {DType::F16, {1}}), "cannot broadcast");
}

TEST(RefShape, SliceWithStrides) {
  Tensor X = make(DType::F32, {4, 5}, iota(20));
  AttrMap attrs{{"starts", std::vector<int64_t>{1, 0}}, {"limits", std::vector<int64_t>{4, 5}},
                {"strides", std::vector<int64_t>{2, 2}}};
  Tensor y = runOk("amp.slice", {&X}, attrs, {DType::F32, {2, 3}});
  EXPECT_EQ(values(y), (std::vector<double>{5, 7, 9, 15, 17, 19}));
  attrs.set("limits", std::vector<int64_t>{4, 6});
  expectError(run("amp.slice", {&X}, attrs, {DType::F32, {2, 3}}), "dim 1");
  attrs.set("limits", std::vector<int64_t>{4});
  expectError(run("amp.slice", {&X}, attrs, {DType::F32, {2, 3}}), "must each have 2 entries");
}

TEST(RefShape, ConcatVariadicAlongMiddleAxis) {
  Tensor A = make(DType::F32, {2, 1, 2}, {0, 1, 2, 3});
  Tensor B = make(DType::F32, {2, 2, 2}, {10, 11, 12, 13, 14, 15, 16, 17});
  Tensor C = make(DType::F32, {2, 0, 2}, {});
  Tensor y = runOk("amp.concat", {&A, &B, &C, &A}, {{"axis", int64_t{1}}}, {DType::F32, {2, 4, 2}});
  EXPECT_EQ(values(y), (std::vector<double>{0, 1, 10, 11, 12, 13, 0, 1, 2, 3, 14, 15, 16, 17, 2, 3}));
  Tensor D = make(DType::F32, {3, 1, 2}, std::vector<double>(6, 0.0));
  expectError(run("amp.concat", {&A, &D}, {{"axis", int64_t{1}}}, {DType::F32, {2, 2, 2}}), "outside axis 1");
  Tensor H = make(DType::F16, {2, 1, 2}, std::vector<double>(4, 0.0));
  expectError(run("amp.concat", {&A, &H}, {{"axis", int64_t{1}}}, {DType::F32, {2, 2, 2}}), "same element type");
}

TEST(RefShape, EmbeddingGathersRowsForI32AndI64Ids) {
  Tensor T = make(DType::BF16, {4, 3}, iota(12));
  Tensor ids64 = makeI64({2, 2}, {3, 0, 1, 3});
  Tensor ids32 = makeI32({3}, {2, 2, 0});
  std::vector<double> y = values(runOk("amp.embedding", {&T, &ids64}, {}, {DType::BF16, {2, 2, 3}}));
  EXPECT_EQ(y, (std::vector<double>{9, 10, 11, 0, 1, 2, 3, 4, 5, 9, 10, 11}));
  std::vector<double> z = values(runOk("amp.embedding", {&T, &ids32}, {}, {DType::BF16, {3, 3}}));
  EXPECT_EQ(z, (std::vector<double>{6, 7, 8, 6, 7, 8, 0, 1, 2}));
}

TEST(RefShape, EmbeddingRejectsOutOfRangeIdsNamingPosition) {
  Tensor T = make(DType::F32, {4, 3}, iota(12));
  Tensor bad = makeI64({2, 2}, {0, 1, 4, 2});
  expectError(run("amp.embedding", {&T, &bad}, {}, {DType::F32, {2, 2, 3}}),
              "amp.embedding: id 4 at position [1, 0] is out of range [0, 4)");
  Tensor neg = makeI32({1}, {-1});
  expectError(run("amp.embedding", {&T, &neg}, {}, {DType::F32, {1, 3}}), "id -1 at position [0]");
  Tensor fids = make(DType::F32, {1}, {0});
  expectError(run("amp.embedding", {&T, &fids}, {}, {DType::F32, {1, 3}}), "must have element type i32 or i64");
}

}  // namespace
}  // namespace amp::rt
