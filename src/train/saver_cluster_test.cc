// Saver on an in-process cluster (real gRPC servers on 127.0.0.1): every ps
// task writes its own shard, and a checkpoint restores onto another number of
// ps tasks.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/safetensors.h"
#include "distflow/distflow.h"
#include "distributed/rpc/test_cluster.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "train/checkpoint_test_util.h"

namespace distflow {
namespace train {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

// Four variables spread round-robin over `num_ps` ps tasks, in this order.
struct Model {
  Scope root = Scope::NewRootScope();
  std::vector<ops::Variable> vars;
  Operation init;

  explicit Model(int num_ps) {
    const Scope layer1 = root.NewSubScope("layer1");
    const Scope layer2 = root.NewSubScope("layer2");
    auto on_ps = [num_ps](const Scope& s, int i) {
      return s.WithDevice("/job:ps/task:" + std::to_string(i % num_ps));
    };
    vars.emplace_back(on_ps(layer1, 0).WithOpName("kernel"),
                      Tensor::Matrix<float>({{1, 2, 3}, {4, 5, 6}}));
    vars.emplace_back(on_ps(layer1, 1).WithOpName("bias"),
                      Tensor::Vector<float>({0.1f, 0.2f, 0.3f}));
    vars.emplace_back(on_ps(layer2, 2).WithOpName("kernel"),
                      Tensor::Matrix<double>({{-1}, {-2}, {-3}}));
    vars.push_back(GetOrCreateGlobalStep(on_ps(root, 3)));
    init = ops::GlobalVariablesInitializer(root);
  }
  std::vector<Output> outputs() const {
    return std::vector<Output>(vars.begin(), vars.end());
  }
};

std::unique_ptr<ClientSession> Connect(const Model& model,
                                       TestCluster* cluster) {
  SessionOptions options;
  options.target = cluster->server("worker", 0)->target();
  auto session = ClientSession::Create(model.root, options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(*session) : nullptr;
}

std::vector<std::string> TensorsOf(const std::string& shard_path) {
  auto reader = SafetensorsReader::Open(shard_path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  std::vector<std::string> names;
  if (reader.ok()) {
    for (const auto& e : (*reader)->entries()) names.push_back(e.name);
  }
  return names;
}

class SaverClusterTest : public ::testing::Test {
 protected:
  // Saves the 2-ps model at step 9, with the global step set to 9; returns
  // the prefix and the values.
  void SaveOnTwoPsTasks() {
    auto cluster = TestCluster::Create({{"ps", 2}, {"worker", 1}});
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    Model model(2);
    Output set_step = ops::Assign(model.root, model.vars[3], int64_t{9});
    auto saver = Saver::Create(model.root);
    ASSERT_TRUE(saver.ok()) << saver.status();
    EXPECT_EQ((*saver)->num_shards(), 2);
    auto session = Connect(model, cluster->get());
    ASSERT_NE(session, nullptr);
    ASSERT_TRUE(session->RunTargets({model.init}).ok());
    ASSERT_TRUE(session->Run({set_step}).ok());
    auto values = session->Run(model.outputs());
    ASSERT_TRUE(values.ok()) << values.status();
    saved_values_ = *values;
    auto prefix = (*saver)->Save(session.get(), dir_, 9);
    ASSERT_TRUE(prefix.ok()) << prefix.status();
    prefix_ = *prefix;
  }

  const std::string dir_ = TestDir();
  std::string prefix_;
  std::vector<Tensor> saved_values_;
};

TEST_F(SaverClusterTest, EachPsTaskWritesItsOwnShard) {
  SaveOnTwoPsTasks();
  ASSERT_FALSE(HasFatalFailure());
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    files.push_back(e.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  EXPECT_THAT(
      files,
      ElementsAre("checkpoint", "checkpoint.lock", "model.ckpt-9.index.json",
                  "model.ckpt-9.shard-00000-of-00002.safetensors",
                  "model.ckpt-9.shard-00001-of-00002.safetensors"));
  // Shard i holds exactly the variables of ps task i: a SaveShard can read
  // only the variables of the task it runs on.
  EXPECT_THAT(TensorsOf(prefix_ + ".shard-00000-of-00002.safetensors"),
              UnorderedElementsAre("layer1/kernel", "layer2/kernel"));
  EXPECT_THAT(TensorsOf(prefix_ + ".shard-00001-of-00002.safetensors"),
              UnorderedElementsAre("layer1/bias", "global_step"));
}

TEST_F(SaverClusterTest, RestoresOntoOneAndOntoThreePsTasks) {
  SaveOnTwoPsTasks();
  ASSERT_FALSE(HasFatalFailure());
  for (int num_ps : {1, 3}) {
    SCOPED_TRACE(absl::StrCat(num_ps, " ps tasks"));
    auto cluster = TestCluster::Create({{"ps", num_ps}, {"worker", 1}});
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    Model model(num_ps);
    auto saver = Saver::Create(model.root);
    ASSERT_TRUE(saver.ok()) << saver.status();
    EXPECT_EQ((*saver)->num_shards(), num_ps);
    auto session = Connect(model, cluster->get());
    ASSERT_NE(session, nullptr);
    // No initializer runs: every value below comes from the checkpoint.
    auto info = (*saver)->RestoreLatest(session.get(), dir_);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->prefix, prefix_);
    EXPECT_EQ(info->global_step, 9);
    auto values = session->Run(model.outputs());
    ASSERT_TRUE(values.ok()) << values.status();
    for (size_t i = 0; i < values->size(); ++i) {
      EXPECT_TRUE((*values)[i].Equals(saved_values_[i]))
          << model.vars[i].var_name() << ": " << (*values)[i].DebugString();
    }
    // And a checkpoint of this layout restores onto it again.
    auto again = (*saver)->Save(session.get(), dir_ + "/again", 10);
    ASSERT_TRUE(again.ok()) << again.status();
    ASSERT_TRUE((*saver)->Restore(session.get(), *again).ok());
  }
}

// A training job as it runs: variables placed by the replica device setter,
// Adam's slots beside them on the ps tasks.
struct Trainer {
  Scope root = Scope::NewRootScope();
  ops::Variable step;
  Output loss;
  absl::StatusOr<Operation> train;

  Trainer() {
    Scope s = root.WithDeviceFunction(ReplicaDeviceSetter(
        2, "/job:worker/task:0", ReplicaDeviceSetterOptions()));
    step = GetOrCreateGlobalStep(s);
    ops::Variable w(s.WithOpName("w"), Tensor::Vector<float>({0.5f, 1.5f}));
    ops::Variable b(s.WithOpName("b"), -0.25f);
    Output x = ops::Const(s, Tensor::Matrix<float>({{-1, 0}, {1, 2}, {3, 1}}));
    Output y = ops::Const(s, Tensor::Vector<float>({-1, 6, 5}));
    Output pred = ops::Add(s, ops::Sum(s, ops::Mul(s, x, w), 1), b);
    loss = ops::Mean(s, ops::Square(s, ops::Sub(s, pred, y)), 0);
    AdamOptimizer adam(0.1);
    train = adam.Minimize(s, loss, step);
  }
  // The losses after each of `steps` more training steps.
  std::vector<float> Train(ClientSession* session, int steps) {
    std::vector<float> losses;
    for (int i = 0; i < steps; ++i) {
      EXPECT_TRUE(session->RunTargets({*train}).ok());
      auto got = session->Run({loss});
      EXPECT_TRUE(got.ok()) << got.status();
      if (got.ok()) losses.push_back((*got)[0].scalar<float>());
    }
    return losses;
  }
};

TEST_F(SaverClusterTest, AdamTrainingResumesExactlyOnAFreshCluster) {
  std::vector<float> expected;
  {
    auto cluster = TestCluster::Create({{"ps", 2}, {"worker", 1}});
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    Trainer t;
    ASSERT_TRUE(t.train.ok()) << t.train.status();
    auto saver = Saver::Create(t.root);
    ASSERT_TRUE(saver.ok()) << saver.status();
    EXPECT_EQ((*saver)->num_shards(), 2);
    SessionOptions options;
    options.target = (*cluster)->server("worker", 0)->target();
    auto session = ClientSession::Create(t.root, options);
    ASSERT_TRUE(session.ok());
    ASSERT_TRUE(
        (*session)->RunTargets({ops::GlobalVariablesInitializer(t.root)}).ok());
    t.Train(session->get(), 3);
    ASSERT_TRUE((*saver)->Save(session->get(), dir_, 3).ok());
    expected = t.Train(session->get(), 2);
  }
  // Another job restores and continues: the same losses, bit for bit, only
  // if the moments, the powers of beta and the step came back too.
  auto cluster = TestCluster::Create({{"ps", 2}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Trainer t;
  ASSERT_TRUE(t.train.ok()) << t.train.status();
  auto saver = Saver::Create(t.root);
  ASSERT_TRUE(saver.ok()) << saver.status();
  SessionOptions options;
  options.target = (*cluster)->server("worker", 0)->target();
  auto session = ClientSession::Create(t.root, options);
  ASSERT_TRUE(session.ok());
  auto info = (*saver)->RestoreLatest(session->get(), dir_);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->global_step, 3);
  EXPECT_EQ(t.Train(session->get(), 2), expected);
  auto step = (*session)->Run({t.step});
  ASSERT_TRUE(step.ok());
  EXPECT_EQ((*step)[0].scalar<int64_t>(), 5);
}

}  // namespace
}  // namespace train
}  // namespace distflow
