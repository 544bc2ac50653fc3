// Optimizer update kernels (ResourceApply*, ResourceSparseApply*), run through
// a local session and compared with naive element-by-element updates computed
// here in double precision.
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "distflow/ops.h"
#include "distflow/scope.h"
#include "distflow/session.h"
#include "distflow/tensor.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"
#include "kernels/training_kernels.h"

namespace distflow {
namespace {

using test::HasError;
using test::MakeTensor;
using test::RandomValues;

// The state of a variable and its slots, element by element.
using State = std::vector<std::vector<double>>;
// Updates element i of every variable of `state` with gradient g.
using RefUpdate = std::function<void(State* state, int64_t i, double g)>;
// Builds the update op from the variables (variable, then slots), the gradient
// and, for sparse updates, the indices.
using MakeUpdate = std::function<Operation(
    const Scope& s, const std::vector<ops::Variable>& vars, const Output& grad,
    const Output& indices)>;

struct Problem {
  TensorShape shape;
  State initial;                              // variable, then slots
  std::vector<std::vector<double>> grads;     // one per step
  std::vector<std::vector<int64_t>> indices;  // sparse: one per step
};

template <typename T>
std::vector<T> Cast(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

// The elements of each tensor, as doubles.
template <typename T>
State ToState(const std::vector<Tensor>& values) {
  State state;
  for (const Tensor& t : values) {
    auto f = t.flat<T>();
    state.emplace_back(f.begin(), f.end());
  }
  return state;
}

// Runs the update once per gradient of `p` and returns the final values of
// the variable and its slots.
template <typename T>
absl::StatusOr<State> RunUpdates(const Problem& p, const MakeUpdate& make,
                                 bool sparse, int intra_op_threads = 0) {
  Scope s = Scope::NewRootScope();
  std::vector<ops::Variable> vars;
  for (size_t k = 0; k < p.initial.size(); ++k) {
    vars.emplace_back(s.WithOpName(k == 0 ? "var" : "slot"),
                      MakeTensor<T>(p.shape, Cast<T>(p.initial[k])));
  }
  Output grad = ops::Placeholder(s, DataTypeOf<T>::value);
  Output indices =
      sparse ? ops::Placeholder(s, DataType::kInt64, {-1}) : Output();
  Operation update = make(s, vars, grad, indices);
  SessionOptions options;
  options.intra_op_threads = intra_op_threads;
  auto session = ClientSession::Create(s, options);
  if (!session.ok()) return session.status();
  absl::Status st =
      (*session)->RunTargets({ops::GlobalVariablesInitializer(s)});
  if (!st.ok()) return st;
  for (size_t step = 0; step < p.grads.size(); ++step) {
    const int64_t n = static_cast<int64_t>(p.grads[step].size());
    ClientSession::FeedDict feeds;
    if (sparse) {
      const int64_t rows = static_cast<int64_t>(p.indices[step].size());
      TensorShape gshape({rows});
      for (int d = 1; d < p.shape.dims(); ++d)
        gshape.AddDim(p.shape.dim_size(d));
      EXPECT_EQ(gshape.num_elements(), n);
      feeds.emplace_back(grad, MakeTensor<T>(gshape, Cast<T>(p.grads[step])));
      feeds.emplace_back(indices, Tensor::Vector<int64_t>(p.indices[step]));
    } else {
      feeds.emplace_back(grad, MakeTensor<T>(p.shape, Cast<T>(p.grads[step])));
    }
    auto out = (*session)->Run(feeds, {}, {update});
    if (!out.ok()) return out.status();
  }
  std::vector<Output> fetches(vars.begin(), vars.end());
  auto values = (*session)->Run(fetches);
  if (!values.ok()) return values.status();
  return ToState<T>(*values);
}

// The reference: each step applies `ref` to every element (dense) or to every
// element of the listed rows, once per distinct row with the summed gradient.
State Reference(const Problem& p, const RefUpdate& ref, bool sparse) {
  State state = p.initial;
  const int64_t row_size =
      p.shape.dims() == 0 ? 1 : p.shape.num_elements() / p.shape.dim_size(0);
  for (size_t step = 0; step < p.grads.size(); ++step) {
    if (!sparse) {
      for (int64_t i = 0; i < p.shape.num_elements(); ++i) {
        ref(&state, i, p.grads[step][i]);
      }
      continue;
    }
    std::map<int64_t, std::vector<double>> summed;
    for (size_t r = 0; r < p.indices[step].size(); ++r) {
      auto& row = summed[p.indices[step][r]];
      row.resize(row_size, 0.0);
      for (int64_t j = 0; j < row_size; ++j) {
        row[j] += p.grads[step][r * row_size + j];
      }
    }
    for (const auto& [row, g] : summed) {
      for (int64_t j = 0; j < row_size; ++j) {
        ref(&state, row * row_size + j, g[j]);
      }
    }
  }
  return state;
}

// A problem on a [5, 3] variable: random values, slots drawn from
// `slot_low`..`slot_low + 1` (positive for accumulators), two steps.
Problem MakeProblem(int num_slots, double slot_low, bool sparse) {
  Problem p;
  p.shape = TensorShape({5, 3});
  const int64_t n = p.shape.num_elements();
  p.initial.push_back(RandomValues<double>(n, 1));
  for (int k = 0; k < num_slots; ++k) {
    std::vector<double> slot = RandomValues<double>(n, 10 + k);
    for (double& x : slot) x = slot_low + (x + 1) / 2;
    p.initial.push_back(slot);
  }
  if (sparse) {
    // Row 3 is listed twice in the first step; rows 1 and 4 are never listed.
    p.indices = {{3, 0, 3}, {2, 0}};
    p.grads = {RandomValues<double>(9, 20), RandomValues<double>(6, 21)};
  } else {
    p.grads = {RandomValues<double>(n, 20), RandomValues<double>(n, 21)};
  }
  return p;
}

void ExpectNear(const State& got, const State& want, double tolerance) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].size(), want[k].size());
    for (size_t i = 0; i < got[k].size(); ++i) {
      EXPECT_NEAR(got[k][i], want[k][i], tolerance * (1 + std::abs(want[k][i])))
          << "variable " << k << ", element " << i;
    }
  }
}

