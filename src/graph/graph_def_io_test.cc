#include "graph/graph_def_io.h"

#include <algorithm>
#include <string>
#include <vector>

#include "distflow/ops.h"
#include "distflow/scope.h"
#include "gmock/gmock.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/message_differencer.h"
#include "graph/attr_value.h"
#include "graph/graph_test_util.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::HasSubstr;

std::string DeterministicBytes(const proto::GraphDef& def) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    def.SerializeToCodedStream(&coded);
  }
  return bytes;
}

using test::MakeNode;

proto::NodeDef MakePlaceholder(const std::string& name) {
  proto::NodeDef def = MakeNode(name, "Placeholder");
  (*def.mutable_attr())["dtype"] = MakeAttr(DataType::kFloat);
  return def;
}

// A graph that exercises what a GraphDef carries: variables (colocation,
// "_class"), devices, constants, control dependencies and several outputs per
// node.
proto::GraphDef BuildModel() {
  Scope s = Scope::NewRootScope();
  Scope ps = s.WithDevice("/job:ps/task:0");
  auto x = ops::Placeholder(s.WithOpName("x"), DataType::kFloat, {-1, 4});
  auto w = ops::Variable(ps.WithOpName("w"), ops::Ones(ps, {4, 2}));
  auto b = ops::Variable(ps.WithOpName("b"), {0.5f, -0.5f});
  Scope layer = s.NewSubScope("layer").WithDevice("/job:worker/cpu:0");
  auto y = ops::Add(layer, ops::MatMul(layer, x, w), b);
  auto scaled =
      ops::Mul(layer.WithControlDependencies({w.initializer()}), y, 3);
  ops::Reshape(s, scaled, {-1});
  ops::AssignAdd(s, b, {1.0f, 1.0f});
  ops::GlobalVariablesInitializer(s);
  proto::GraphDef def;
  absl::Status status = s.ToGraphDef(&def);
  EXPECT_TRUE(status.ok()) << status;
  return def;
}

TEST(GraphDefIoTest, RoundTripThroughBytesIsIdentical) {
  const proto::GraphDef original = BuildModel();
  ASSERT_GT(original.node_size(), 15);
  proto::GraphDef parsed;
  ASSERT_TRUE(parsed.ParseFromString(original.SerializeAsString()));

  Graph imported;
  absl::Status s = ImportGraphDef(parsed, &imported);
  ASSERT_TRUE(s.ok()) << s;
  proto::GraphDef again;
  imported.ToGraphDef(&again);
  EXPECT_TRUE(MessageDifferencer::Equals(original, again))
      << "before:\n"
      << original.DebugString() << "after:\n"
      << again.DebugString();
  EXPECT_EQ(DeterministicBytes(original), DeterministicBytes(again));
  EXPECT_EQ(again.version(), kGraphDefVersion);
}

TEST(GraphDefIoTest, ImportedGraphKeepsTypesShapesAndDevices) {
  Graph imported;
  ASSERT_TRUE(ImportGraphDef(BuildModel(), &imported).ok());
  const Node* mm = imported.FindNode("layer/MatMul");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->output_type(0), DataType::kFloat);
  EXPECT_EQ(mm->output_shape(0), PartialTensorShape({-1, 2}));
  EXPECT_EQ(mm->requested_device(), "/job:worker/device:CPU:0");
  const Node* read = imported.FindNode("w/read");
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(read->requested_device(), "/job:ps/task:0");
  EXPECT_EQ(read->output_shape(0), PartialTensorShape({4, 2}));
  const Node* init = imported.FindNode("init");
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(init->control_inputs().size(), 2u);
}

TEST(GraphDefIoTest, NodesInReverseOrderStillImport) {
  const proto::GraphDef original = BuildModel();
  proto::GraphDef reversed = original;
  std::reverse(reversed.mutable_node()->begin(),
               reversed.mutable_node()->end());
  Graph imported;
  absl::Status s = ImportGraphDef(reversed, &imported);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(imported.num_nodes(), original.node_size());
  // Every node comes after its inputs.
  for (const auto& node : imported.nodes()) {
    for (const Endpoint& in : node->inputs())
      EXPECT_LT(in.node->id(), node->id());
    for (const Node* c : node->control_inputs()) EXPECT_LT(c->id(), node->id());
  }
  ASSERT_NE(imported.FindNode("layer/Add"), nullptr);
  EXPECT_EQ(imported.FindNode("layer/Add")->output_shape(0),
            PartialTensorShape({-1, 2}));
}

