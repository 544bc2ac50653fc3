#include "distflow/tensor.h"

#include <cstdint>
#include <string>

#include "gtest/gtest.h"

namespace distflow {
namespace {

TEST(TensorTest, AllocatesZeroedAlignedBuffers) {
  for (DataType dt : {DataType::kFloat, DataType::kDouble, DataType::kInt32,
                      DataType::kInt64, DataType::kUInt8, DataType::kBool}) {
    Tensor t(dt, TensorShape({3, 5}));
    EXPECT_EQ(t.dtype(), dt);
    EXPECT_EQ(t.NumElements(), 15);
    EXPECT_EQ(t.TotalBytes(), 15 * DataTypeSize(dt));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u)
        << DataTypeName(dt);
    const auto* bytes = static_cast<const uint8_t*>(t.raw_data());
    for (size_t i = 0; i < t.TotalBytes(); ++i) ASSERT_EQ(bytes[i], 0);
  }
  Tensor s(DataType::kString, TensorShape({2}));
  EXPECT_EQ(s.flat<std::string>()[0], "");
}

TEST(TensorTest, BuildersAndElementAccess) {
  Tensor m = Tensor::Matrix<float>({{1, 2, 3, 4}});
  EXPECT_EQ(m.shape(), TensorShape({1, 4}));
  EXPECT_EQ(m.flat<float>()[3], 4.0f);
  Tensor v = Tensor::Vector<int64_t>({7, 8});
  EXPECT_EQ(v.shape(), TensorShape({2}));
  EXPECT_EQ(Tensor::Scalar<int32_t>(5).scalar<int32_t>(), 5);
  EXPECT_EQ(Tensor::Scalar<std::string>("hi").scalar<std::string>(), "hi");
  auto bad = Tensor::FromValues<float>(TensorShape({2, 2}), {1, 2, 3});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("[2,2] has 4 elements but 3"),
            std::string::npos);
}

TEST(TensorTest, CopiesShareTheBuffer) {
  Tensor a = Tensor::Vector<float>({1, 2, 3});
  Tensor b = a;
  b.flat<float>()[0] = 10;
  EXPECT_EQ(a.flat<float>()[0], 10);
  EXPECT_TRUE(a.SharesBufferWith(b));
  Tensor c = a.Copy();
  EXPECT_FALSE(c.SharesBufferWith(a));
  c.flat<float>()[1] = 20;
  EXPECT_EQ(a.flat<float>()[1], 2);
  EXPECT_TRUE(c.Copy().Equals(c));
}

TEST(TensorTest, SliceAlongDimZeroIsAView) {
  Tensor t =
      Tensor::FromValues<int32_t>(TensorShape({4, 2}), {0, 1, 2, 3, 4, 5, 6, 7})
          .value();
  Tensor rows = t.Slice(1, 3);
  EXPECT_EQ(rows.shape(), TensorShape({2, 2}));
  EXPECT_TRUE(rows.SharesBufferWith(t));
  EXPECT_EQ(rows.flat<int32_t>()[0], 2);
  EXPECT_EQ(rows.flat<int32_t>()[3], 5);
  rows.flat<int32_t>()[0] = 42;
  EXPECT_EQ(t.flat<int32_t>()[2], 42);
  EXPECT_EQ(t.Slice(4, 4).NumElements(), 0);
  // Slices of string tensors view the same objects.
  Tensor s = Tensor::Vector<std::string>({"a", "b", "c"});
  EXPECT_EQ(s.Slice(2, 3).flat<std::string>()[0], "c");
}

TEST(TensorTest, ReshapeSharesBufferOrNamesTheShapes) {
  Tensor t = Tensor::Vector<float>({1, 2, 3, 4, 5, 6});
  Tensor r = t.Reshape(TensorShape({2, 3})).value();
  EXPECT_TRUE(r.SharesBufferWith(t));
  EXPECT_EQ(r.shape(), TensorShape({2, 3}));
  auto bad = t.Reshape(TensorShape({4, 2}));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("float32[6]"), std::string::npos)
      << bad.status();
  EXPECT_NE(bad.status().message().find("[4,2]"), std::string::npos);
}

TEST(TensorTest, DebugStringReadsLikeNumpy) {
  EXPECT_EQ(Tensor::Matrix<int32_t>({{20}}).DebugString(), "[[20]]");
  EXPECT_EQ(Tensor::Matrix<float>({{1.5, 2}, {3, 4}}).DebugString(),
            "[[1.5 2]\n [3 4]]");
  EXPECT_EQ(Tensor::Scalar<double>(0.25).DebugString(), "0.25");
  EXPECT_EQ(Tensor::Vector<bool>({true, false}).DebugString(), "[true false]");
  EXPECT_EQ(Tensor::Vector<std::string>({"a\n"}).DebugString(), "[\"a\\n\"]");
  Tensor cube =
      Tensor::FromValues<int32_t>(TensorShape({2, 1, 2}), {1, 2, 3, 4}).value();
  EXPECT_EQ(cube.DebugString(), "[[[1 2]]\n\n [[3 4]]]");
  EXPECT_EQ(Tensor().DebugString(), "<uninitialized tensor>");
}

TEST(TensorTest, DebugStringSummarizesLargeTensors) {
  Tensor big(DataType::kInt32, TensorShape({2000}));
  auto f = big.flat<int32_t>();
  for (int i = 0; i < 2000; ++i) f[i] = i;
  EXPECT_EQ(big.DebugString(), "[0 1 2 ... 1997 1998 1999]");
  Tensor wide(DataType::kInt32, TensorShape({40, 40}));
  const std::string s = wide.DebugString();
  EXPECT_LT(s.size(), 200u) << s;
  EXPECT_NE(s.find("..."), std::string::npos);
}

TEST(TensorTest, TypeStringAndEquality) {
  Tensor a = Tensor::Matrix<float>({{1, 2}});
  EXPECT_EQ(a.TypeString(), "float32[1,2]");
  EXPECT_TRUE(a.Equals(Tensor::Matrix<float>({{1, 2}})));
  EXPECT_FALSE(a.Equals(Tensor::Matrix<float>({{1, 3}})));
  EXPECT_FALSE(a.Equals(Tensor::Vector<float>({1, 2})));
  EXPECT_FALSE(a.Equals(Tensor::Matrix<double>({{1, 2}})));
}

TEST(TensorDeathTest, WrongElementTypeIsAProgrammingError) {
  Tensor a = Tensor::Scalar<float>(1);
  EXPECT_DEATH(a.data<int32_t>(), "float32 accessed as int32");
}

}  // namespace
}  // namespace distflow
