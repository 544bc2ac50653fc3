#include "distflow/layers.h"

#include <cmath>

#include "distflow/gradients.h"
#include "distflow/ops.h"
#include "distflow/session.h"
#include "distflow/train/global_step.h"
#include "distflow/train/optimizers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

// Runs the initializers, then fetches `fetches`.
std::vector<Tensor> InitAndRun(const Scope& s, const std::vector<Output>& fetches,
                               const ClientSession::FeedDict& feeds = {}) {
  auto session = ClientSession::Create(s);
  EXPECT_TRUE(session.ok()) << session.status();
  EXPECT_TRUE((*session)->RunTargets({ops::GlobalVariablesInitializer(s)}).ok());
  auto out = (*session)->Run(feeds, fetches);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::vector<Tensor>();
}

Output VariableNamed(const Scope& s, const std::string& name) {
  for (Node* n : s.graph()->nodes()) {
    if (n->name() == name) return Output(n, 0);
  }
  return Output();
}

TEST(DenseTest, ComputesActivationOfAffineMap) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Const(s, Tensor::Matrix<float>({{1, -2, 3}, {0.5, 4, -1}}));
  layers::DenseOptions options;
  options.name = "fc";
  options.seed = 7;
  auto y = layers::Dense(s, x, 2, Activation::kRelu, options);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(y.shape().DebugString(), "[2,2]");
  Output kernel = VariableNamed(s, "fc/kernel/read");
  Output bias = VariableNamed(s, "fc/bias/read");
  ASSERT_TRUE(kernel.valid() && bias.valid());
  auto out = InitAndRun(s, {y, kernel, bias});
  ASSERT_EQ(out.size(), 3u);
  const Tensor& w = out[1];
  const Tensor& xv = *test::RunOne(s, x);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      double sum = out[2].flat<float>()[j];
      for (int k = 0; k < 3; ++k) {
        sum += xv.flat<float>()[i * 3 + k] * w.flat<float>()[k * 2 + j];
      }
      EXPECT_NEAR(out[0].flat<float>()[i * 2 + j], std::max(sum, 0.0), 1e-5);
    }
  }
  // Glorot-uniform start: within sqrt(6 / (fan_in + fan_out)), not all equal.
  const double limit = std::sqrt(6.0 / (3 + 2));
  for (float v : w.flat<float>()) EXPECT_LE(std::abs(v), limit);
  EXPECT_NE(w.flat<float>()[0], w.flat<float>()[1]);
}

TEST(DenseTest, UnknownInputWidthIsAnErrorNamingTheLayer) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s, DataType::kFloat, PartialTensorShape({-1, -1}));
  layers::DenseOptions options;
  options.name = "head";
  layers::Dense(s, x, 4, Activation::kNone, options);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("head"));
}

TEST(Conv2DLayerTest, MatchesANaiveConvolution) {
  Scope s = Scope::NewRootScope();
  std::vector<float> pixels(16);
  for (int i = 0; i < 16; ++i) pixels[i] = 0.1f * i - 0.5f;
  auto x = ops::Const(s, test::MakeTensor<float>(TensorShape({1, 4, 4, 1}),
                                                 pixels));
  layers::Conv2DOptions options;
  options.name = "conv";
  auto y = layers::Conv2D(s, x, 2, 3, Activation::kNone, options);
  ASSERT_TRUE(s.ok()) << s.status();
  auto out = InitAndRun(s, {y, VariableNamed(s, "conv/kernel/read")});
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0].shape().DebugString(), "[1,4,4,2]");
  const Tensor& k = out[1];  // [3,3,1,2]
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 4; ++c) {
      for (int f = 0; f < 2; ++f) {
        double sum = 0;  // SAME padding: a 3x3 window centred on (r, c)
        for (int i = 0; i < 3; ++i) {
          for (int j = 0; j < 3; ++j) {
            const int rr = r + i - 1, cc = c + j - 1;
            if (rr < 0 || rr >= 4 || cc < 0 || cc >= 4) continue;
            sum += pixels[rr * 4 + cc] * k.flat<float>()[(i * 3 + j) * 2 + f];
          }
        }
        EXPECT_NEAR(out[0].flat<float>()[(r * 4 + c) * 2 + f], sum, 1e-5);
      }
    }
  }
}

TEST(PoolAndFlattenTest, PoolThenFlatten) {
  Scope s = Scope::NewRootScope();
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = i;
  auto x = ops::Const(s, test::MakeTensor<float>(TensorShape({1, 4, 4, 1}), v));
  auto flat = layers::Flatten(s, layers::MaxPool2D(s, x, 2, 2));
  ASSERT_TRUE(s.ok()) << s.status();
  auto out = test::RunOne(s, flat);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->Equals(Tensor::Matrix<float>({{5, 7, 13, 15}})))
      << out->DebugString();
}

TEST(DropoutLayerTest, RateZeroIsIdentityAndOtherwiseScalesKeptValues) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Ones(s, TensorShape({1000}));
  auto rate = ops::Placeholder(s, DataType::kFloat, PartialTensorShape({}));
  auto y = layers::Dropout(s, x, rate, 3);
  auto off = test::RunOne(s, y, {{rate, Tensor::Scalar(0.0f)}});
  ASSERT_TRUE(off.ok()) << off.status();
  for (float v : off->flat<float>()) EXPECT_EQ(v, 1.0f);
  auto on = test::RunOne(s, y, {{rate, Tensor::Scalar(0.5f)}});
  ASSERT_TRUE(on.ok()) << on.status();
  int kept = 0;
  for (float v : on->flat<float>()) {
    EXPECT_TRUE(v == 0.0f || v == 2.0f) << v;
    kept += v != 0;
  }
  EXPECT_GT(kept, 400);
  EXPECT_LT(kept, 600);
}

