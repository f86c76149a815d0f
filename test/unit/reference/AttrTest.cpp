#include <gtest/gtest.h>

#include "runtime/plan/Attr.h"

namespace amp::rt {
namespace {

TEST(RefAttr, TypedGettersReturnStoredValues) {
  AttrMap m{{"groups", int64_t{2}},
            {"eps", 1e-5},
            {"keepdim", true},
            {"approximate", std::string("tanh")},
            {"stride", std::vector<int64_t>{2, 1}},
            {"scales", std::vector<double>{0.5, 2.0}}};
  EXPECT_EQ(*m.getInt("amp.conv2d", "groups"), 2);
  EXPECT_EQ(*m.getDouble("amp.layer_norm", "eps"), 1e-5);
  EXPECT_EQ(*m.getBool("amp.reduce_sum", "keepdim"), true);
  EXPECT_EQ(*m.getString("amp.gelu", "approximate"), "tanh");
  EXPECT_EQ(*m.getInts("amp.conv2d", "stride"), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(*m.getDoubles("x", "scales"), (std::vector<double>{0.5, 2.0}));
  EXPECT_EQ(m.size(), 6u);
  // Ordered by name.
  EXPECT_EQ(m.begin()->first, "approximate");
}

TEST(RefAttr, MissingAttributeNamesOpAndAttribute) {
  AttrMap m;
  auto r = m.getInts("amp.conv2d", "stride");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "amp.conv2d: missing attribute 'stride'");
  EXPECT_FALSE(m.getTensor("amp.constant", "value").ok());
}

TEST(RefAttr, WrongKindIsAnErrorNotAConversion) {
  AttrMap m{{"keepdim", int64_t{1}}, {"groups", true}, {"name", std::string("x")}};
  auto b = m.getBool("amp.reduce_sum", "keepdim");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(), "amp.reduce_sum: attribute 'keepdim' must be a bool, got integer");
  EXPECT_FALSE(m.getInt("amp.conv2d", "groups").ok());
  EXPECT_FALSE(m.getInts("op", "name").ok());
  // A default does not hide a kind mismatch.
  EXPECT_FALSE(m.getBool("amp.reduce_sum", "keepdim", false).ok());
}

TEST(RefAttr, DefaultsAndNumericPromotion) {
  AttrMap m{{"rate", int64_t{0}}, {"dims", std::vector<int64_t>{1, 2}}};
  EXPECT_EQ(*m.getDouble("amp.dropout", "rate"), 0.0);  // integer promotes to float
  EXPECT_EQ(*m.getDoubles("op", "dims"), (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(*m.getInt("amp.cross_entropy", "ignore_index", -100), -100);
  EXPECT_EQ(*m.getDouble("amp.cross_entropy", "label_smoothing", 0.25), 0.25);
  EXPECT_EQ(*m.getBool("amp.matmul", "transpose_a", false), false);
  EXPECT_EQ(*m.getString("amp.gelu", "approximate", "none"), "none");
  m.set("rate", 0.5);  // set replaces
  EXPECT_EQ(*m.getDouble("amp.dropout", "rate"), 0.5);
}

TEST(RefAttr, TensorAttribute) {
  Tensor t(DType::F32, {2});
  t.as<float>()[1] = 3.0f;
  AttrMap m;
  m.set("value", t);
  auto p = m.getTensor("amp.constant", "value");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE((*p)->bitwiseEquals(t));
}

}  // namespace
}  // namespace amp::rt
