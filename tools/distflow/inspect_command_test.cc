// `distflow inspect` on checkpoints written by a real Saver, run as the user
// runs it: build/bin/distflow in a child process.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/safetensors.h"
#include "distflow/ops.h"
#include "distflow/scope.h"
#include "distflow/session.h"
#include "distflow/train/global_step.h"
#include "distflow/train/saver.h"
#include "distributed/rpc/test_cluster.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tools/distflow/command_test_util.h"

namespace distflow {
namespace {

using ::distflow::testing::CommandResult;
using ::distflow::testing::RunDistflow;
using ::distflow::testing::ScopedTempDir;
using ::testing::HasSubstr;

// Values a test knows, and their statistics computed here.
struct Expected {
  std::vector<int64_t> shape;
  double min, max, mean;
};

Expected StatsOf(const std::vector<double>& values,
                 std::vector<int64_t> shape) {
  return {std::move(shape), *std::min_element(values.begin(), values.end()),
          *std::max_element(values.begin(), values.end()),
          std::accumulate(values.begin(), values.end(), 0.0) / values.size()};
}

// A model of random float32, float64 and int32 variables and the global step,
// saved at step 37 in `dir`; `expected` gets each tensor's shape and
// statistics.
void SaveModel(const std::string& dir,
               std::map<std::string, Expected>* expected) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.5f, 2.0f);
  std::uniform_int_distribution<int32_t> ints(-1000, 1000);
  Scope root = Scope::NewRootScope();
  Scope layer = root.NewSubScope("dense");

  Tensor kernel(DataType::kFloat, TensorShape({30, 20}));
  std::vector<double> kernel_values;
  for (float& v : kernel.flat<float>()) {
    v = normal(rng);
    kernel_values.push_back(v);
  }
  (*expected)["dense/kernel"] = StatsOf(kernel_values, {30, 20});
  ops::Variable(layer.WithOpName("kernel"), kernel);

  Tensor bias(DataType::kDouble, TensorShape({20}));
  std::vector<double> bias_values;
  for (double& v : bias.flat<double>()) {
    v = normal(rng) * 1e-3;
    bias_values.push_back(v);
  }
  (*expected)["dense/bias"] = StatsOf(bias_values, {20});
  ops::Variable(layer.WithOpName("bias"), bias);

  Tensor counts(DataType::kInt32, TensorShape({4, 2, 3}));
  std::vector<double> count_values;
  for (int32_t& v : counts.flat<int32_t>()) {
    v = ints(rng);
    count_values.push_back(v);
  }
  (*expected)["counts"] = StatsOf(count_values, {4, 2, 3});
  ops::Variable(root.WithOpName("counts"), counts);

  train::GetOrCreateGlobalStep(root);
  (*expected)["global_step"] = StatsOf({0}, {});

  auto init = ops::GlobalVariablesInitializer(root);
  auto saver = train::Saver::Create(root);
  EXPECT_TRUE(saver.ok()) << saver.status();
  auto session = ClientSession::Create(root);
  EXPECT_TRUE(session.ok()) << session.status();
  EXPECT_TRUE((*session)->RunTargets({init}).ok());
  auto prefix = (*saver)->Save(session->get(), dir, 37);
  EXPECT_TRUE(prefix.ok()) << prefix.status();
}

// The table's rows by tensor name, each split into its cells.
std::map<std::string, std::vector<std::string>> TableRows(
    const std::string& output) {
  std::map<std::string, std::vector<std::string>> rows;
  bool in_table = false;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    std::vector<std::string> cells =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (!cells.empty() && cells[0] == "name") {
      in_table = true;
    } else if (in_table && cells.size() >= 7) {
      rows[cells[0]] = cells;
    }
  }
  return rows;
}

double Number(const std::string& text) {
  double value = 0;
  EXPECT_TRUE(absl::SimpleAtod(text, &value)) << text;
  return value;
}

// Printed with 6 significant digits.
void ExpectClose(const std::string& printed, double expected,
                 const std::string& what) {
  EXPECT_NEAR(Number(printed), expected,
              1e-5 * std::max(1.0, std::abs(expected)))
      << what;
}

TEST(InspectCommandTest, PrintsStepAndEveryTensorsShapeAndStatistics) {
  std::map<std::string, Expected> expected;
  ScopedTempDir temp;
  const std::string& dir = temp.path();
  SaveModel(dir, &expected);
  // The directory, the index file, the prefix and a shard all name the
  // checkpoint.
  for (const std::string& path :
       {dir, dir + "/model.ckpt-37.index.json", dir + "/model.ckpt-37",
        dir + "/model.ckpt-37.shard-00000-of-00001.safetensors"}) {
    CommandResult run = RunDistflow({"inspect", path});
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_THAT(run.output, HasSubstr("global step: 37"));
    EXPECT_THAT(run.output, HasSubstr(dir + "/model.ckpt-37"));
    auto rows = TableRows(run.output);
    ASSERT_EQ(rows.size(), expected.size()) << run.output;
    for (const auto& [name, want] : expected) {
      const auto& row = rows[name];
      ASSERT_EQ(row.size(), 7u) << name << "\n" << run.output;
      EXPECT_EQ(row[2], absl::StrCat("[", absl::StrJoin(want.shape, ","), "]"))
          << name;
      ExpectClose(row[3], want.min, name + " min");
      ExpectClose(row[4], want.max, name + " max");
      ExpectClose(row[5], want.mean, name + " mean");
      EXPECT_EQ(row[6], "model.ckpt-37.shard-00000-of-00001.safetensors");
    }
    EXPECT_EQ(rows["dense/kernel"][1], "float32");
    EXPECT_EQ(rows["dense/bias"][1], "float64");
    EXPECT_EQ(rows["counts"][1], "int32");
    EXPECT_EQ(rows["global_step"][1], "int64");
  }
}

