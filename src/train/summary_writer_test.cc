// The event file writer, read back by distflow's record reader and by an
// independent Python reader (testdata/read_event_file.py) that checks the
// framing and CRCs with its own CRC32C and decodes TensorFlow's field numbers.
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "distflow/ops.h"
#include "distflow/session.h"
#include "distflow/train/summary.h"
#include "gmock/gmock.h"
#include "graph/graph.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "proto/summary.pb.h"
#include "proto/tensorboard_graph.pb.h"
#include "tests/subprocess.h"
#include "train/record_reader.h"

namespace distflow {
namespace train {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string NewTempDir() {
  std::string path = ::testing::TempDir() + "summary_test_XXXXXX";
  return mkdtemp(path.data()) != nullptr ? path : "";
}

std::vector<proto::Event> ReadEvents(const std::string& path) {
  auto records = ReadRecords(path);
  EXPECT_TRUE(records.ok()) << records.status();
  std::vector<proto::Event> events;
  if (!records.ok()) return events;
  for (const std::string& r : *records) {
    EXPECT_TRUE(events.emplace_back().ParseFromString(r));
  }
  return events;
}

struct PythonResult {
  int exit_code = -1;
  std::string output;
};

// Runs the independent reader on `path`, bounded in time.
PythonResult ReadWithPython(const std::string& path) {
  testing::Subprocess reader(
      {"/usr/bin/python3", DISTFLOW_EVENT_READER_PY, path});
  PythonResult result;
  EXPECT_TRUE(reader.started());
  auto code = reader.Wait(std::chrono::seconds(30));
  EXPECT_TRUE(code.has_value()) << "the Python reader did not finish";
  result.exit_code = code.value_or(-1);
  result.output = reader.Output();
  return result;
}

// A small graph with devices: a loss on the worker of variables on a ps task,
// and its summaries.
struct Model {
  Scope root = Scope::NewRootScope();
  Output loss, summaries;
  Model() {
    Scope ps = root.WithDevice("/job:ps/task:0");
    ops::Variable w(ps.WithOpName("w"), Tensor::Vector<float>({1, 2, 3}));
    Scope worker = root.WithDevice("/job:worker/task:0");
    loss = ops::Mean(worker.WithOpName("loss"), ops::Square(worker, w), 0);
    summaries = ops::MergeSummary(root.WithOpName("summaries"),
                                  {ops::ScalarSummary(root, "loss", loss),
                                   ops::ScalarSummary(root, "accuracy", 0.75)});
  }
};

class SummaryWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    logdir_ = NewTempDir();
    ASSERT_FALSE(logdir_.empty());
  }
  void TearDown() override { std::filesystem::remove_all(logdir_); }
  std::string logdir_;
};

