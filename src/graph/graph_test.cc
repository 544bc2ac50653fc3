#include "graph/graph.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/attr_value.h"
#include "graph/graph_test_util.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

using test::MakeNode;

proto::NodeDef MakeConst(const std::string& name, const Tensor& value) {
  proto::NodeDef def = MakeNode(name, "Const");
  (*def.mutable_attr())["value"] = MakeAttr(value);
  (*def.mutable_attr())["dtype"] = MakeAttr(value.dtype());
  return def;
}

proto::NodeDef MakePlaceholder(const std::string& name, DataType dtype) {
  proto::NodeDef def = MakeNode(name, "Placeholder");
  (*def.mutable_attr())["dtype"] = MakeAttr(dtype);
  return def;
}

class GraphTest : public ::testing::Test {
 protected:
  Node* Add(proto::NodeDef def) {
    auto node = graph_.AddNode(std::move(def));
    EXPECT_TRUE(node.ok()) << node.status();
    return node.ok() ? *node : nullptr;
  }

  // Adds `def`, expecting it to fail with `code`; returns the message.
  std::string AddExpectingError(proto::NodeDef def, absl::StatusCode code) {
    const int before = graph_.num_nodes();
    auto node = graph_.AddNode(std::move(def));
    EXPECT_FALSE(node.ok());
    EXPECT_EQ(node.status().code(), code) << node.status();
    EXPECT_EQ(graph_.num_nodes(), before);
    return std::string(node.status().message());
  }

  Graph graph_;
};

TEST_F(GraphTest, AddNodeInfersTypesShapesAndDefaults) {
  Node* a = Add(MakeConst("a", Tensor::Matrix<float>({{1, 2, 3}})));
  Node* b = Add(MakeConst("b", Tensor::Matrix<float>({{1}, {2}, {3}})));
  Node* m = Add(MakeNode("m", "MatMul", {"a:0", "b"}));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->num_inputs(), 2);
  EXPECT_EQ(m->input(0).node, a);
  EXPECT_EQ(m->input(1).node, b);
  EXPECT_EQ(m->output_type(0), DataType::kFloat);
  EXPECT_EQ(m->output_shape(0), PartialTensorShape({1, 1}));
  // "T" is inferred from the inputs; the transposes take their defaults.
  ASSERT_TRUE(m->attrs().contains("T"));
  bool transpose_a = true;
  ASSERT_TRUE(GetAttr(m->attrs(), "transpose_a", &transpose_a).ok());
  EXPECT_FALSE(transpose_a);
  // Input names are normalized ("a:0" -> "a").
  EXPECT_EQ(m->def().input(0), "a");
  EXPECT_EQ(graph_.FindNode("m"), m);
  EXPECT_EQ(graph_.FindNode("nope"), nullptr);
  ASSERT_EQ(a->out_edges().size(), 1u);
  EXPECT_EQ(a->out_edges()[0].dst, m);
  EXPECT_EQ(a->out_edges()[0].dst_input, 0);
  EXPECT_EQ(b->out_edges()[0].dst_input, 1);
}

TEST_F(GraphTest, UnknownOpIsNotFoundNamingTheOp) {
  const std::string msg =
      AddExpectingError(MakeNode("n", "NoSuchOp"), absl::StatusCode::kNotFound);
  EXPECT_THAT(msg, HasSubstr("NoSuchOp"));
  EXPECT_THAT(msg, HasSubstr("'n'"));
}

