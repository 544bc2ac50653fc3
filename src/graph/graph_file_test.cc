#include "graph/graph_file.h"

#include <fstream>
#include <string>

#include "base/file.h"
#include "distflow/graph_file.h"
#include "distflow/ops.h"
#include "distflow/scope.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::HasSubstr;

Scope SmallModel() {
  Scope s = Scope::NewRootScope();
  auto w = ops::Variable(s.WithDevice("/job:ps/task:0").WithOpName("w"),
                         Tensor::Matrix<float>({{1, 2}, {3, 4}}));
  ops::MatMul(s.WithDevice("/job:worker/task:0").WithOpName("y"), w, w);
  return s;
}

TEST(GraphFileTest, BinaryAndTextFilesReadBackAsTheGraph) {
  Scope s = SmallModel();
  proto::GraphDef expected;
  ASSERT_TRUE(s.ToGraphDef(&expected).ok());
  for (const std::string name : {"g.pb", "g.pbtxt"}) {
    const std::string path = ::testing::TempDir() + name;
    ASSERT_TRUE(WriteGraphFile(s, path).ok());
    auto def = ReadGraphDefFile(path);
    ASSERT_TRUE(def.ok()) << def.status();
    EXPECT_TRUE(MessageDifferencer::Equals(*def, expected)) << name;
  }
  // The text form is text: a user can read and edit it.
  auto text = ReadFileToString(::testing::TempDir() + "g.pbtxt");
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(*text, HasSubstr("device: \"/job:ps/task:0\""));
}

TEST(GraphFileTest, AFileThatIsNoGraphIsRefusedNamingItAndThePosition) {
  const std::string path = ::testing::TempDir() + "not_a_graph.pb";
  std::ofstream(path) << "node {\n  name: \"a\"\n  colour: 3\n}\n";
  auto def = ReadGraphDefFile(path);
  ASSERT_FALSE(def.ok());
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(), HasSubstr(path));
  EXPECT_THAT(def.status().message(), HasSubstr("line 3"));
  EXPECT_EQ(
      ReadGraphDefFile(::testing::TempDir() + "missing.pb").status().code(),
      absl::StatusCode::kNotFound);
}

TEST(GraphFileTest, ANewerVersionIsRefused) {
  proto::GraphDef def;
  def.set_version(99);
  const std::string path = ::testing::TempDir() + "future.pb";
  ASSERT_TRUE(WriteGraphDefFile(def, path).ok());
  auto read = ReadGraphDefFile(path);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(read.status().message(), HasSubstr("version 99"));
}

TEST(GraphFileTest, TheScopesErrorIsReturned) {
  Scope s = Scope::NewRootScope();
  s.UpdateStatus(absl::InvalidArgumentError("bad op"));
  EXPECT_THAT(WriteGraphFile(s, ::testing::TempDir() + "x.pb").message(),
              HasSubstr("bad op"));
}

}  // namespace
}  // namespace distflow
