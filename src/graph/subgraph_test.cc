#include "graph/subgraph.h"

#include <set>
#include <string>
#include <vector>

#include "distflow/ops.h"
#include "distflow/scope.h"
#include "gmock/gmock.h"
#include "graph/attr_value.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

// x -> a = x * 2 -> b = a + 1, and an unrelated branch u -> v; "init" runs
// "side" and "b".
class SubgraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Scope s = scope_;
    auto x = ops::Placeholder(s.WithOpName("x"), DataType::kFloat, {2});
    auto a = ops::Mul(s.WithOpName("a"), x, 2);
    auto b = ops::Add(s.WithOpName("b"), a, 1);
    auto u = ops::Placeholder(s.WithOpName("u"), DataType::kInt32, {3});
    ops::Identity(s.WithOpName("v"), u);
    Operation side = ops::NoOp(s.WithOpName("side"));
    ops::Group(s.WithOpName("init"), {side, b.op()});
    ASSERT_TRUE(s.ok()) << s.status();
  }

  std::unique_ptr<Graph> Build(const CallSignature& sig) {
    auto g = BuildCallGraph(*scope_.graph(), sig);
    EXPECT_TRUE(g.ok()) << g.status();
    return g.ok() ? std::move(*g) : nullptr;
  }

  absl::Status BuildError(const CallSignature& sig) {
    auto g = BuildCallGraph(*scope_.graph(), sig);
    EXPECT_FALSE(g.ok());
    return g.status();
  }

  static std::set<std::string> Names(const Graph& g) {
    std::set<std::string> names;
    for (const auto& n : g.nodes()) names.insert(n->name());
    return names;
  }

  static std::vector<const Node*> NodesOfOp(const Graph& g,
                                            const std::string& op) {
    std::vector<const Node*> found;
    for (const auto& n : g.nodes()) {
      if (n->op() == op) found.push_back(n.get());
    }
    return found;
  }

  static int64_t Index(const Node* n) {
    int64_t index = -1;
    EXPECT_TRUE(GetAttr(n->attrs(), "index", &index).ok());
    return index;
  }

  static DataType Type(const Node* n) {
    DataType t = DataType::kInvalid;
    EXPECT_TRUE(GetAttr(n->attrs(), "T", &t).ok());
    return t;
  }

  // The _Retval with index `i`.
  static const Node* Retval(const Graph& g, int64_t i) {
    for (const Node* n : NodesOfOp(g, "_Retval")) {
      if (Index(n) == i) return n;
    }
    return nullptr;
  }

  Scope scope_ = Scope::NewRootScope();
};

TEST_F(SubgraphTest, KeepsOnlyNeededNodes) {
  auto g = Build({{"x:0"}, {"b:0"}, {}});
  ASSERT_NE(g, nullptr);
  std::set<std::string> names = Names(*g);
  EXPECT_TRUE(names.count("a") && names.count("b"))
      << ::testing::PrintToString(names);
  for (const char* dropped : {"u", "v", "init", "side", "x"}) {
    EXPECT_EQ(names.count(dropped), 0u) << dropped;
  }
  // _Arg, Const 2, a, Const 1, b, _Retval.
  EXPECT_EQ(g->num_nodes(), 6);
  ASSERT_EQ(NodesOfOp(*g, "_Arg").size(), 1u);
  EXPECT_EQ(g->FindNode("a")->input(0).node, NodesOfOp(*g, "_Arg")[0]);
}

TEST_F(SubgraphTest, ArgAndRetvalCarryIndexAndType) {
  auto g = Build({{"x:0", "u:0"}, {"v:0", "b:0"}, {}});
  ASSERT_NE(g, nullptr);
  std::vector<const Node*> args = NodesOfOp(*g, "_Arg");
  ASSERT_EQ(args.size(), 2u);
  for (const Node* arg : args) {
    if (Index(arg) == 0) {
      EXPECT_EQ(Type(arg), DataType::kFloat);
      EXPECT_EQ(arg->output_shape(0), PartialTensorShape({2}));
      ASSERT_EQ(arg->out_edges().size(), 1u);
      EXPECT_EQ(arg->out_edges()[0].dst->name(), "a");
    } else {
      EXPECT_EQ(Index(arg), 1);
      EXPECT_EQ(Type(arg), DataType::kInt32);
      EXPECT_EQ(arg->output_shape(0), PartialTensorShape({3}));
      ASSERT_EQ(arg->out_edges().size(), 1u);
      EXPECT_EQ(arg->out_edges()[0].dst->name(), "v");
    }
  }
  const Node* r0 = Retval(*g, 0);
  const Node* r1 = Retval(*g, 1);
  ASSERT_NE(r0, nullptr);
  ASSERT_NE(r1, nullptr);
  EXPECT_EQ(r0->input(0).node->name(), "v");
  EXPECT_EQ(Type(r0), DataType::kInt32);
  EXPECT_EQ(r1->input(0).node->name(), "b");
  EXPECT_EQ(Type(r1), DataType::kFloat);
  EXPECT_EQ(NodesOfOp(*g, "_Retval").size(), 2u);
}