TEST_F(SummaryWriterTest, WritesScalarsAndGraphThatBothReadersRead) {
  Model model;
  // Compute the merged summary the way a training job does: in a session.
  Scope local = Scope::NewRootScope();
  Output merged =
      ops::MergeSummary(local, {ops::ScalarSummary(local, "loss", 2.5f),
                                ops::ScalarSummary(local, "accuracy", 0.75)});
  auto session = ClientSession::Create(local);
  ASSERT_TRUE(session.ok()) << session.status();
  auto summary = (*session)->Run({merged});
  ASSERT_TRUE(summary.ok()) << summary.status();

  auto writer = SummaryWriter::Create(logdir_ + "/train");
  ASSERT_TRUE(writer.ok()) << writer.status();
  const std::string path = (*writer)->path();
  EXPECT_THAT(path, StartsWith(logdir_ + "/train/events.out.tfevents."));
  ASSERT_TRUE((*writer)->AddGraph(model.root).ok());
  ASSERT_TRUE((*writer)->AddScalar("loss", 3.25, 1).ok());
  ASSERT_TRUE((*writer)->AddSummary((*summary)[0], 2).ok());
  ASSERT_TRUE((*writer)->Flush().ok());

  // distflow's reader.
  std::vector<proto::Event> events = ReadEvents(path);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  for (const proto::Event& e : events) EXPECT_GT(e.wall_time(), 1.5e9);
  proto::TensorBoardGraphDef graph;
  ASSERT_TRUE(graph.ParseFromString(events[1].graph_def()));
  EXPECT_EQ(graph.node_size(), model.root.graph()->num_nodes());
  bool saw_loss = false;
  for (const auto& node : graph.node()) {
    if (node.name() != "loss") continue;
    saw_loss = true;
    EXPECT_EQ(node.op(), "Mean");
    EXPECT_EQ(node.device(), "/job:worker/task:0");
    EXPECT_EQ(node.attr().at("T").type(), proto::DT_FLOAT);
    ASSERT_EQ(node.attr().at("_output_shapes").list().shape_size(), 1);
    EXPECT_EQ(node.attr().at("_output_shapes").list().shape(0).dim_size(), 0);
  }
  EXPECT_TRUE(saw_loss);
  EXPECT_EQ(events[2].step(), 1);
  ASSERT_EQ(events[2].summary().value_size(), 1);
  EXPECT_EQ(events[2].summary().value(0).tag(), "loss");
  EXPECT_EQ(events[2].summary().value(0).simple_value(), 3.25f);
  EXPECT_EQ(events[3].step(), 2);
  ASSERT_EQ(events[3].summary().value_size(), 2);
  EXPECT_EQ(events[3].summary().value(1).tag(), "accuracy");

  // The independent reader agrees, by TensorFlow's field numbers.
  PythonResult py = ReadWithPython(path);
  ASSERT_EQ(py.exit_code, 0) << py.output;
  auto json = nlohmann::json::parse(py.output);
  ASSERT_EQ(json.size(), 4u);
  EXPECT_EQ(json[0]["file_version"], "brain.Event:2");
  bool py_saw_variable = false;
  for (const auto& node : json[1]["graph"]) {
    if (node["name"] == "w") {
      py_saw_variable = true;
      EXPECT_EQ(node["op"], "VarHandleOp");
      EXPECT_EQ(node["device"], "/job:ps/task:0");
    }
  }
  EXPECT_TRUE(py_saw_variable) << py.output;
  EXPECT_EQ(json[2]["step"], 1);
  EXPECT_EQ(json[2]["summary"][0]["tag"], "loss");
  EXPECT_EQ(json[2]["summary"][0]["simple_value"], 3.25);
  EXPECT_EQ(json[3]["step"], 2);
  EXPECT_EQ(json[3]["summary"][0]["tag"], "loss");
  EXPECT_EQ(json[3]["summary"][0]["simple_value"], 2.5);
  EXPECT_EQ(json[3]["summary"][1]["tag"], "accuracy");
  EXPECT_EQ(json[3]["summary"][1]["simple_value"], 0.75);
}

TEST_F(SummaryWriterTest, BothReadersDetectACorruptByte) {
  std::string path;
  {
    auto writer = SummaryWriter::Create(logdir_);
    ASSERT_TRUE(writer.ok()) << writer.status();
    path = (*writer)->path();
    for (int step = 0; step < 3; ++step) {
      ASSERT_TRUE((*writer)->AddScalar("loss", 1.0 / (step + 1), step).ok());
    }
  }  // destruction flushes
  ASSERT_EQ(ReadEvents(path).size(), 4u);
  ASSERT_EQ(ReadWithPython(path).exit_code, 0);

  // Flip one bit in the middle of the last record's data.
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes[bytes.size() - 8] ^= 0x04;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;

  auto records = ReadRecords(path);
  EXPECT_TRUE(absl::IsDataLoss(records.status())) << records.status();
  EXPECT_THAT(records.status().message(), HasSubstr("record 3"));
  EXPECT_THAT(records.status().message(), HasSubstr("data CRC mismatch"));
  PythonResult py = ReadWithPython(path);
  EXPECT_EQ(py.exit_code, 1);
  EXPECT_THAT(py.output, HasSubstr("record 3"));
  EXPECT_THAT(py.output, HasSubstr("data CRC mismatch"));
}

