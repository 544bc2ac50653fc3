#include "distflow/tensor_shape.h"

#include "gtest/gtest.h"

namespace distflow {
namespace {

TEST(TensorShapeTest, CountsElementsAndPrints) {
  TensorShape s({2, 3, 4});
  EXPECT_EQ(s.dims(), 3);
  EXPECT_EQ(s.num_elements(), 24);
  EXPECT_EQ(s.DebugString(), "[2,3,4]");
  EXPECT_EQ(TensorShape().num_elements(), 1);
  EXPECT_EQ(TensorShape().DebugString(), "[]");
  EXPECT_EQ(TensorShape({5, 0}).num_elements(), 0);
}

TEST(TensorShapeTest, FromDimsRejectsNegativeAndOverflow) {
  auto bad = TensorShape::FromDims({2, -1});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("[2,?]"), std::string::npos)
      << bad.status();
  auto huge = TensorShape::FromDims({int64_t{1} << 40, int64_t{1} << 40});
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("int64"), std::string::npos);
  EXPECT_TRUE(TensorShape::FromDims({3, 4}).ok());
}

TEST(PartialTensorShapeTest, UnknownRankAndDims) {
  PartialTensorShape unknown;
  EXPECT_TRUE(unknown.unknown_rank());
  EXPECT_EQ(unknown.dims(), -1);
  EXPECT_EQ(unknown.DebugString(), "<unknown>");
  PartialTensorShape batch({-1, 784});
  EXPECT_EQ(batch.DebugString(), "[?,784]");
  EXPECT_FALSE(batch.IsFullyDefined());
  EXPECT_EQ(batch.num_elements(), -1);
  EXPECT_FALSE(batch.AsTensorShape().ok());
  EXPECT_EQ(PartialTensorShape({2, 3}).AsTensorShape().value(),
            TensorShape({2, 3}));
}

TEST(PartialTensorShapeTest, MergeFillsUnknownsAndRejectsConflicts) {
  auto merged =
      PartialTensorShape({-1, 784}).MergeWith(PartialTensorShape({32, -1}));
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged->DebugString(), "[32,784]");
  EXPECT_EQ(
      PartialTensorShape().MergeWith(PartialTensorShape({1}))->DebugString(),
      "[1]");
  auto conflict =
      PartialTensorShape({2, 3}).MergeWith(PartialTensorShape({2, 4}));
  ASSERT_FALSE(conflict.ok());
  EXPECT_NE(conflict.status().message().find("[2,3] and [2,4]"),
            std::string::npos);
  EXPECT_FALSE(
      PartialTensorShape({2}).IsCompatibleWith(PartialTensorShape({2, 1})));
  EXPECT_TRUE(PartialTensorShape({-1}).IsCompatibleWith(TensorShape({7})));
}

}  // namespace
}  // namespace distflow