// Checks the op against the reference, dense and sparse, in float32 (and
// float64 with a tighter tolerance).
void CheckUpdate(int num_slots, double slot_low, const MakeUpdate& dense,
                 const MakeUpdate& sparse, const RefUpdate& ref) {
  for (bool is_sparse : {false, true}) {
    SCOPED_TRACE(is_sparse ? "sparse" : "dense");
    Problem p = MakeProblem(num_slots, slot_low, is_sparse);
    const State want = Reference(p, ref, is_sparse);
    const MakeUpdate& make = is_sparse ? sparse : dense;
    auto got = RunUpdates<float>(p, make, is_sparse);
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectNear(*got, want, 1e-5);
    auto got64 = RunUpdates<double>(p, make, is_sparse);
    ASSERT_TRUE(got64.ok()) << got64.status();
    ExpectNear(*got64, want, 1e-12);
    if (is_sparse) {
      // Rows never listed keep their values exactly, slots included.
      for (size_t k = 0; k < got->size(); ++k) {
        for (int64_t row : {1, 4}) {
          for (int64_t j = 0; j < 3; ++j) {
            EXPECT_EQ((*got)[k][row * 3 + j],
                      static_cast<float>(p.initial[k][row * 3 + j]))
                << "variable " << k << " row " << row;
          }
        }
      }
    }
  }
}

TEST(TrainingKernelsTest, GradientDescent) {
  const double alpha = 0.3;
  CheckUpdate(
      0, 0,
      [&](const Scope& s, const std::vector<ops::Variable>& v, Output g,
          Output) {
        return ops::ResourceApplyGradientDescent(s, v[0].handle(), alpha, g);
      },
      [&](const Scope& s, const std::vector<ops::Variable>& v, Output g,
          Output i) {
        return ops::ResourceSparseApplyGradientDescent(s, v[0].handle(), alpha,
                                                       g, i);
      },
      [&](State* st, int64_t i, double g) { (*st)[0][i] -= alpha * g; });
}

