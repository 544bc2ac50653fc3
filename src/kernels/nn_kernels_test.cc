// Activations, softmax and cross-entropy kernels, run through a local session
// and checked against naive loops computed here in long double.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "distflow/ops.h"
#include "distflow/scope.h"
#include "distflow/session.h"
#include "distflow/tensor.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"
#include "kernels/nn_test_util.h"

namespace distflow {
namespace {

using test::AllClose;
using test::HasError;
using test::RandomTensor;
using test::RunGraph;
using test::RunOne;

template <typename T>
class NnKernelTest : public ::testing::Test {
 protected:
  static constexpr DataType kType = DataTypeOf<T>::value;
  static constexpr double kTol =
      std::is_same_v<T, float> ? 2e-6 : 1e-14;  // relative to values ~1

  // Runs `build` on placeholders fed with `inputs`, with two intra-op threads
  // so that big inputs take the parallel path.
  std::vector<Tensor> Run(
      const std::vector<Tensor>& inputs,
      const std::function<std::vector<Output>(
          const Scope&, const std::vector<Output>&)>& build) {
    Scope s = Scope::NewRootScope();
    std::vector<Output> ph;
    ClientSession::FeedDict feeds;
    for (const Tensor& t : inputs) {
      ph.push_back(ops::Placeholder(s, t.dtype()));
      feeds.emplace_back(ph.back(), t);
    }
    std::vector<Output> outs = build(s, ph);
    EXPECT_TRUE(s.ok()) << s.status();
    SessionOptions options;
    options.intra_op_threads = 2;
    auto got = RunGraph(s, feeds, outs, options);
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? *got : std::vector<Tensor>(outs.size());
  }

