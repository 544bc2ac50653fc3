// Saver in a local session: files, round trips, max_to_keep, fallback from a
// damaged checkpoint, errors, and an independent reader of the shard files.
#include "distflow/train/saver.h"

#include <stdio.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/file.h"
#include "core/safetensors.h"
#include "distflow/ops.h"
#include "distflow/session.h"
#include "distflow/train/global_step.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"
#include "nlohmann/json.hpp"
#include "train/checkpoint_files.h"
#include "train/checkpoint_test_util.h"

namespace distflow {
namespace train {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

// A small model: a dense layer's kernel and bias, and the global step.
struct Model {
  Scope root = Scope::NewRootScope();
  ops::Variable kernel, bias, step;
  Output set_kernel_to, set_bias_to;  // placeholders assigned by `assign`
  Operation assign;

  Model() {
    Scope layer = root.NewSubScope("layer1");
    kernel = ops::Variable(layer.WithOpName("kernel"),
                           Tensor::Matrix<float>({{1, 2, 3}, {4, 5, 6}}));
    bias = ops::Variable(layer.WithOpName("bias"),
                         Tensor::Vector<double>({0.5, -0.5, 1e-3}));
    step = GetOrCreateGlobalStep(root);
    set_kernel_to = ops::Placeholder(root, DataType::kFloat);
    set_bias_to = ops::Placeholder(root, DataType::kDouble);
    assign = ops::Group(root, {ops::Assign(root, kernel, set_kernel_to).op(),
                               ops::Assign(root, bias, set_bias_to).op()});
  }
  // Sets the kernel to `k` everywhere and the bias to `b` everywhere.
  absl::Status Set(ClientSession* session, float k, double b) {
    Tensor kt(DataType::kFloat, TensorShape({2, 3}));
    for (float& x : kt.flat<float>()) x = k;
    Tensor bt(DataType::kDouble, TensorShape({3}));
    for (double& x : bt.flat<double>()) x = b;
    return session->Run({{set_kernel_to, kt}, {set_bias_to, bt}}, {}, {assign})
        .status();
  }
  // The first element of the kernel and of the bias.
  std::pair<float, double> Get(ClientSession* session) {
    auto got = session->Run({kernel, bias});
    EXPECT_TRUE(got.ok()) << got.status();
    if (!got.ok()) return {0, 0};
    return {(*got)[0].flat<float>()[0], (*got)[1].flat<double>()[0]};
  }
};

TEST(SaverTest, SavesOneShardIndexAndCheckpointFile) {
  Model m;
  auto saver = Saver::Create(m.root);
  ASSERT_TRUE(saver.ok()) << saver.status();
  EXPECT_EQ((*saver)->num_shards(), 1);
  auto session = test::InitializedSession(m.root);
  ASSERT_TRUE(session.ok()) << session.status();
  const std::string dir = TestDir() + "/train";  // created by Save
  auto prefix = (*saver)->Save(session->get(), dir, 42);
  ASSERT_TRUE(prefix.ok()) << prefix.status();
  EXPECT_EQ(*prefix, dir + "/model.ckpt-42");
  EXPECT_THAT(
      Files(dir),
      ElementsAre("checkpoint", "checkpoint.lock", "model.ckpt-42.index.json",
                  "model.ckpt-42.shard-00000-of-00001.safetensors"));
  EXPECT_EQ(*LatestCheckpoint(dir), *prefix);

  auto index = ReadCheckpointIndex(IndexPath(*prefix));
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(index->global_step, 42);
  EXPECT_THAT(index->shards,
              ElementsAre("model.ckpt-42.shard-00000-of-00001.safetensors"));
  ASSERT_EQ(index->tensors.size(), 3u);
  EXPECT_EQ(index->tensors.at("layer1/kernel").dtype, DataType::kFloat);
  EXPECT_EQ(index->tensors.at("layer1/kernel").shape, TensorShape({2, 3}));
  EXPECT_EQ(index->tensors.at("global_step").dtype, DataType::kInt64);

  // The shard names its tensors after the variables.
  auto reader = SafetensorsReader::Open(dir + "/" + index->shards[0]);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<std::string> names;
  for (const auto& e : (*reader)->entries()) names.push_back(e.name);
  EXPECT_THAT(names, UnorderedElementsAre("layer1/kernel", "layer1/bias",
                                          "global_step"));
  EXPECT_TRUE((*reader)
                  ->Read("layer1/kernel")
                  ->Equals(Tensor::Matrix<float>({{1, 2, 3}, {4, 5, 6}})));
}

TEST(SaverTest, RestoreBringsBackTheSavedValues) {
  Model m;
  auto saver = Saver::Create(m.root);
  ASSERT_TRUE(saver.ok()) << saver.status();
  auto session = test::InitializedSession(m.root);
  ASSERT_TRUE(session.ok());
  const std::string dir = TestDir();
  ASSERT_TRUE(m.Set(session->get(), 7, 0.25).ok());
  auto prefix = (*saver)->Save(session->get(), dir, 1);
  ASSERT_TRUE(prefix.ok()) << prefix.status();
  ASSERT_TRUE(m.Set(session->get(), -1, -1).ok());
  ASSERT_TRUE((*saver)->Restore(session->get(), *prefix).ok());
  EXPECT_EQ(m.Get(session->get()), std::make_pair(7.0f, 0.25));

  // A fresh session whose variables were never initialized restores too.
  auto fresh = ClientSession::Create(m.root);
  ASSERT_TRUE(fresh.ok());
  auto info = (*saver)->RestoreLatest(fresh->get(), dir);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->prefix, *prefix);
  EXPECT_EQ(info->global_step, 1);
  EXPECT_EQ(m.Get(fresh->get()), std::make_pair(7.0f, 0.25));
}

TEST(SaverTest, KeepsOnlyTheNewestMaxToKeep) {
  Model m;
  SaverOptions options;
  options.max_to_keep = 2;
  options.basename = "mlp";
  auto saver = Saver::Create(m.root, options);
  ASSERT_TRUE(saver.ok());
  auto session = test::InitializedSession(m.root);
  ASSERT_TRUE(session.ok());
  const std::string dir = TestDir();
  for (int step : {100, 200, 300}) {
    ASSERT_TRUE((*saver)->Save(session->get(), dir, step).ok());
  }
  EXPECT_THAT(Files(dir),
              ElementsAre("checkpoint", "checkpoint.lock", "mlp-200.index.json",
                          "mlp-200.shard-00000-of-00001.safetensors",
                          "mlp-300.index.json",
                          "mlp-300.shard-00000-of-00001.safetensors"));
  EXPECT_THAT(ReadCheckpointState(dir)->prefixes,
              ElementsAre("mlp-200", "mlp-300"));
  EXPECT_EQ(*LatestCheckpoint(dir), dir + "/mlp-300");
  // Saving a step again replaces it and makes it the latest.
  ASSERT_TRUE((*saver)->Save(session->get(), dir, 200).ok());
  EXPECT_THAT(ReadCheckpointState(dir)->prefixes,
              ElementsAre("mlp-300", "mlp-200"));
}

// Flips one byte near the end of the only shard of `prefix`.
void DamageShard(const std::string& prefix) {
  const std::string path = prefix + ".shard-00000-of-00001.safetensors";
  std::string bytes = *ReadFileToString(path);
  bytes[bytes.size() - 2] ^= 0x01;
  ASSERT_TRUE(WriteFileAtomically(path, bytes).ok());
}

TEST(SaverTest, DamagedNewestCheckpointFallsBackToThePreviousOne) {
  Model m;
  auto saver = Saver::Create(m.root);
  ASSERT_TRUE(saver.ok());
  auto session = test::InitializedSession(m.root);
  ASSERT_TRUE(session.ok());
  const std::string dir = TestDir();
  ASSERT_TRUE(m.Set(session->get(), 1, 1).ok());
  auto first = (*saver)->Save(session->get(), dir, 10);
  ASSERT_TRUE(m.Set(session->get(), 2, 2).ok());
  auto second = (*saver)->Save(session->get(), dir, 20);
  ASSERT_TRUE(first.ok() && second.ok());
  DamageShard(*second);
  ASSERT_TRUE(m.Set(session->get(), 3, 3).ok());

  absl::Status s = (*saver)->Restore(session->get(), *second);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(s.message(), HasSubstr("model.ckpt-20.shard-00000-of-00001"));
  EXPECT_THAT(s.message(), HasSubstr("CRC32C"));
  EXPECT_THAT(s.message(), HasSubstr("tensor '"));

  auto info = (*saver)->RestoreLatest(session->get(), dir);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->prefix, *first);
  EXPECT_EQ(info->global_step, 10);
  EXPECT_EQ(m.Get(session->get()), std::make_pair(1.0f, 1.0));

