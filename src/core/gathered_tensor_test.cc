#include "core/gathered_tensor.h"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace distflow {
namespace {

// The bytes of `ranges` end to end, as floats.
std::vector<float> FloatsOf(const ByteRanges& ranges) {
  std::string bytes;
  for (absl::Span<const char> r : ranges) bytes.append(r.data(), r.size());
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

TEST(GatheredTensorTest, RangesPointIntoThePartsWithoutACopy) {
  const Tensor a = Tensor::Matrix<float>({{1, 2}, {3, 4}});
  const Tensor b = Tensor::Vector<float>({5, 6, 7});
  absl::StatusOr<Tensor> g = GatherTensors(DataType::kFloat, {a, b});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->shape(), TensorShape({7}));
  EXPECT_EQ(g->TotalBytes(), 7 * sizeof(float));

  const ByteRanges ranges = TensorByteRanges(*g);
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0].data(), a.raw_data());
  EXPECT_EQ(ranges[0].size(), 4 * sizeof(float));
  EXPECT_EQ(ranges[1].data(), b.raw_data());
  EXPECT_EQ(ranges[1].size(), 3 * sizeof(float));
}

TEST(GatheredTensorTest, ReadingTheElementsGivesThemEndToEnd) {
  const Tensor a = Tensor::Matrix<float>({{1, 2}, {3, 4}});
  const Tensor b = Tensor::Vector<float>({5, 6, 7});
  absl::StatusOr<Tensor> g = GatherTensors(DataType::kFloat, {a, b});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(std::vector<float>(g->flat<float>().begin(), g->flat<float>().end()),
            (std::vector<float>{1, 2, 3, 4, 5, 6, 7}));
  // The contiguous copy is made once and is stable.
  EXPECT_EQ(g->raw_data(), g->raw_data());
  EXPECT_NE(g->raw_data(), a.raw_data());
}

TEST(GatheredTensorTest, ViewsOfAGatheredTensorCutTheRanges) {
  const Tensor a = Tensor::Vector<float>({1, 2, 3});
  const Tensor b = Tensor::Vector<float>({});
  const Tensor c = Tensor::Vector<float>({4, 5, 6, 7});
  absl::StatusOr<Tensor> g = GatherTensors(DataType::kFloat, {a, b, c});
  ASSERT_TRUE(g.ok()) << g.status();
  // Empty parts give no range.
  EXPECT_EQ(TensorByteRanges(*g).size(), 2u);
  // Elements [2, 5): the last of a and the first two of c.
  const Tensor view = g->Slice(2, 5);
  const ByteRanges ranges = TensorByteRanges(view);
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(FloatsOf(ranges), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(ranges[1].data(), c.raw_data());
}

TEST(GatheredTensorTest, AnOrdinaryTensorIsOneRange) {
  const Tensor t = Tensor::Vector<float>({1, 2, 3, 4});
  const ByteRanges ranges = TensorByteRanges(t.Slice(1, 3));
  ASSERT_EQ(ranges.size(), 1u);
  EXPECT_EQ(FloatsOf(ranges), (std::vector<float>{2, 3}));
  EXPECT_TRUE(TensorByteRanges(Tensor::Vector<float>({})).empty());
}

TEST(GatheredTensorTest, RefusesMixedOrVariableSizeTypes) {
  absl::StatusOr<Tensor> mixed = GatherTensors(
      DataType::kFloat,
      {Tensor::Vector<float>({1}), Tensor::Vector<int32_t>({2})});
  EXPECT_EQ(mixed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mixed.status().message().find("part 1 of type int32"),
            std::string::npos)
      << mixed.status();
  absl::StatusOr<Tensor> strings = GatherTensors(
      DataType::kString, {Tensor::Scalar<std::string>("a")});
  EXPECT_EQ(strings.status().code(), absl::StatusCode::kInvalidArgument);
}

// Taking a member back out of a gathered tensor views the part itself (a
// received pack whose parts were mapped, not copied together).
TEST(GatheredTensorTest, ElementsWithinOnePartAreAViewOfIt) {
  Tensor a = Tensor::Vector<float>({1, 2, 3});
  Tensor b = *Tensor::Vector<float>({4, 5, 6, 7}).Reshape(TensorShape({2, 2}));
  absl::StatusOr<Tensor> packed = GatherTensors(DataType::kFloat, {a, b});
  ASSERT_TRUE(packed.ok()) << packed.status();
  std::optional<Tensor> second = GatheredElements(*packed, 3, 7);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->shape(), TensorShape({4}));
  EXPECT_EQ(second->raw_data(), b.raw_data());
  std::optional<Tensor> inner = GatheredElements(*packed, 1, 3);
  ASSERT_TRUE(inner.has_value());
  EXPECT_EQ(inner->flat<float>()[0], 2);
  EXPECT_TRUE(inner->SharesBufferWith(a));
  // A view of the gathered tensor counts from its own start.
  std::optional<Tensor> shifted = GatheredElements(packed->Slice(3, 7), 1, 2);
  ASSERT_TRUE(shifted.has_value());
  EXPECT_EQ(shifted->flat<float>()[0], 5);
  // Across two parts, or of an ordinary tensor: no view.
  EXPECT_FALSE(GatheredElements(*packed, 2, 4).has_value());
  EXPECT_FALSE(GatheredElements(a, 0, 1).has_value());
}

}  // namespace
}  // namespace distflow