void CheckMomentum(bool nesterov) {
  const double lr = 0.1, momentum = 0.9;
  CheckUpdate(
      1, -0.5,
      [&](const Scope& s, const std::vector<ops::Variable>& v, Output g,
          Output) {
        return ops::ResourceApplyMomentum(s, v[0].handle(), v[1].handle(), lr,
                                          g, momentum, nesterov);
      },
      [&](const Scope& s, const std::vector<ops::Variable>& v, Output g,
          Output i) {
        return ops::ResourceSparseApplyMomentum(s, v[0].handle(), v[1].handle(),
                                                lr, g, i, momentum, nesterov);
      },
      [&](State* st, int64_t i, double g) {
        double& var = (*st)[0][i];
        double& accum = (*st)[1][i];
        accum = accum * momentum + g;
        var -= nesterov ? lr * (g + momentum * accum) : lr * accum;
      });
}

TEST(TrainingKernelsTest, Momentum) { CheckMomentum(false); }
TEST(TrainingKernelsTest, NesterovMomentum) { CheckMomentum(true); }

TEST(TrainingKernelsTest, Adagrad) {
  const double lr = 0.2;
  CheckUpdate(
      1, 0.1,
      [&](const Scope& s, const std::vector<ops::Variable>& v, Output g,
          Output) {
        return ops::ResourceApplyAdagrad(s, v[0].handle(), v[1].handle(), lr,
                                         g);
      },
      [&](const Scope& s, const std::vector<ops::Variable>& v, Output g,
          Output i) {
        return ops::ResourceSparseApplyAdagrad(s, v[0].handle(), v[1].handle(),
                                               lr, g, i);
      },
      [&](State* st, int64_t i, double g) {
        (*st)[1][i] += g * g;
        (*st)[0][i] -= lr * g / std::sqrt((*st)[1][i]);
      });
}

// Adam's hyperparameters in the tests, its dense op and its reference.
constexpr double kAdamB1Power = 0.9 * 0.9, kAdamB2Power = 0.999 * 0.999,
                 kAdamLr = 0.01, kAdamB1 = 0.9, kAdamB2 = 0.999,
                 kAdamEps = 1e-7;

Operation DenseAdam(const Scope& s, const std::vector<ops::Variable>& v,
                    Output g, Output) {
  return ops::ResourceApplyAdam(s, v[0].handle(), v[1].handle(), v[2].handle(),
                                kAdamB1Power, kAdamB2Power, kAdamLr, kAdamB1,
                                kAdamB2, kAdamEps, g);
}

void AdamReference(State* st, int64_t i, double g) {
  double& m = (*st)[1][i];
  double& v = (*st)[2][i];
  m = kAdamB1 * m + (1 - kAdamB1) * g;
  v = kAdamB2 * v + (1 - kAdamB2) * g * g;
  const double step =
      kAdamLr * std::sqrt(1 - kAdamB2Power) / (1 - kAdamB1Power);
  (*st)[0][i] -= step * m / (std::sqrt(v) + kAdamEps);
}

TEST(TrainingKernelsTest, Adam) {
  CheckUpdate(
      2, 0.0, DenseAdam,
      [&](const Scope& s, const std::vector<ops::Variable>& v, Output g,
          Output i) {
        return ops::ResourceSparseApplyAdam(
            s, v[0].handle(), v[1].handle(), v[2].handle(), kAdamB1Power,
            kAdamB2Power, kAdamLr, kAdamB1, kAdamB2, kAdamEps, g, i);
      },
      AdamReference);
}

// A dense update runs over a large variable a cache block at a time: every
// element is updated once, the last partial block included, on one thread.
// Adam on `rows` rows of several float32 cache blocks and a tail, from
// random values drawn from `seed` on, for `steps` steps.
Problem LargeAdamProblem(int64_t rows, int steps, int seed) {
  Problem p;
  p.shape = TensorShape({rows, kUpdateBlockBytes / 4 + 7});
  const int64_t n = p.shape.num_elements();
  for (int k = 0; k < 3; ++k)
    p.initial.push_back(RandomValues<double>(n, seed++));
  for (double& x : p.initial[2]) x = (x + 1) / 2;  // Adam's v is not negative
  for (int i = 0; i < steps; ++i)
    p.grads.push_back(RandomValues<double>(n, seed++));
  return p;
}