TEST_F(SubgraphTest, FeedingAnIntermediateEndpointCutsEverythingAboveIt) {
  auto g = Build({{"a:0"}, {"b:0"}, {}});
  ASSERT_NE(g, nullptr);
  std::set<std::string> names = Names(*g);
  EXPECT_EQ(names.count("a"), 0u);
  EXPECT_EQ(names.count("x"), 0u);
  // The constant 2 feeds only "a"; the constant 1 feeds "b".
  EXPECT_EQ(NodesOfOp(*g, "Const").size(), 1u);
  EXPECT_EQ(NodesOfOp(*g, "Mul").size(), 0u);
  const Node* b = g->FindNode("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->input(0).node->op(), "_Arg");
  EXPECT_EQ(Type(b->input(0).node), DataType::kFloat);
  EXPECT_EQ(b->output_shape(0), PartialTensorShape({2}));
  EXPECT_EQ(g->num_nodes(), 4);
}

TEST_F(SubgraphTest, FetchingAFedEndpointReturnsTheArg) {
  auto g = Build({{"a:0"}, {"a:0"}, {}});
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->num_nodes(), 2);
  std::vector<const Node*> args = NodesOfOp(*g, "_Arg");
  ASSERT_EQ(args.size(), 1u);
  const Node* r = Retval(*g, 0);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->input(0).node, args[0]);
  EXPECT_EQ(Type(r), DataType::kFloat);
}

TEST_F(SubgraphTest, TargetsRunWithTheirControlInputs) {
  auto g = Build({{}, {}, {"init"}});
  ASSERT_NE(g, nullptr);
  std::set<std::string> names = Names(*g);
  EXPECT_TRUE(names.count("init") && names.count("side") && names.count("b") &&
              names.count("x"))
      << ::testing::PrintToString(names);
  EXPECT_EQ(names.count("v"), 0u);
  EXPECT_TRUE(NodesOfOp(*g, "_Retval").empty());
  std::vector<std::string> deps;
  for (const Node* c : g->FindNode("init")->control_inputs())
    deps.push_back(c->name());
  EXPECT_THAT(deps, UnorderedElementsAre("side", "b"));
}

TEST_F(SubgraphTest, UnknownNamesAreInvalidArgumentNamingThem) {
  absl::Status s = BuildError({{"nope:0"}, {"b:0"}, {}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("nope"));

  s = BuildError({{}, {"missing:0"}, {}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("missing"));

  s = BuildError({{}, {"b:1"}, {}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("b:1"));

  s = BuildError({{}, {}, {"ghost"}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("ghost"));
}

TEST_F(SubgraphTest, DuplicateFeedIsRefused) {
  absl::Status s = BuildError({{"x:0", "x:0"}, {"b:0"}, {}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("x:0"));
  // "x" is the same endpoint as "x:0".
  s = BuildError({{"x:0", "x"}, {"b:0"}, {}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
}

TEST(SubgraphNamesTest, FeedsWhoseNamesFlattenAlikeGetDistinctArgs) {
  Scope s = Scope::NewRootScope();
  auto p =
      ops::Placeholder(s.NewSubScope("l").WithOpName("x"), DataType::kFloat);
  auto q = ops::Placeholder(s.WithOpName("l_x"), DataType::kFloat);
  ops::Add(s.WithOpName("sum"), p, q);
  // A user node already named like an inserted one.
  ops::Placeholder(s.WithOpName("_arg_l_x_0"), DataType::kFloat);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(p.op().name(), "l/x");
  auto g = BuildCallGraph(*s.graph(), {{"l/x:0", "l_x:0"}, {"sum:0"}, {}});
  ASSERT_TRUE(g.ok()) << g.status();
  const Node* sum = (*g)->FindNode("sum");
  ASSERT_NE(sum, nullptr);
  EXPECT_EQ(sum->input(0).node->op(), "_Arg");
  EXPECT_EQ(sum->input(1).node->op(), "_Arg");
  EXPECT_NE(sum->input(0).node, sum->input(1).node);
  EXPECT_EQ(sum->output_type(0), DataType::kFloat);
}

TEST(FindEndpointTest, ResolvesNamesAndIndices) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DataType::kFloat);
  ASSERT_TRUE(s.ok());
  for (const char* name : {"x", "x:0"}) {
    auto e = FindEndpoint(*s.graph(), name);
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ(e->node, x.node());
    EXPECT_EQ(e->index, 0);
  }
  EXPECT_EQ(FindEndpoint(*s.graph(), "^x").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FindEndpoint(*s.graph(), "x:1").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FindEndpoint(*s.graph(), "y").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace distflow