  // Applies `f` to every element of `x`.
  static Tensor Map(const Tensor& x,
                    const std::function<long double(long double)>& f) {
    Tensor out(x.dtype(), x.shape());
    for (int64_t i = 0; i < x.NumElements(); ++i)
      out.data<T>()[i] = static_cast<T>(f(x.data<T>()[i]));
    return out;
  }
};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(NnKernelTest, FloatTypes);

// Small inputs run inline; 40,000 elements are split across threads.
const TensorShape kShapes[] = {{7}, {3, 5}, {200, 200}};

TYPED_TEST(NnKernelTest, ActivationsMatchTheirFormulas) {
  using T = TypeParam;
  for (const TensorShape& shape : kShapes) {
    SCOPED_TRACE(shape.DebugString());
    Tensor x = RandomTensor<T>(shape, 3);
    for (int64_t i = 0; i < x.NumElements(); ++i) x.data<T>()[i] *= 8;
    auto got =
        this->Run({x}, [](const Scope& s, const std::vector<Output>& in) {
          return std::vector<Output>{
              ops::Relu(s, in[0]), ops::Sigmoid(s, in[0]), ops::Tanh(s, in[0])};
        });
    EXPECT_TRUE(AllClose<T>(
        got[0], this->Map(x, [](long double v) { return v > 0 ? v : 0; }), 0));
    EXPECT_TRUE(AllClose<T>(
        got[1],
        this->Map(x, [](long double v) { return 1 / (1 + std::exp(-v)); }),
        this->kTol, this->kTol));
    EXPECT_TRUE(AllClose<T>(
        got[2], this->Map(x, [](long double v) { return std::tanh(v); }),
        this->kTol, this->kTol));
  }
}

TYPED_TEST(NnKernelTest, ActivationGradientsMatchTheirFormulas) {
  using T = TypeParam;
  for (const TensorShape& shape : kShapes) {
    SCOPED_TRACE(shape.DebugString());
    const Tensor a = RandomTensor<T>(shape, 5);
    const Tensor dy = RandomTensor<T>(shape, 6);
    auto got =
        this->Run({a, dy}, [](const Scope& s, const std::vector<Output>& in) {
          return std::vector<Output>{ops::ReluGrad(s, in[1], in[0]),
                                     ops::SigmoidGrad(s, in[0], in[1]),
                                     ops::TanhGrad(s, in[0], in[1])};
        });
    Tensor relu(a.dtype(), shape), sig(a.dtype(), shape),
        tanh(a.dtype(), shape);
    for (int64_t i = 0; i < a.NumElements(); ++i) {
      const long double y = a.data<T>()[i], g = dy.data<T>()[i];
      relu.data<T>()[i] = y > 0 ? g : 0;
      sig.data<T>()[i] = static_cast<T>(g * y * (1 - y));
      tanh.data<T>()[i] = static_cast<T>(g * (1 - y * y));
    }
    EXPECT_TRUE(AllClose<T>(got[0], relu, 0));
    EXPECT_TRUE(AllClose<T>(got[1], sig, this->kTol));
    EXPECT_TRUE(AllClose<T>(got[2], tanh, this->kTol));
  }
}

// log-softmax of each row along the last axis, in long double.
template <typename T>
std::vector<long double> NaiveLogSoftmax(const Tensor& x) {
  const int64_t cols = x.dim_size(x.dims() - 1);
  std::vector<long double> out(x.NumElements());
  for (int64_t r = 0; r < x.NumElements() / cols; ++r) {
    long double max = -std::numeric_limits<long double>::infinity();
    for (int64_t j = 0; j < cols; ++j)
      max = std::max<long double>(max, x.data<T>()[r * cols + j]);
    long double sum = 0;
    for (int64_t j = 0; j < cols; ++j)
      sum += std::exp(x.data<T>()[r * cols + j] - max);
    for (int64_t j = 0; j < cols; ++j)
      out[r * cols + j] = x.data<T>()[r * cols + j] - max - std::log(sum);
  }
  return out;
}

template <typename T>
Tensor FromValues(const TensorShape& shape,
                  const std::vector<long double>& values) {
  Tensor t(DataTypeOf<T>::value, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i)
    t.data<T>()[i] = static_cast<T>(values[i]);
  return t;
}

TYPED_TEST(NnKernelTest, SoftmaxAndLogSoftmaxAlongTheLastAxis) {
  using T = TypeParam;
  for (const TensorShape& shape :
       {TensorShape({6}), TensorShape({4, 3, 10}), TensorShape({300, 100})}) {
    SCOPED_TRACE(shape.DebugString());
    Tensor x = RandomTensor<T>(shape, 9);
    // Logits far beyond exp's range: a naive exp(x) / sum would overflow.
    for (int64_t i = 0; i < x.NumElements(); ++i) x.data<T>()[i] *= 1000;
    auto got =
        this->Run({x}, [](const Scope& s, const std::vector<Output>& in) {
          return std::vector<Output>{ops::Softmax(s, in[0]),
                                     ops::LogSoftmax(s, in[0])};
        });
    std::vector<long double> log_sm = NaiveLogSoftmax<T>(x);
    std::vector<long double> sm(log_sm.size());
    for (size_t i = 0; i < sm.size(); ++i) sm[i] = std::exp(log_sm[i]);
    EXPECT_TRUE(AllClose<T>(got[0], FromValues<T>(shape, sm), this->kTol));
    // log-softmax values reach -2000: compare relatively.
    EXPECT_TRUE(AllClose<T>(got[1], FromValues<T>(shape, log_sm), this->kTol,
                            this->kTol));
  }
}

TYPED_TEST(NnKernelTest, SoftmaxGradients) {
  using T = TypeParam;
  for (const TensorShape& shape :
       {TensorShape({2, 5}), TensorShape({300, 64})}) {
    SCOPED_TRACE(shape.DebugString());
    const Tensor y = RandomTensor<T>(shape, 11);
    const Tensor dy = RandomTensor<T>(shape, 12);
    auto got =
        this->Run({y, dy}, [](const Scope& s, const std::vector<Output>& in) {
          return std::vector<Output>{ops::SoftmaxGrad(s, in[0], in[1]),
                                     ops::LogSoftmaxGrad(s, in[0], in[1])};
        });
    const int64_t cols = shape.dim_size(1);
    std::vector<long double> sm(y.NumElements()), lsm(y.NumElements());
    for (int64_t r = 0; r < shape.dim_size(0); ++r) {
      long double dot = 0, sum = 0;
      for (int64_t j = 0; j < cols; ++j) {
        dot += static_cast<long double>(dy.data<T>()[r * cols + j]) *
               y.data<T>()[r * cols + j];
        sum += dy.data<T>()[r * cols + j];
      }
      for (int64_t j = 0; j < cols; ++j) {
        const long double yv = y.data<T>()[r * cols + j];
        const long double g = dy.data<T>()[r * cols + j];
        sm[r * cols + j] = (g - dot) * yv;
        lsm[r * cols + j] = g - std::exp(yv) * sum;
      }
    }
    EXPECT_TRUE(AllClose<T>(got[0], FromValues<T>(shape, sm), 20 * this->kTol));
    EXPECT_TRUE(
        AllClose<T>(got[1], FromValues<T>(shape, lsm), 200 * this->kTol));
  }
}

TYPED_TEST(NnKernelTest, SparseCrossEntropyMatchesNaiveLoops) {
  using T = TypeParam;
  for (const int64_t rows : {int64_t{3}, int64_t{500}}) {
    for (const DataType label_type : {DataType::kInt32, DataType::kInt64}) {
      SCOPED_TRACE(absl::StrCat(rows, " rows, ", DataTypeName(label_type)));
      const int64_t cols = 10;
      Tensor logits = RandomTensor<T>({rows, cols}, 13);
      for (int64_t i = 0; i < logits.NumElements(); ++i)
        logits.data<T>()[i] *= 50;
      Tensor labels(label_type, {rows});
      for (int64_t r = 0; r < rows; ++r) {
        if (label_type == DataType::kInt32) {
          labels.data<int32_t>()[r] = static_cast<int32_t>((r * 7) % cols);
        } else {
          labels.data<int64_t>()[r] = (r * 7) % cols;
        }
      }
      auto got = this->Run(
          {logits, labels}, [](const Scope& s, const std::vector<Output>& in) {
            auto x = ops::SparseSoftmaxCrossEntropyWithLogits(s, in[0], in[1]);
            return std::vector<Output>{x.loss, x.backprop};
          });
      std::vector<long double> lsm = NaiveLogSoftmax<T>(logits);
      std::vector<long double> loss(rows), backprop(rows * cols);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t label = (r * 7) % cols;
        loss[r] = -lsm[r * cols + label];
        for (int64_t j = 0; j < cols; ++j)
          backprop[r * cols + j] = std::exp(lsm[r * cols + j]) - (j == label);
      }
      EXPECT_TRUE(AllClose<T>(got[0], FromValues<T>({rows}, loss), this->kTol,
                              this->kTol));
      EXPECT_TRUE(AllClose<T>(got[1], FromValues<T>({rows, cols}, backprop),
                              this->kTol));
    }
  }
}

TYPED_TEST(NnKernelTest, DenseCrossEntropyMatchesNaiveLoops) {
  using T = TypeParam;
  for (const int64_t rows : {int64_t{4}, int64_t{400}}) {
    SCOPED_TRACE(rows);
    const int64_t cols = 50;
    const Tensor logits = RandomTensor<T>({rows, cols}, 17);
    Tensor labels = RandomTensor<T>({rows, cols}, 18);
    for (int64_t i = 0; i < labels.NumElements(); ++i)
      labels.data<T>()[i] = std::abs(labels.data<T>()[i]) / cols;
    auto got = this->Run(
        {logits, labels}, [](const Scope& s, const std::vector<Output>& in) {
          auto x = ops::SoftmaxCrossEntropyWithLogits(s, in[0], in[1]);
          return std::vector<Output>{x.loss, x.backprop};
        });
    std::vector<long double> lsm = NaiveLogSoftmax<T>(logits);
    std::vector<long double> loss(rows, 0), backprop(rows * cols);
    for (int64_t i = 0; i < rows * cols; ++i) {
      loss[i / cols] -= labels.data<T>()[i] * lsm[i];
      backprop[i] = std::exp(lsm[i]) - labels.data<T>()[i];
    }
    EXPECT_TRUE(AllClose<T>(got[0], FromValues<T>({rows}, loss),
                            10 * this->kTol, 10 * this->kTol));
    EXPECT_TRUE(
        AllClose<T>(got[1], FromValues<T>({rows, cols}, backprop), this->kTol));
  }
}

TYPED_TEST(NnKernelTest, CrossEntropyGradScalesEachRow) {
  using T = TypeParam;
  const Tensor backprop = RandomTensor<T>({300, 70}, 21);
  const Tensor dloss = RandomTensor<T>({300}, 22);
  auto got = this->Run(
      {backprop, dloss}, [](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{ops::CrossEntropyGrad(s, in[0], in[1])};
      });
  Tensor want(backprop.dtype(), backprop.shape());
  for (int64_t i = 0; i < want.NumElements(); ++i)
    want.data<T>()[i] = backprop.data<T>()[i] * dloss.data<T>()[i / 70];
  EXPECT_TRUE(AllClose<T>(got[0], want, 0));
}

TEST(CrossEntropyTest, LabelOutOfRangeNamesLabelRowAndClassCount) {
  for (const int64_t bad : {int64_t{10}, int64_t{-1}}) {
    Scope s = Scope::NewRootScope();
    auto x = ops::SparseSoftmaxCrossEntropyWithLogits(
        s, RandomTensor<float>({3, 10}, 1),
        Tensor::Vector<int64_t>({0, bad, 2}));
    ASSERT_TRUE(s.ok()) << s.status();
    auto got = RunOne(s, x.loss);
    EXPECT_TRUE(HasError(got.status(), absl::StatusCode::kInvalidArgument,
                         {absl::StrCat("label ", bad), "row 1", "10 classes"}));
  }
}

TEST(CrossEntropyTest, MismatchedShapesFailAtGraphBuildNamingThem) {
  Scope s = Scope::NewRootScope();
  ops::SparseSoftmaxCrossEntropyWithLogits(s, RandomTensor<float>({3, 10}, 1),
                                           Tensor::Vector<int32_t>({0, 1}));
  EXPECT_TRUE(HasError(s.status(), absl::StatusCode::kInvalidArgument,
                       {"[3,10]", "[2]"}));
  Scope d = Scope::NewRootScope();
  ops::SoftmaxCrossEntropyWithLogits(d, RandomTensor<float>({3, 10}, 1),
                                     RandomTensor<float>({3, 9}, 2));
  EXPECT_TRUE(HasError(d.status(), absl::StatusCode::kInvalidArgument,
                       {"[3,10]", "[3,9]"}));
}

TEST(ActivationTest, IntegerInputsAreRejectedAtGraphBuild) {
  Scope s = Scope::NewRootScope();
  ops::Relu(s, Tensor::Vector<int32_t>({1, -2}));
  EXPECT_FALSE(s.ok());
}

}  // namespace
}  // namespace distflow