TEST_F(SummaryWriterTest, EventsReachTheFileOnFlush) {
  auto writer = SummaryWriter::Create(logdir_);
  ASSERT_TRUE(writer.ok()) << writer.status();
  // The version event is there from the start: the file is valid at once.
  EXPECT_EQ(ReadEvents((*writer)->path()).size(), 1u);
  ASSERT_TRUE((*writer)->AddScalar("loss", 1, 1).ok());
  EXPECT_EQ(ReadEvents((*writer)->path()).size(), 1u);
  ASSERT_TRUE((*writer)->Flush().ok());
  EXPECT_EQ(ReadEvents((*writer)->path()).size(), 2u);
}

TEST_F(SummaryWriterTest, ThreadsAddEventsConcurrently) {
  auto writer = SummaryWriter::Create(logdir_);
  ASSERT_TRUE(writer.ok()) << writer.status();
  constexpr int kThreads = 4, kEach = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string tag = "thread" + std::to_string(t);
      for (int step = 0; step < kEach; ++step) {
        EXPECT_TRUE((*writer)->AddScalar(tag, step, step).ok());
        if (step % 500 == 0) {
          EXPECT_TRUE((*writer)->Flush().ok());
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE((*writer)->Flush().ok());
  std::vector<proto::Event> events = ReadEvents((*writer)->path());
  ASSERT_EQ(events.size(), 1u + kThreads * kEach);
  // Each thread's events keep their order.
  std::map<std::string, int64_t> next_step;
  for (size_t i = 1; i < events.size(); ++i) {
    const auto& value = events[i].summary().value(0);
    EXPECT_EQ(events[i].step(), next_step[value.tag()]++);
    EXPECT_EQ(value.simple_value(), static_cast<float>(events[i].step()));
  }
}

TEST_F(SummaryWriterTest, WritersInOneDirectoryGetTheirOwnFiles) {
  auto a = SummaryWriter::Create(logdir_);
  auto b = SummaryWriter::Create(logdir_);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a)->path(), (*b)->path());
  ASSERT_TRUE((*a)->AddScalar("a", 1, 1).ok());
  ASSERT_TRUE((*a)->Flush().ok());
  EXPECT_EQ(ReadEvents((*a)->path()).size(), 2u);
  EXPECT_EQ(ReadEvents((*b)->path()).size(), 1u);
}

TEST_F(SummaryWriterTest, UnusableLogdirIsAnErrorNamingIt) {
  // A directory cannot be made under a regular file (whoever runs the test).
  const std::string file = logdir_ + "/not_a_directory";
  std::ofstream(file) << "x";
  auto writer = SummaryWriter::Create(file + "/logs");
  ASSERT_FALSE(writer.ok());
  EXPECT_THAT(writer.status().message(), HasSubstr(file + "/logs"));
  EXPECT_THAT(writer.status().message(), HasSubstr("Not a directory"));

  EXPECT_TRUE(absl::IsInvalidArgument(SummaryWriter::Create("").status()));
}

TEST_F(SummaryWriterTest, AddSummaryRefusesWhatIsNotASummary) {
  auto writer = SummaryWriter::Create(logdir_);
  ASSERT_TRUE(writer.ok()) << writer.status();
  absl::Status s = (*writer)->AddSummary(Tensor::Scalar<float>(1), 1);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("float32[]"));
  EXPECT_THAT(s.message(), HasSubstr((*writer)->path()));
  s = (*writer)->AddSummary(Tensor::Scalar<std::string>("\xff\xff junk"), 1);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("not a serialized Summary"));
}

TEST_F(SummaryWriterTest, AddGraphReportsTheScopesError) {
  auto writer = SummaryWriter::Create(logdir_);
  ASSERT_TRUE(writer.ok()) << writer.status();
  Scope root = Scope::NewRootScope();
  ops::MatMul(root, Tensor::Matrix<float>({{1, 2}}),
              Tensor::Matrix<float>({{1, 2}}));
  absl::Status s = (*writer)->AddGraph(root);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("MatMul"));
}

}  // namespace
}  // namespace train
}  // namespace distflow