TEST(EmbeddingTest, LooksUpRowsAndHasASparseGradient) {
  Scope s = Scope::NewRootScope();
  auto ids = ops::Const(s, Tensor::Vector<int32_t>({3, 0, 3}));
  layers::EmbeddingOptions options;
  options.name = "emb";
  auto rows = layers::Embedding(s, ids, 5, 2, options);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(rows.shape().DebugString(), "[3,2]");
  Output table = VariableNamed(s, "emb/embeddings/read");
  auto grads = Gradients(s, {rows}, {table});
  ASSERT_TRUE(grads.ok()) << grads.status();
  ASSERT_TRUE((*grads)[0].is_sparse());
  auto out = InitAndRun(
      s, {rows, table, (*grads)[0].sparse().indices, (*grads)[0].ToDense(s)});
  ASSERT_EQ(out.size(), 4u);
  for (int j = 0; j < 2; ++j) {
    EXPECT_EQ(out[0].flat<float>()[j], out[1].flat<float>()[3 * 2 + j]);
    EXPECT_EQ(out[0].flat<float>()[2 + j], out[1].flat<float>()[j]);
  }
  EXPECT_EQ(out[2].NumElements(), 3);  // only the rows looked up
  // Row 3 was looked up twice, row 0 once, the others never.
  EXPECT_EQ(out[3].flat<float>()[3 * 2], 2.0f);
  EXPECT_EQ(out[3].flat<float>()[0], 1.0f);
  EXPECT_EQ(out[3].flat<float>()[1 * 2], 0.0f);
}

TEST(LossesTest, SparseSoftmaxCrossEntropyIsTheMeanNegativeLogLikelihood) {
  Scope s = Scope::NewRootScope();
  auto logits = ops::Const(s, Tensor::Matrix<float>({{1, 2, 3}, {0, 0, 5}}));
  auto labels = ops::Const(s, Tensor::Vector<int32_t>({2, 0}));
  auto loss = losses::SparseSoftmaxCrossEntropy(s, labels, logits);
  auto out = test::RunOne(s, loss);
  ASSERT_TRUE(out.ok()) << out.status();
  const double row0 = -3 + std::log(std::exp(1) + std::exp(2) + std::exp(3));
  const double row1 = -0 + std::log(2 + std::exp(5));
  EXPECT_NEAR(out->scalar<float>(), (row0 + row1) / 2, 1e-5);

  auto onehot = ops::Const(s, Tensor::Matrix<float>({{0, 0, 1}, {1, 0, 0}}));
  auto dense = test::RunOne(s, losses::SoftmaxCrossEntropy(s, onehot, logits));
  ASSERT_TRUE(dense.ok()) << dense.status();
  EXPECT_NEAR(dense->scalar<float>(), (row0 + row1) / 2, 1e-5);
}

TEST(LossesTest, MeanSquaredErrorAveragesEveryElement) {
  Scope s = Scope::NewRootScope();
  auto labels = ops::Const(s, Tensor::Matrix<float>({{1, 2}, {3, 4}}));
  auto predictions = ops::Const(s, Tensor::Matrix<float>({{1, 0}, {6, 4}}));
  auto out = test::RunOne(s, losses::MeanSquaredError(s, labels, predictions));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR(out->scalar<float>(), (0 + 4 + 9 + 0) / 4.0, 1e-6);
}

TEST(MetricsTest, AccuracyCountsRowsWhoseArgMaxIsTheLabel) {
  Scope s = Scope::NewRootScope();
  auto logits = ops::Const(
      s, Tensor::Matrix<float>({{1, 2}, {3, 0}, {0, 9}, {5, 4}}));
  auto labels = ops::Const(s, Tensor::Vector<int32_t>({1, 0, 0, 0}));
  auto out = test::RunOne(s, metrics::Accuracy(s, labels, logits));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FLOAT_EQ(out->scalar<float>(), 0.75f);
}

// Layers, a loss and an optimizer together learn a problem: which side of the
// line x0 = x1 a point lies on.
TEST(TrainingTest, SmallNetworkLearnsASeparableProblem) {
  Scope s = Scope::NewRootScope();
  const int n = 256;
  std::vector<float> points = test::RandomValues<float>(2 * n, 11);
  std::vector<int32_t> classes(n);
  for (int i = 0; i < n; ++i) classes[i] = points[2 * i] > points[2 * i + 1];
  auto x = ops::Const(s, test::MakeTensor<float>(TensorShape({n, 2}), points));
  auto labels =
      ops::Const(s, test::MakeTensor<int32_t>(TensorShape({n}), classes));
  layers::DenseOptions o1, o2;
  o1.name = "hidden";
  o1.seed = 1;
  o2.name = "out";
  o2.seed = 2;
  auto logits = layers::Dense(
      s, layers::Dense(s, x, 16, Activation::kTanh, o1), 2,
      Activation::kNone, o2);
  auto loss = losses::SparseSoftmaxCrossEntropy(s, labels, logits);
  auto accuracy = metrics::Accuracy(s, labels, logits);
  auto step = train::GetOrCreateGlobalStep(s);
  train::AdamOptimizer adam(0.05);
  auto train_op = adam.Minimize(s, loss, step);
  ASSERT_TRUE(train_op.ok()) << train_op.status();
  auto session = ClientSession::Create(s);
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->RunTargets({ops::GlobalVariablesInitializer(s)}).ok());
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE((*session)->RunTargets({*train_op}).ok());
  }
  auto out = (*session)->Run({accuracy, step});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_GT((*out)[0].scalar<float>(), 0.95f);
  EXPECT_EQ((*out)[1].scalar<int64_t>(), 200);
}

}  // namespace
}  // namespace distflow