TEST(GraphDefIoTest, InputsMayNameNodesAlreadyInTheGraph) {
  Graph graph;
  proto::GraphDef first;
  *first.add_node() = MakePlaceholder("x");
  ASSERT_TRUE(ImportGraphDef(first, &graph).ok());
  proto::GraphDef second;
  *second.add_node() = MakeNode("z", "Identity", {"y"});
  *second.add_node() = MakeNode("y", "Identity", {"x"});
  absl::Status s = ImportGraphDef(second, &graph);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(graph.num_nodes(), 3);
  // A name already in the graph is a duplicate.
  s = ImportGraphDef(first, &graph);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'x'"));
}

TEST(GraphDefIoTest, CycleIsRefusedListingItsNodes) {
  proto::GraphDef def;
  *def.add_node() = MakeNode("a", "Identity", {"b"});
  *def.add_node() = MakeNode("b", "Identity", {"a"});
  Graph graph;
  absl::Status s = ImportGraphDef(def, &graph);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("cycle"));
  EXPECT_THAT(s.message(), HasSubstr("a -> b -> a"));
}

TEST(GraphDefIoTest, CycleMessageListsOnlyTheCycle) {
  proto::GraphDef def;
  *def.add_node() = MakePlaceholder("source");
  // "after" depends on the cycle but is not on it; it is listed first.
  *def.add_node() = MakeNode("after", "Identity", {"p"});
  *def.add_node() = MakeNode("p", "Add", {"source", "r"});
  *def.add_node() = MakeNode("q", "Identity", {"p"});
  *def.add_node() = MakeNode("r", "Identity", {"q", "^source"});
  Graph graph;
  absl::Status s = ImportGraphDef(def, &graph);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("p -> q -> r -> p"));
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("after")));
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("source")));
}

TEST(GraphDefIoTest, MissingInputIsRefusedNamingTheNode) {
  proto::GraphDef def;
  *def.add_node() = MakeNode("y", "Identity", {"ghost:0"});
  Graph graph;
  absl::Status s = ImportGraphDef(def, &graph);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'y'"));
  EXPECT_THAT(s.message(), HasSubstr("ghost"));
}

TEST(GraphDefIoTest, DuplicateNamesAreRefused) {
  proto::GraphDef def;
  *def.add_node() = MakePlaceholder("x");
  *def.add_node() = MakePlaceholder("x");
  Graph graph;
  absl::Status s = ImportGraphDef(def, &graph);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'x'"));
  EXPECT_EQ(graph.num_nodes(), 0);
}

TEST(GraphDefIoTest, NewerVersionIsRefused) {
  proto::GraphDef def;
  def.set_version(kGraphDefVersion + 1);
  *def.add_node() = MakePlaceholder("x");
  Graph graph;
  absl::Status s = ImportGraphDef(def, &graph);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("version"));
  EXPECT_EQ(graph.num_nodes(), 0);
  def.set_version(kGraphDefVersion);
  EXPECT_TRUE(ImportGraphDef(def, &graph).ok());
}

TEST(GraphDefIoTest, MalformedConstTensorIsRefusedNamingTheNode) {
  proto::NodeDef c = MakeNode("weights", "Const");
  (*c.mutable_attr())["value"] =
      MakeAttr(Tensor::Matrix<float>({{1, 2}, {3, 4}}));
  (*c.mutable_attr())["dtype"] = MakeAttr(DataType::kFloat);
  // Three floats' worth of bytes for a [2,2] tensor.
  std::string* content =
      (*c.mutable_attr())["value"].mutable_tensor()->mutable_tensor_content();
  content->resize(content->size() - 4);
  proto::GraphDef def;
  *def.add_node() = c;
  Graph graph;
  absl::Status s = ImportGraphDef(def, &graph);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'weights'"));
  EXPECT_EQ(graph.FindNode("weights"), nullptr);
}

}  // namespace
}  // namespace distflow
