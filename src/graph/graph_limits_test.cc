// A GraphDef from anywhere (a client, a master registering a partition) must
// be refused with INVALID_ARGUMENT naming the node, never abort or allocate
// without bound, when its attributes or constants ask for sizes that overflow.
#include <cstdint>
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/attr_value.h"
#include "graph/graph.h"
#include "graph/graph_def_io.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// A Const node `name` of int64 vector `values` in text format.
std::string Int64Const(const std::string& name,
                       const std::vector<int64_t>& values,
                       std::vector<int64_t> dims = {}) {
  if (dims.empty()) dims = {static_cast<int64_t>(values.size())};
  std::string content;
  for (int64_t v : values) {
    content.append(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  proto::NodeDef def;
  def.set_name(name);
  def.set_op("Const");
  (*def.mutable_attr())["dtype"] = MakeAttr(DataType::kInt64);
  proto::AttrValue value;
  proto::TensorProto* t = value.mutable_tensor();
  t->set_dtype(proto::DT_INT64);
  for (int64_t d : dims) t->mutable_shape()->add_dim(d);
  t->set_tensor_content(content);
  (*def.mutable_attr())["value"] = value;
  std::string text;
  google::protobuf::TextFormat::PrintToString(def, &text);
  return "node { " + text + " }";
}

// Imports the text-format GraphDef and expects INVALID_ARGUMENT whose message
// names every one of `culprits`.
void ExpectRefused(const std::string& text,
                   const std::vector<std::string>& culprits,
                   absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
  proto::GraphDef def;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &def))
      << text;
  Graph graph;
  absl::Status s = ImportGraphDef(def, &graph);
  ASSERT_FALSE(s.ok()) << text;
  EXPECT_EQ(s.code(), code) << s;
  for (const std::string& c : culprits) {
    EXPECT_THAT(s.message(), HasSubstr(c)) << text;
  }
}

constexpr char kFloatPlaceholder[] = R"(
  node { name: "x" op: "Placeholder"
         attr { key: "dtype" value { type: DT_FLOAT } } }
)";

TEST(GraphLimitsTest, SplitIntoTwoToThe36PartsIsRefused) {
  ExpectRefused(std::string(kFloatPlaceholder) + R"(
    node { name: "axis" op: "Const"
           attr { key: "dtype" value { type: DT_INT32 } }
           attr { key: "value" value { tensor { dtype: DT_INT32
                  tensor_content: "\000\000\000\000" } } } }
    node { name: "parts" op: "Split" input: "axis" input: "x"
           attr { key: "num_split" value { i: 68719476736 } } }
  )",
                {"Split 'parts'", "num_split", "68719476736"});
}

TEST(GraphLimitsTest, IntAttributeBeyondIntIsRefused) {
  // Kernels read counts such as num_partitions as int: 2^32 + 1 must not wrap
  // to 1.
  AttrMap attrs;
  attrs["n"] = MakeAttr(int64_t{4294967297});
  int n = 0;
  absl::Status s = GetAttr(attrs, "n", &n);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), AllOf(HasSubstr("'n'"), HasSubstr("4294967297")));
  attrs["n"] = MakeAttr(int64_t{-7});
  ASSERT_TRUE(GetAttr(attrs, "n", &n).ok());
  EXPECT_EQ(n, -7);
}

TEST(GraphLimitsTest, ConstOfAHugeShapeIsRefusedNamingTheShape) {
  ExpectRefused(R"(
    node { name: "c" op: "Const"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "value" value { tensor { dtype: DT_FLOAT
                  shape { dim: 4611686018427387904 } } } } }
  )",
                {"Const 'c'", "[4611686018427387904]"},
                absl::StatusCode::kResourceExhausted);
}

TEST(GraphLimitsTest, ShapeFromAVectorOfHugeLengthIsRefused) {
  // Fill's dims are a fed vector of 2^31 - 1 entries: its shape function
  // would make that many unknown sizes.
  ExpectRefused(R"(
    node { name: "dims" op: "Placeholder"
           attr { key: "dtype" value { type: DT_INT32 } }
           attr { key: "shape" value { shape { dim: 2147483647 } } } }
    node { name: "v" op: "Placeholder"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { } } } }
    node { name: "fill" op: "Fill" input: "dims" input: "v" }
  )",
                {"Fill 'fill'", "2147483647"});
}

TEST(GraphLimitsTest, FillOfMoreThanATensorMayHoldIsRefused) {
  ExpectRefused(Int64Const("dims", {int64_t{1} << 20, int64_t{1} << 20}) + R"(
    node { name: "v" op: "Placeholder"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { } } } }
    node { name: "fill" op: "Fill" input: "dims" input: "v" }
  )",
                {"Fill 'fill'", "[1048576,1048576]"});
  ExpectRefused(Int64Const("dims", {int64_t{1} << 40, int64_t{1} << 40}) + R"(
    node { name: "v" op: "Placeholder"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { } } } }
    node { name: "fill" op: "Fill" input: "dims" input: "v" }
  )",
                {"Fill 'fill'"});
}

TEST(GraphLimitsTest, PadAndTileThatOverflowAreRefused) {
  const std::string x = R"(
    node { name: "x" op: "Placeholder"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: 0 dim: 4611686018427387904 } } } }
  )";
  ExpectRefused(
      x + Int64Const("p", {0, 0, int64_t{1} << 62, int64_t{1} << 62}, {2, 2}) +
          R"(node { name: "pad" op: "Pad" input: "x" input: "p"
                              attr { key: "Tpaddings" value { type: DT_INT64 } } })",
      {"Pad 'pad'", "overflows"});
  ExpectRefused(x + Int64Const("m", {1, 4}) +
                    R"(node { name: "tile" op: "Tile" input: "x" input: "m"
                              attr { key: "Tmultiples" value { type: DT_INT64 } } })",
                {"Tile 'tile'", "overflows"});
}

TEST(GraphLimitsTest, WindowsThatOverflowAreRefusedOrSized) {
  // A dilated filter whose extent overflows int64.
  ExpectRefused(R"(
    node { name: "x" op: "Placeholder"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: -1 dim: 10 dim: 10 dim: 1 } } } }
    node { name: "f" op: "Placeholder"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: 3 dim: 3 dim: 1 dim: 1 } } } }
    node { name: "conv" op: "Conv2D" input: "x" input: "f"
           attr { key: "strides" value { list { i: 1 i: 1 i: 1 i: 1 } } }
           attr { key: "dilations" value { list { i: 1 i: 4611686018427387904 i: 1 i: 1 } } }
           attr { key: "padding" value { s: "SAME" } } }
  )",
                {"Conv2D 'conv'", "dilation"});

  // SAME pooling of a dimension near int64's limit: in + stride - 1 used to
  // overflow into a negative size (an abort in PartialTensorShape).
  proto::GraphDef def;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(R"(
    node { name: "x" op: "Placeholder"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: -1 dim: 9223372036854775807
                                              dim: 4 dim: 1 } } } }
    node { name: "pool" op: "MaxPool" input: "x"
           attr { key: "ksize" value { list { i: 1 i: 2 i: 2 i: 1 } } }
           attr { key: "strides" value { list { i: 1 i: 2 i: 2 i: 1 } } }
           attr { key: "padding" value { s: "SAME" } } }
  )",
                                                            &def));
  Graph graph;
  ASSERT_TRUE(ImportGraphDef(def, &graph).ok());
  EXPECT_EQ(graph.FindNode("pool")->output_shape(0),
            PartialTensorShape({-1, 4611686018427387904, 2, 1}));
}

}  // namespace
}  // namespace distflow