TEST(TrainingKernelsTest, LargeVariableUpdatedBlockByBlock) {
  // Several blocks of float32 (and twice as many of float64), and a tail.
  const Problem p = LargeAdamProblem(3, 2, 6);
  const State want = Reference(p, AdamReference, false);
  auto got = RunUpdates<float>(p, DenseAdam, false, /*intra_op_threads=*/1);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectNear(*got, want, 1e-5);
  auto got64 = RunUpdates<double>(p, DenseAdam, false, /*intra_op_threads=*/1);
  ASSERT_TRUE(got64.ok()) << got64.status();
  ExpectNear(*got64, want, 1e-12);
}

// A dense update while a reader still holds the variable's and slots'
// buffers (here the step's own fetches of them) writes fresh buffers: the
// reader keeps the old values, and the variable and slots get the same new
// values as an update in place would give them.
TEST(TrainingKernelsTest, UpdateOfValuesStillReadLeavesTheReaderTheOldOnes) {
  const Problem p = LargeAdamProblem(2, 1, 11);
  Scope s = Scope::NewRootScope();
  std::vector<ops::Variable> vars;
  std::vector<Output> reads;
  std::vector<Operation> read_ops;
  for (size_t k = 0; k < p.initial.size(); ++k) {
    vars.emplace_back(s.WithOpName(k == 0 ? "var" : "slot"),
                      MakeTensor<float>(p.shape, Cast<float>(p.initial[k])));
    reads.push_back(vars.back());
    read_ops.push_back(vars.back().op());
  }
  Output grad = ops::Placeholder(s, DataType::kFloat);
  Operation update =
      DenseAdam(s.WithControlDependencies(read_ops), vars, grad, Output());
  SessionOptions options;
  options.intra_op_threads = 1;
  auto session = ClientSession::Create(s, options);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE(
      (*session)->RunTargets({ops::GlobalVariablesInitializer(s)}).ok());
  auto before = (*session)->Run(
      {{grad, MakeTensor<float>(p.shape, Cast<float>(p.grads[0]))}}, reads,
      {update});
  ASSERT_TRUE(before.ok()) << before.status();
  ExpectNear(ToState<float>(*before), p.initial, 1e-6);
  auto after = (*session)->Run(reads);
  ASSERT_TRUE(after.ok()) << after.status();
  ExpectNear(ToState<float>(*after), Reference(p, AdamReference, false), 1e-5);
}

TEST(TrainingKernelsTest, RMSProp) {
  const double lr = 0.01, rho = 0.9, momentum = 0.5, eps = 1e-6;
  CheckUpdate(
      2, 0.1,
      [&](const Scope& s, const std::vector<ops::Variable>& v, Output g,
          Output) {
        return ops::ResourceApplyRMSProp(s, v[0].handle(), v[1].handle(),
                                         v[2].handle(), lr, rho, momentum, eps,
                                         g);
      },
      [&](const Scope& s, const std::vector<ops::Variable>& v, Output g,
          Output i) {
        return ops::ResourceSparseApplyRMSProp(s, v[0].handle(), v[1].handle(),
                                               v[2].handle(), lr, rho, momentum,
                                               eps, g, i);
      },
      [&](State* st, int64_t i, double g) {
        double& ms = (*st)[1][i];
        double& mom = (*st)[2][i];
        ms = rho * ms + (1 - rho) * g * g;
        mom = momentum * mom + lr * g / std::sqrt(ms + eps);
        (*st)[0][i] -= mom;
      });
}

