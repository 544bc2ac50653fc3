// The checked sizes behind every tensor that outside bytes describe:
// TensorByteSize, Tensor::Create, and the decoders that use them.
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "base/file.h"
#include "core/safetensors.h"
#include "core/tensor_coding.h"
#include "distflow/tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr int64_t k2to62 = int64_t{1} << 62;

TEST(TensorByteSizeTest, SizesOrdinaryShapes) {
  EXPECT_EQ(TensorByteSize(DataType::kFloat, TensorShape({2, 3})).value(), 24u);
  EXPECT_EQ(TensorByteSize(DataType::kDouble, TensorShape()).value(), 8u);
  EXPECT_EQ(TensorByteSize(DataType::kUInt8, TensorShape({0, 7})).value(), 0u);
  EXPECT_EQ(TensorByteSize(DataType::kString, TensorShape({3})).value(),
            3 * sizeof(std::string));
  EXPECT_EQ(TensorByteSize(DataType::kResource, TensorShape({1})).value(),
            sizeof(ResourceHandle));
  // Exactly the cap is allowed.
  EXPECT_EQ(TensorByteSize(DataType::kUInt8,
                           TensorShape({static_cast<int64_t>(kMaxTensorBytes)}))
                .value(),
            kMaxTensorBytes);
}

TEST(TensorByteSizeTest, OverflowAndCapAreResourceExhaustedNamingTheShape) {
  // float32[2^62] is 2^64 bytes: a multiplication that wraps to 0.
  auto wraps = TensorByteSize(DataType::kFloat, TensorShape({k2to62}));
  EXPECT_EQ(wraps.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(wraps.status().message(),
              AllOf(HasSubstr("float32"), HasSubstr("[4611686018427387904]")));

  auto over_cap =
      TensorByteSize(DataType::kUInt8,
                     TensorShape({static_cast<int64_t>(kMaxTensorBytes) + 1}));
  EXPECT_EQ(over_cap.status().code(), absl::StatusCode::kResourceExhausted);

  auto strings = TensorByteSize(DataType::kString, TensorShape({1 << 30, 64}));
  EXPECT_EQ(strings.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(TensorByteSizeTest, InvalidDtypeIsInvalidArgument) {
  auto bad = TensorByteSize(DataType::kInvalid, TensorShape({2}));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  auto unknown = TensorByteSize(static_cast<DataType>(77), TensorShape({2}));
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TensorCreateTest, CreatesZeroedTensorsAndRefusesBadSizes) {
  auto t = Tensor::Create(DataType::kInt32, TensorShape({3}));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->Equals(Tensor::Vector<int32_t>({0, 0, 0})));
  auto s = Tensor::Create(DataType::kString, TensorShape({2}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->flat<std::string>()[1], "");

  auto huge = Tensor::Create(DataType::kFloat, TensorShape({k2to62}));
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(huge.status().message(), HasSubstr("[4611686018427387904]"));
  EXPECT_EQ(Tensor::Create(DataType::kInvalid, TensorShape()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TensorCreateTest, ConstructorThrowsBadAllocForRefusedSizes) {
  EXPECT_THROW(Tensor(DataType::kFloat, TensorShape({k2to62})), std::bad_alloc);
  EXPECT_THROW(Tensor::Uninitialized(DataType::kDouble, TensorShape({k2to62})),
               std::bad_alloc);
}

// A TensorProto (a feed, a Const attribute) declaring float32[2^62] with no
// content: the byte count used to wrap to 0 and match the empty content.
TEST(TensorFromProtoTest, ShapeWhoseSizeWrapsIsRefusedNamingIt) {
  for (proto::DataType dtype : {proto::DT_FLOAT, proto::DT_INT64,
                                proto::DT_STRING, proto::DT_RESOURCE}) {
    proto::TensorProto p;
    p.set_dtype(dtype);
    p.mutable_shape()->add_dim(k2to62);
    auto t = TensorFromProto(p);
    ASSERT_FALSE(t.ok()) << dtype;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted)
        << t.status();
    EXPECT_THAT(t.status().message(), HasSubstr("[4611686018427387904]"));
  }
  // Dimensions whose product overflows int64.
  proto::TensorProto p;
  p.set_dtype(proto::DT_FLOAT);
  p.mutable_shape()->add_dim(int64_t{1} << 32);
  p.mutable_shape()->add_dim(int64_t{1} << 32);
  EXPECT_EQ(TensorFromProto(p).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Large but under the cap, with no content: refused before allocating.
  proto::TensorProto big;
  big.set_dtype(proto::DT_FLOAT);
  big.mutable_shape()->add_dim(int64_t{1} << 33);
  auto t = TensorFromProto(big);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("content bytes"));
}

TEST(TensorFromProtoTest, EmptyTensorsWithLargeDimensionsDecode) {
  proto::TensorProto p;
  p.set_dtype(proto::DT_FLOAT);
  p.mutable_shape()->add_dim(int64_t{1} << 32);
  p.mutable_shape()->add_dim(0);
  auto t = TensorFromProto(p);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->NumElements(), 0);
  // Printing it (as error messages do) is summarized, not 2^32 rows long.
  EXPECT_EQ(t->DebugString(), "[]");
}

TEST(SafetensorsLimitsTest, HeaderShapeWhoseSizeWrapsIsDataLoss) {
  std::string dir = ::testing::TempDir() + "distflow_limits_XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::string path = dir + "/huge.safetensors";
  // F32 [2^62] claims 0 bytes: the old check compared a wrapped size.
  const std::string header =
      R"({"a": {"dtype": "F32", "shape": [4611686018427387904], )"
      R"("data_offsets": [0, 0]}})";
  std::string bytes(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(bytes.data(), &n, 8);
  ASSERT_TRUE(WriteFileAtomically(path, bytes + header).ok());
  auto reader = SafetensorsReader::Open(path);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(reader.status().message(),
              AllOf(HasSubstr("tensor 'a'"), HasSubstr(path)));

  // Arrays nested a million deep are refused without recursing through them.
  std::string deep = R"({"a": {"dtype": "F32", "shape": )";
  deep += std::string(1'000'000, '[') + std::string(1'000'000, ']');
  deep += R"(, "data_offsets": [0, 0]}})";
  bytes.assign(8, '\0');
  const uint64_t m = deep.size();
  std::memcpy(bytes.data(), &m, 8);
  ASSERT_TRUE(WriteFileAtomically(path, bytes + deep).ok());
  reader = SafetensorsReader::Open(path);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace distflow
