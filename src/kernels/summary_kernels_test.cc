// ScalarSummary and MergeSummary run through a local session.
#include <string>

#include "distflow/ops.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"
#include "proto/summary.pb.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

proto::Summary Parse(const Tensor& t) {
  proto::Summary summary;
  EXPECT_EQ(t.dtype(), DataType::kString);
  EXPECT_EQ(t.dims(), 0);
  EXPECT_TRUE(summary.ParseFromString(t.scalar<std::string>()));
  return summary;
}

TEST(SummaryKernelsTest, ScalarSummaryOfEveryRealType) {
  Scope root = Scope::NewRootScope();
  const Tensor values[] = {
      Tensor::Scalar<float>(0.25f), Tensor::Scalar<double>(-1.5),
      Tensor::Scalar<int32_t>(7), Tensor::Scalar<int64_t>(int64_t{1} << 40),
      Tensor::Scalar<uint8_t>(200)};
  const float expected[] = {0.25f, -1.5f, 7.0f, 1099511627776.0f, 200.0f};
  for (int i = 0; i < 5; ++i) {
    Output s = ops::ScalarSummary(root, "v", values[i]);
    auto out = test::RunOne(root, s);
    ASSERT_TRUE(out.ok()) << out.status();
    proto::Summary summary = Parse(*out);
    ASSERT_EQ(summary.value_size(), 1);
    EXPECT_EQ(summary.value(0).tag(), "v");
    EXPECT_EQ(summary.value(0).simple_value(), expected[i])
        << values[i].TypeString();
  }
}

TEST(SummaryKernelsTest, ScalarSummaryOfAComputedLoss) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root, DataType::kFloat, {3});
  Output loss = ops::Mean(root, ops::Square(root, x), 0);
  Output s = ops::ScalarSummary(root, "train/loss", loss);
  auto out = test::RunOne(root, s, {{x, Tensor::Vector<float>({1, 2, 3})}});
  ASSERT_TRUE(out.ok()) << out.status();
  proto::Summary summary = Parse(*out);
  EXPECT_EQ(summary.value(0).tag(), "train/loss");
  EXPECT_FLOAT_EQ(summary.value(0).simple_value(), 14.0f / 3);
}

TEST(SummaryKernelsTest, NonScalarValueIsRefusedWhenBuilding) {
  Scope root = Scope::NewRootScope();
  ops::ScalarSummary(root.WithOpName("loss_summary"), "loss",
                     Tensor::Matrix<float>({{1, 2, 3}, {4, 5, 6}}));
  ASSERT_FALSE(root.ok());
  EXPECT_THAT(root.status().message(), HasSubstr("ScalarSummary"));
  EXPECT_THAT(root.status().message(), HasSubstr("loss_summary"));
  EXPECT_THAT(root.status().message(), HasSubstr("[2,3]"));
}

TEST(SummaryKernelsTest, NonScalarValueOfUnknownShapeIsRefusedWhenRun) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root, DataType::kFloat);
  Output s = ops::ScalarSummary(root.WithOpName("loss_summary"), "loss", x);
  ASSERT_TRUE(root.ok()) << root.status();
  auto out = test::RunOne(root, s, {{x, Tensor::Vector<float>({1, 2})}});
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(out.status())) << out.status();
  EXPECT_THAT(out.status().message(),
              HasSubstr("ScalarSummary 'loss_summary'"));
  EXPECT_THAT(out.status().message(), HasSubstr("float32[2]"));
}

TEST(SummaryKernelsTest, MergeSummaryKeepsEveryValueInOrder) {
  Scope root = Scope::NewRootScope();
  Output a = ops::ScalarSummary(root, "loss", 0.5f);
  Output b = ops::ScalarSummary(root, "accuracy", 0.875f);
  Output c = ops::ScalarSummary(root, "lr", 0.01);
  Output merged = ops::MergeSummary(root, {ops::MergeSummary(root, {a, b}), c});
  auto out = test::RunOne(root, merged);
  ASSERT_TRUE(out.ok()) << out.status();
  proto::Summary summary = Parse(*out);
  ASSERT_EQ(summary.value_size(), 3);
  EXPECT_EQ(summary.value(0).tag(), "loss");
  EXPECT_EQ(summary.value(0).simple_value(), 0.5f);
  EXPECT_EQ(summary.value(1).tag(), "accuracy");
  EXPECT_EQ(summary.value(1).simple_value(), 0.875f);
  EXPECT_EQ(summary.value(2).tag(), "lr");
}

TEST(SummaryKernelsTest, MergeSummaryRefusesDuplicateTagsAndJunk) {
  Scope root = Scope::NewRootScope();
  Output a = ops::ScalarSummary(root, "loss", 1.0f);
  Output b = ops::ScalarSummary(root, "loss", 2.0f);
  auto dup = test::RunOne(root, ops::MergeSummary(root, {a, b}));
  EXPECT_TRUE(absl::IsInvalidArgument(dup.status())) << dup.status();
  EXPECT_THAT(dup.status().message(), HasSubstr("tag 'loss'"));

  auto junk = test::RunOne(
      root, ops::MergeSummary(root, {a, std::string("\xff\xff\xff")}));
  EXPECT_TRUE(absl::IsInvalidArgument(junk.status())) << junk.status();
  EXPECT_THAT(junk.status().message(), HasSubstr("input 1"));

  Scope other = Scope::NewRootScope();
  ops::MergeSummary(other, {ops::Const(other, 1.0f)});
  EXPECT_FALSE(other.ok());
  EXPECT_THAT(other.status().message(), HasSubstr("MergeSummary"));
}

}  // namespace
}  // namespace distflow