TEST(InspectCommandTest, JsonHasTheSameFactsSortedByName) {
  std::map<std::string, Expected> expected;
  ScopedTempDir temp;
  const std::string& dir = temp.path();
  SaveModel(dir, &expected);
  CommandResult run = RunDistflow({"inspect", "--json", dir});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto json = nlohmann::json::parse(run.output, nullptr, false);
  ASSERT_FALSE(json.is_discarded()) << run.output;
  EXPECT_EQ(json["global_step"], 37);
  ASSERT_EQ(json["tensors"].size(), expected.size());
  auto want = expected.begin();  // std::map: sorted by name
  for (const auto& t : json["tensors"]) {
    EXPECT_EQ(t["name"], want->first);
    EXPECT_EQ(t["shape"].get<std::vector<int64_t>>(), want->second.shape);
    EXPECT_DOUBLE_EQ(t["min"].get<double>(), want->second.min);
    EXPECT_DOUBLE_EQ(t["max"].get<double>(), want->second.max);
    EXPECT_NEAR(t["mean"].get<double>(), want->second.mean, 1e-12);
    ++want;
  }
}

TEST(InspectCommandTest, ACheckpointOfTwoPsTasksShowsEachTensorsShard) {
  // Every ps task of a real cluster writes its own shard.
  auto cluster = TestCluster::Create({{"ps", 2}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Scope root = Scope::NewRootScope();
  ops::Variable(root.WithDevice("/job:ps/task:0").WithOpName("embedding"),
                Tensor::Matrix<float>({{1, 2}, {3, 4}, {5, 6}}));
  ops::Variable(root.WithDevice("/job:ps/task:1").WithOpName("scale"),
                Tensor::Vector<double>({-8, 0.25}));
  auto init = ops::GlobalVariablesInitializer(root);
  auto saver = train::Saver::Create(root);
  ASSERT_TRUE(saver.ok()) << saver.status();
  SessionOptions options;
  options.target = (*cluster)->server("worker", 0)->target();
  auto session = ClientSession::Create(root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->RunTargets({init}).ok());
  ScopedTempDir temp;
  const std::string& dir = temp.path();
  ASSERT_TRUE((*saver)->Save(session->get(), dir, 5).ok());

  CommandResult run = RunDistflow({"inspect", dir});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("in 2 shards"));
  auto rows = TableRows(run.output);
  EXPECT_EQ(rows["embedding"][6],
            "model.ckpt-5.shard-00000-of-00002.safetensors");
  EXPECT_EQ(rows["embedding"][3], "1");
  EXPECT_EQ(rows["embedding"][5], "3.5");
  EXPECT_EQ(rows["scale"][6], "model.ckpt-5.shard-00001-of-00002.safetensors");
  EXPECT_EQ(rows["scale"][4], "0.25");
  EXPECT_EQ(rows["scale"][5], "-3.875");
}

TEST(InspectCommandTest, ADamagedTensorIsReportedNamingItAndItsFile) {
  std::map<std::string, Expected> expected;
  ScopedTempDir temp;
  const std::string& dir = temp.path();
  SaveModel(dir, &expected);
  const std::string shard =
      dir + "/model.ckpt-37.shard-00000-of-00001.safetensors";
  uint64_t offset = 0;
  {
    auto reader = SafetensorsReader::Open(shard);
    ASSERT_TRUE(reader.ok()) << reader.status();
    const SafetensorsReader::Entry* bias = (*reader)->Find("dense/bias");
    ASSERT_NE(bias, nullptr);
    uint64_t header_size = 0;
    std::ifstream in(shard, std::ios::binary);
    in.read(reinterpret_cast<char*>(&header_size), sizeof(header_size));
    offset = sizeof(header_size) + header_size + bias->begin + 3;
  }
  {
    std::fstream file(shard, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(offset);
    char byte = 0;
    file.read(&byte, 1);
    byte ^= 0x10;
    file.seekp(offset);
    file.write(&byte, 1);
  }
  CommandResult run = RunDistflow({"inspect", dir});
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("DATA_LOSS"));
  EXPECT_THAT(run.output, HasSubstr("'dense/bias'"));
  EXPECT_THAT(run.output, HasSubstr(shard));
  EXPECT_THAT(run.output, HasSubstr("1 of 4 tensors"));
  // The intact tensors are still shown.
  auto rows = TableRows(run.output);
  ExpectClose(rows["dense/kernel"][3], expected["dense/kernel"].min, "min");
}

TEST(InspectCommandTest, APathWithoutCheckpointIsNamed) {
  ScopedTempDir temp;
  const std::string& dir = temp.path();
  CommandResult run = RunDistflow({"inspect", dir});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.output, HasSubstr(dir));
  run = RunDistflow({"inspect", dir + "/model.ckpt-5"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.output, HasSubstr("model.ckpt-5.index.json"));
}

TEST(InspectCommandTest, AMissingArgumentIsAUsageError) {
  CommandResult run = RunDistflow({"inspect"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.output, HasSubstr("CHECKPOINT"));
}

}  // namespace
}  // namespace distflow
