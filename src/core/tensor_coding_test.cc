#include "core/tensor_coding.h"

#include <string>

#include "gtest/gtest.h"

namespace distflow {
namespace {

Tensor RoundTrip(const Tensor& t) {
  proto::TensorProto p;
  TensorToProto(t, &p);
  // Through bytes, as on the wire.
  proto::TensorProto parsed;
  EXPECT_TRUE(parsed.ParseFromString(p.SerializeAsString()));
  auto back = TensorFromProto(parsed);
  EXPECT_TRUE(back.ok()) << back.status();
  return back.ok() ? *back : Tensor();
}

TEST(TensorCodingTest, EveryDtypeRoundTrips) {
  std::vector<Tensor> tensors = {
      Tensor::Matrix<float>({{1.5f, -2}, {3, 4e30f}}),
      Tensor::Vector<double>({1e-300, 2}),
      Tensor::Vector<int32_t>({-1, 2147483647}),
      Tensor::Scalar<int64_t>(int64_t{1} << 60),
      Tensor::Vector<uint8_t>({0, 255}),
      Tensor::Vector<bool>({true, false, true}),
      Tensor::Vector<std::string>({"", std::string("a\0b", 3)}),
      Tensor::Scalar(ResourceHandle{"/job:ps/replica:0/task:0/device:CPU:0", "",
                                    "w", DataType::kFloat}),
      Tensor(DataType::kFloat, TensorShape({0, 3})),
  };
  for (const Tensor& t : tensors) {
    Tensor back = RoundTrip(t);
    EXPECT_TRUE(back.Equals(t)) << t.TypeString() << " " << t.DebugString();
  }
}

TEST(TensorCodingTest, MalformedProtosAreInvalidArgument) {
  proto::TensorProto p;
  TensorToProto(Tensor::Matrix<float>({{1, 2}}), &p);
  p.mutable_tensor_content()->pop_back();
  auto short_content = TensorFromProto(p);
  ASSERT_FALSE(short_content.ok());
  EXPECT_EQ(short_content.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(short_content.status().message().find("float32[1,2] needs 2"),
            std::string::npos)
      << short_content.status();

  proto::TensorProto bad_type = p;
  bad_type.set_dtype(static_cast<proto::DataType>(99));
  EXPECT_EQ(TensorFromProto(bad_type).status().code(),
            absl::StatusCode::kInvalidArgument);

  proto::TensorProto bad_shape;
  bad_shape.set_dtype(proto::DT_FLOAT);
  bad_shape.mutable_shape()->add_dim(-3);
  EXPECT_EQ(TensorFromProto(bad_shape).status().code(),
            absl::StatusCode::kInvalidArgument);

  proto::TensorProto strings;
  TensorToProto(Tensor::Vector<std::string>({"a", "b"}), &strings);
  strings.add_string_val("c");
  EXPECT_EQ(TensorFromProto(strings).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TensorCodingTest, PartialShapesRoundTrip) {
  for (const PartialTensorShape& s :
       {PartialTensorShape(), PartialTensorShape({-1, 3}),
        PartialTensorShape({})}) {
    proto::TensorShapeProto p;
    ShapeToProto(s, &p);
    EXPECT_EQ(PartialShapeFromProto(p).value(), s) << s.DebugString();
  }
}

}  // namespace
}  // namespace distflow