void CheckFtrl(double lr_power, double l1, double l2) {
  const double lr = 0.5;
  CheckUpdate(
      2, 0.1,
      [&](const Scope& s, const std::vector<ops::Variable>& v, Output g,
          Output) {
        return ops::ResourceApplyFtrl(s, v[0].handle(), v[1].handle(),
                                      v[2].handle(), g, lr, l1, l2, lr_power);
      },
      [&](const Scope& s, const std::vector<ops::Variable>& v, Output g,
          Output i) {
        return ops::ResourceSparseApplyFtrl(s, v[0].handle(), v[1].handle(),
                                            v[2].handle(), g, i, lr, l1, l2,
                                            lr_power);
      },
      [&](State* st, int64_t i, double g) {
        double& var = (*st)[0][i];
        double& accum = (*st)[1][i];
        double& linear = (*st)[2][i];
        const double new_accum = accum + g * g;
        linear +=
            g - (std::pow(new_accum, -lr_power) - std::pow(accum, -lr_power)) /
                    lr * var;
        const double quadratic = std::pow(new_accum, -lr_power) / lr + 2 * l2;
        if (std::abs(linear) > l1) {
          var = ((linear > 0 ? l1 : -l1) - linear) / quadratic;
        } else {
          var = 0;
        }
        accum = new_accum;
      });
}

TEST(TrainingKernelsTest, Ftrl) { CheckFtrl(-0.5, 0.0, 0.0); }
// l1 large enough to zero some elements; a power other than -1/2.
TEST(TrainingKernelsTest, FtrlWithRegularization) { CheckFtrl(-0.7, 0.3, 0.2); }

// A large variable is split across the intra-op pool; every element is
// updated exactly once.
TEST(TrainingKernelsTest, LargeVariableSplitAcrossThreads) {
  Problem p;
  p.shape = TensorShape({1000, 257});
  const int64_t n = p.shape.num_elements();
  p.initial = {RandomValues<double>(n, 3), std::vector<double>(n, 0.0)};
  p.grads = {RandomValues<double>(n, 4), RandomValues<double>(n, 5)};
  const double lr = 0.1, momentum = 0.9;
  auto make = [&](const Scope& s, const std::vector<ops::Variable>& v, Output g,
                  Output) {
    return ops::ResourceApplyMomentum(s, v[0].handle(), v[1].handle(), lr, g,
                                      momentum);
  };
  auto got = RunUpdates<float>(p, make, false, /*intra_op_threads=*/2);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectNear(*got,
             Reference(
                 p,
                 [&](State* st, int64_t i, double g) {
                   (*st)[1][i] = (*st)[1][i] * momentum + g;
                   (*st)[0][i] -= lr * (*st)[1][i];
                 },
                 false),
             1e-5);
}

// Updates from several threads at once are serialized: none is lost.
TEST(TrainingKernelsTest, ConcurrentUpdatesAreNotLost) {
  Scope s = Scope::NewRootScope();
  ops::Variable var(s, Tensor(DataType::kFloat, TensorShape({64, 64})));
  Operation update = ops::ResourceApplyGradientDescent(s, var.handle(), 1.0f,
                                                       ops::Ones(s, {64, 64}));
  auto session = ClientSession::Create(s);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->RunTargets({var.initializer()}).ok());
  constexpr int kThreads = 4, kSteps = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kSteps; ++i) {
        EXPECT_TRUE((*session)->RunTargets({update}).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  auto got = (*session)->Run({var});
  ASSERT_TRUE(got.ok()) << got.status();
  for (float x : (*got)[0].flat<float>()) {
    ASSERT_EQ(x, -static_cast<float>(kThreads * kSteps));
  }
}

// Indices may be int32; the gradient rows of a repeated index add up.
TEST(TrainingKernelsTest, SparseInt32IndicesAccumulateRepeats) {
  Scope s = Scope::NewRootScope();
  ops::Variable var(s, Tensor::Matrix<float>({{1, 1}, {2, 2}, {3, 3}}));
  Operation update = ops::ResourceSparseApplyGradientDescent(
      s, var.handle(), 0.5f,
      Tensor::Matrix<float>({{1, 2}, {10, 20}, {100, 200}}),
      Tensor::Vector<int32_t>({2, 0, 2}));
  auto session = ClientSession::Create(s);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->RunTargets({var.initializer()}).ok());
  ASSERT_TRUE((*session)->RunTargets({update}).ok());
  auto got = (*session)->Run({var});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(test::TensorsEqual<float>(
      (*got)[0],
      Tensor::Matrix<float>({{-4, -9}, {2, 2}, {3 - 50.5f, 3 - 101}})));
}