  // A newest checkpoint that lost its index falls back too; when none is
  // left, the error is the newest one's.
  std::filesystem::remove(IndexPath(*second));
  info = (*saver)->RestoreLatest(session->get(), dir);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->global_step, 10);
  DamageShard(*first);
  info = (*saver)->RestoreLatest(session->get(), dir);
  EXPECT_EQ(info.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(info.status().message(), HasSubstr("none of the 2 checkpoints"));
  EXPECT_THAT(info.status().message(), HasSubstr("model.ckpt-20.index.json"));
}

TEST(SaverTest, EmptyDirectoryHasNoCheckpoint) {
  Model m;
  auto saver = Saver::Create(m.root);
  ASSERT_TRUE(saver.ok());
  auto session = ClientSession::Create(m.root);
  ASSERT_TRUE(session.ok());
  const std::string dir = TestDir();
  auto info = (*saver)->RestoreLatest(session->get(), dir);
  EXPECT_EQ(info.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(info.status().message(), HasSubstr(dir));
  EXPECT_EQ(LatestCheckpoint(dir).status().code(), absl::StatusCode::kNotFound);
}

TEST(SaverTest, CheckpointThatDoesNotFitTheGraphIsAnErrorNamingTheTensor) {
  const std::string dir = TestDir();
  std::string prefix;
  {
    Scope s = Scope::NewRootScope();
    ops::Variable w(s.WithOpName("w"), Tensor::Vector<float>({1, 2}));
    auto saver = Saver::Create(s);
    auto session = test::InitializedSession(s);
    ASSERT_TRUE(saver.ok() && session.ok());
    auto saved = (*saver)->Save(session->get(), dir, 0);
    ASSERT_TRUE(saved.ok()) << saved.status();
    prefix = *saved;
  }
  {  // A variable the checkpoint lacks.
    Scope s = Scope::NewRootScope();
    ops::Variable w(s.WithOpName("w"), Tensor::Vector<float>({1, 2}));
    ops::Variable v(s.WithOpName("v"), Tensor::Vector<float>({1, 2}));
    auto saver = Saver::Create(s);
    auto session = ClientSession::Create(s);
    ASSERT_TRUE(saver.ok() && session.ok());
    absl::Status st = (*saver)->Restore(session->get(), prefix);
    EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(st.message(), HasSubstr("no tensor 'v'"));
  }
  {  // A variable of another shape.
    Scope s = Scope::NewRootScope();
    ops::Variable w(s.WithOpName("w"), Tensor::Vector<float>({1, 2, 3}));
    auto saver = Saver::Create(s);
    auto session = ClientSession::Create(s);
    ASSERT_TRUE(saver.ok() && session.ok());
    absl::Status st = (*saver)->Restore(session->get(), prefix);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(st.message(), HasSubstr("tensor 'w' as float32[2]"));
    EXPECT_THAT(st.message(), HasSubstr("float32[3]"));
  }
}

TEST(SaverTest, CreateRefusesWhatCannotBeSaved) {
  Scope empty = Scope::NewRootScope();
  auto saver = Saver::Create(empty);
  EXPECT_EQ(saver.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(saver.status().message(), HasSubstr("no variables"));

  Scope s = Scope::NewRootScope();
  ops::Variable names(s.WithOpName("vocabulary"),
                      Tensor::Vector<std::string>({"a", "b"}));
  saver = Saver::Create(s);
  EXPECT_EQ(saver.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(saver.status().message(), HasSubstr("'vocabulary'"));

  Scope t = Scope::NewRootScope();
  ops::Variable w(t, 1.0f);
  SaverOptions bad;
  bad.max_to_keep = -1;
  EXPECT_EQ(Saver::Create(t, bad).status().code(),
            absl::StatusCode::kInvalidArgument);
  bad = SaverOptions();
  bad.basename = "a/b";
  EXPECT_THAT(Saver::Create(t, bad).status().message(), HasSubstr("'a/b'"));
}

TEST(SaverTest, SavingAnUninitializedVariableNamesIt) {
  Model m;
  auto saver = Saver::Create(m.root);
  auto session = ClientSession::Create(m.root);
  ASSERT_TRUE(saver.ok() && session.ok());
  const std::string dir = TestDir();
  auto prefix = (*saver)->Save(session->get(), dir, 5);
  EXPECT_EQ(prefix.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(prefix.status().message(), HasSubstr("not initialized"));
  EXPECT_TRUE(Files(dir).empty());  // nothing half-written is left
}

// The shard read by src/train/testdata/read_safetensors.py with json and
// numpy only, CRCs recomputed in Python.
TEST(SaverTest, NumpyReadsTheShardWithoutDistflow) {
  if (system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0) {
    GTEST_SKIP() << "needs /usr/bin/python3 with numpy (Debian's "
                    "python3-numpy) to run the independent reader";
  }
  Model m;
  auto saver = Saver::Create(m.root);
  auto session = test::InitializedSession(m.root);
  ASSERT_TRUE(saver.ok() && session.ok());
  const std::string dir = TestDir();
  auto prefix = (*saver)->Save(session->get(), dir, 3);
  ASSERT_TRUE(prefix.ok());
  const std::string command = absl::StrCat(
      "/usr/bin/python3 ", DISTFLOW_TRAIN_TESTDATA, "/read_safetensors.py ",
      *prefix, ".shard-00000-of-00001.safetensors 2>&1");
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
  ASSERT_EQ(pclose(pipe), 0) << output;
  const auto json = nlohmann::json::parse(output, nullptr, false);
  ASSERT_FALSE(json.is_discarded()) << output;
  const auto& kernel = json["layer1/kernel"];
  EXPECT_EQ(kernel["dtype"], "float32");
  EXPECT_EQ(kernel["shape"], nlohmann::json({2, 3}));
  EXPECT_EQ(kernel["values"], nlohmann::json({1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(json["layer1/bias"]["dtype"], "float64");
  EXPECT_EQ(json["layer1/bias"]["values"], nlohmann::json({0.5, -0.5, 1e-3}));
  EXPECT_EQ(json["global_step"]["dtype"], "int64");
  EXPECT_EQ(json["global_step"]["shape"], nlohmann::json::array());
  EXPECT_EQ(json["global_step"]["values"], nlohmann::json::array({0}));
}

}  // namespace
}  // namespace train
}  // namespace distflow