TEST_F(GraphTest, DuplicateNameIsRefused) {
  Add(MakePlaceholder("x", DataType::kFloat));
  const std::string msg =
      AddExpectingError(MakePlaceholder("x", DataType::kInt32),
                        absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(msg, HasSubstr("'x'"));
  EXPECT_EQ(graph_.FindNode("x")->output_type(0), DataType::kFloat);
}

TEST_F(GraphTest, InvalidNodeNameIsRefused) {
  const std::string msg =
      AddExpectingError(MakePlaceholder("/abs", DataType::kFloat),
                        absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(msg, HasSubstr("'/abs'"));
  AddExpectingError(MakePlaceholder("", DataType::kFloat),
                    absl::StatusCode::kInvalidArgument);
}

TEST_F(GraphTest, InputNamingMissingNodeIsRefused) {
  const std::string msg = AddExpectingError(
      MakeNode("y", "Identity", {"ghost"}), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(msg, HasSubstr("'y'"));
  EXPECT_THAT(msg, HasSubstr("ghost"));
}

TEST_F(GraphTest, InputIndexOutOfRangeIsRefused) {
  Add(MakePlaceholder("x", DataType::kFloat));
  const std::string msg = AddExpectingError(MakeNode("y", "Identity", {"x:1"}),
                                            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(msg, HasSubstr("'y'"));
  EXPECT_THAT(msg, HasSubstr("x:1"));
}

TEST_F(GraphTest, WrongInputCountIsRefused) {
  Add(MakePlaceholder("x", DataType::kFloat));
  std::string msg =
      AddExpectingError(MakeNode("too_many", "Identity", {"x", "x"}),
                        absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(msg, HasSubstr("'too_many'"));
  msg = AddExpectingError(MakeNode("too_few", "Add", {"x"}),
                          absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(msg, HasSubstr("'too_few'"));
}

TEST_F(GraphTest, DataInputAfterControlInputIsRefused) {
  Add(MakePlaceholder("x", DataType::kFloat));
  Add(MakeNode("n", "NoOp"));
  const std::string msg =
      AddExpectingError(MakeNode("y", "Identity", {"^n", "x"}),
                        absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(msg, HasSubstr("'y'"));
}

TEST_F(GraphTest, AttributeOfWrongKindIsRefused) {
  proto::NodeDef def = MakeNode("p", "Placeholder");
  (*def.mutable_attr())["dtype"] = MakeAttr(int64_t{1});
  const std::string msg =
      AddExpectingError(def, absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(msg, HasSubstr("'p'"));
  EXPECT_THAT(msg, HasSubstr("dtype"));
}

TEST_F(GraphTest, UnknownAttributeIsRefused) {
  proto::NodeDef def = MakePlaceholder("p", DataType::kFloat);
  (*def.mutable_attr())["colour"] = MakeAttr("blue");
  const std::string msg =
      AddExpectingError(def, absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(msg, HasSubstr("'p'"));
  EXPECT_THAT(msg, HasSubstr("colour"));
  // Internal attributes (leading '_') are allowed.
  proto::NodeDef internal = MakePlaceholder("q", DataType::kFloat);
  (*internal.mutable_attr())["_class"] =
      MakeAttr(std::vector<std::string>{"loc:@p"});
  EXPECT_NE(Add(internal), nullptr);
}

TEST_F(GraphTest, MissingRequiredAttributeIsRefused) {
  const std::string msg = AddExpectingError(MakeNode("p", "Placeholder"),
                                            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(msg, HasSubstr("'p'"));
  EXPECT_THAT(msg, HasSubstr("dtype"));
}

TEST_F(GraphTest, DisallowedTypeIsRefused) {
  Add(MakePlaceholder("s", DataType::kString));
  const std::string msg = AddExpectingError(MakeNode("sum", "Add", {"s", "s"}),
                                            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(msg, HasSubstr("'sum'"));
  EXPECT_THAT(msg, HasSubstr("string"));
}

TEST_F(GraphTest, ControlEdgesAreRecordedAndCyclesRefused) {
  Node* a = Add(MakePlaceholder("a", DataType::kFloat));
  Node* b = Add(MakeNode("b", "Identity", {"a"}));
  Node* c = Add(MakeNode("c", "Identity", {"b"}));
  Node* n = Add(MakeNode("n", "NoOp"));
  ASSERT_TRUE(graph_.AddControlEdge(n, a).ok());
  ASSERT_EQ(a->control_inputs().size(), 1u);
  EXPECT_EQ(a->control_inputs()[0], n);
  EXPECT_EQ(a->def().input(a->def().input_size() - 1), "^n");
  // Adding it again changes nothing.
  ASSERT_TRUE(graph_.AddControlEdge(n, a).ok());
  EXPECT_EQ(a->control_inputs().size(), 1u);

  absl::Status s = graph_.AddControlEdge(c, a);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'c'"));
  EXPECT_THAT(s.message(), HasSubstr("'a'"));
  // Through the control edge added above: c depends on n.
  s = graph_.AddControlEdge(c, n);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'c'"));
  EXPECT_THAT(s.message(), HasSubstr("'n'"));
  EXPECT_EQ(graph_.AddControlEdge(b, b).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(n->control_inputs().empty());
  EXPECT_TRUE(b->control_inputs().empty());
}

TEST_F(GraphTest, ConstWithMismatchedDtypeIsRefused) {
  proto::NodeDef def = MakeConst("c", Tensor::Scalar<float>(1));
  (*def.mutable_attr())["dtype"] = MakeAttr(DataType::kInt32);
  const std::string msg =
      AddExpectingError(def, absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(msg, HasSubstr("'c'"));
  EXPECT_THAT(msg, HasSubstr("int32"));
}

TEST_F(GraphTest, TruncateToRemovesNewestNodesAndTheirEdges) {
  Node* a = Add(MakeConst("a", Tensor::Scalar<float>(1)));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(Add(MakeNode("b", "Identity", {"a"})), nullptr);
  ASSERT_NE(Add(MakeNode("c", "NoOp", {"^a"})), nullptr);
  EXPECT_EQ(a->out_edges().size(), 2u);
  graph_.TruncateTo(1);
  EXPECT_EQ(graph_.num_nodes(), 1);
  EXPECT_TRUE(a->out_edges().empty());
  EXPECT_EQ(graph_.FindNode("b"), nullptr);
  // The removed names are free again.
  Node* b = Add(MakeNode("b", "Identity", {"a"}));
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->id(), 1);
  EXPECT_EQ(a->out_edges().size(), 1u);
}

TEST_F(GraphTest, UniqueNameSkipsTakenNames) {
  Add(MakePlaceholder("x", DataType::kFloat));
  Add(MakePlaceholder("x_1", DataType::kFloat));
  EXPECT_EQ(graph_.UniqueName("y"), "y");
  EXPECT_EQ(graph_.UniqueName("y"), "y_1");
  EXPECT_EQ(graph_.UniqueName("x"), "x_2");
}

TEST(ParseInputNameTest, ParsesDataAndControlInputs) {
  auto plain = ParseInputName("x");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->node, "x");
  EXPECT_EQ(plain->index, 0);
  EXPECT_FALSE(plain->is_control);
  auto indexed = ParseInputName("a/b:2");
  ASSERT_TRUE(indexed.ok());
  EXPECT_EQ(indexed->node, "a/b");
  EXPECT_EQ(indexed->index, 2);
  auto control = ParseInputName("^c");
  ASSERT_TRUE(control.ok());
  EXPECT_EQ(control->node, "c");
  EXPECT_TRUE(control->is_control);
  for (const char* bad : {"", "x:", "x:-1", "x:y", "^", ":0"}) {
    EXPECT_EQ(ParseInputName(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

}  // namespace
}  // namespace distflow