TEST(TrainingKernelsTest, OutOfRangeIndexNamesIndexAndRowCount) {
  Scope s = Scope::NewRootScope();
  ops::Variable var(s.WithOpName("emb"),
                    Tensor(DataType::kFloat, TensorShape({4, 2})));
  Operation update = ops::ResourceSparseApplyGradientDescent(
      s, var.handle(), 0.5f, Tensor::Matrix<float>({{1, 2}, {3, 4}}),
      Tensor::Vector<int64_t>({1, 4}));
  auto session = ClientSession::Create(s);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->RunTargets({var.initializer()}).ok());
  EXPECT_TRUE(HasError((*session)->RunTargets({update}),
                       absl::StatusCode::kInvalidArgument,
                       {"index 4", "'emb'", "4 rows"}));
  // Nothing was written.
  auto got = (*session)->Run({var});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(test::TensorsEqual<float>(
      (*got)[0], Tensor(DataType::kFloat, TensorShape({4, 2}))));
}

TEST(TrainingKernelsTest, GradientShapeMismatchNamesVariableAndShapes) {
  Scope s = Scope::NewRootScope();
  ops::Variable var(s.WithOpName("w"),
                    Tensor(DataType::kFloat, TensorShape({2, 3})));
  // Unknown when the graph is built: the kernel must catch it.
  Output g = ops::Placeholder(s, DataType::kFloat);
  Operation update =
      ops::ResourceApplyGradientDescent(s, var.handle(), 0.1f, g);
  auto session = ClientSession::Create(s);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->RunTargets({var.initializer()}).ok());
  auto out = (*session)->Run(
      {{g, Tensor(DataType::kFloat, TensorShape({3, 2}))}}, {}, {update});
  EXPECT_TRUE(HasError(out.status(), absl::StatusCode::kInvalidArgument,
                       {"'w'", "[3,2]", "[2,3]"}));
}

TEST(TrainingKernelsTest, KnownShapeMismatchFailsWhenBuilding) {
  Scope s = Scope::NewRootScope();
  ops::Variable var(s, Tensor(DataType::kFloat, TensorShape({2, 3})));
  ops::ResourceApplyGradientDescent(s, var.handle(), 0.1f,
                                    Tensor(DataType::kFloat, TensorShape({3})));
  EXPECT_TRUE(HasError(s.status(), absl::StatusCode::kInvalidArgument,
                       {"[3]", "[2,3]"}));
}

TEST(TrainingKernelsTest, UninitializedSlotIsFailedPrecondition) {
  Scope s = Scope::NewRootScope();
  ops::Variable var(s.WithOpName("w"), {1.f, 2.f});
  ops::Variable accum(s.WithOpName("w_accum"), {0.1f, 0.1f});
  Operation update = ops::ResourceApplyAdagrad(s, var.handle(), accum.handle(),
                                               0.1f, {1.f, 1.f});
  auto session = ClientSession::Create(s);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->RunTargets({var.initializer()}).ok());
  EXPECT_TRUE(HasError((*session)->RunTargets({update}),
                       absl::StatusCode::kFailedPrecondition,
                       {"w_accum", "'w'", "initializ"}));
}

TEST(TrainingKernelsTest, PassingTheReadValueInsteadOfTheHandleIsAnError) {
  Scope s = Scope::NewRootScope();
  ops::Variable var(s, {1.f, 2.f});
  ops::ResourceApplyGradientDescent(s, var, 0.1f, {1.f, 1.f});
  EXPECT_TRUE(
      HasError(s.status(), absl::StatusCode::kInvalidArgument, {"handle()"}));
}

}  // namespace
}  // namespace distflow
