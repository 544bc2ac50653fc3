// Slice, Pad and Tile against naive index loops.
#include <cstdint>
#include <string>
#include <vector>

#include "distflow/ops.h"
#include "gtest/gtest.h"
#include "kernels/index_test_util.h"
#include "kernels/kernel_registry.h"
#include "kernels/kernel_test_util.h"

namespace distflow {
namespace {

using test::HasError;
using test::RandomTensor;
using test::RunOne;
using test::TensorsEqual;

// out[i] = x[f(i)] over out's positions.
template <typename T, typename F>
Tensor Gen(const Tensor& x, const std::vector<int64_t>& dims, F source) {
  Tensor out(x.dtype(), *TensorShape::FromDims(dims));
  for (int64_t i = 0; i < out.NumElements(); ++i) {
    std::vector<int64_t> pos = test::Unravel(i, out.shape());
    if (source(&pos))
      out.flat<T>()[i] = x.flat<T>()[test::Ravel(pos, x.shape())];
  }
  return out;
}

TEST(SliceTest, MatchesNaiveLoop) {
  struct Case {
    std::vector<int64_t> dims, begin, size;
  };
  const std::vector<Case> cases = {
      {{10}, {3}, {4}},
      {{5, 6}, {1, 2}, {3, -1}},
      {{5, 6}, {2, 0}, {2, 6}},  // rows only: a view
      {{4, 5, 6}, {1, 1, 2}, {2, 3, 3}},
      {{3, 1, 4, 2}, {0, 0, 1, 1}, {-1, 1, 2, 1}},
      {{200, 300}, {10, 7}, {150, 250}},
      {{4, 4}, {4, 0}, {0, 4}},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    const Tensor x =
        RandomTensor<float>(*TensorShape::FromDims(c.dims), seed++);
    std::vector<int64_t> size = c.size;
    for (size_t d = 0; d < size.size(); ++d) {
      if (size[d] == -1) size[d] = c.dims[d] - c.begin[d];
    }
    const Tensor want = Gen<float>(x, size, [&](std::vector<int64_t>* p) {
      for (size_t d = 0; d < p->size(); ++d) (*p)[d] += c.begin[d];
      return true;
    });
    Scope s = Scope::NewRootScope();
    Output y = ops::Slice(s, x, Tensor::Vector<int64_t>(c.begin),
                          Tensor::Vector<int64_t>(c.size));
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(y.shape(), PartialTensorShape(want.shape()));
    auto got = RunOne(s, y);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(TensorsEqual<float>(*got, want)) << x.shape().DebugString();
  }
}

TEST(SliceTest, OutOfRangeIsAnError) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DataType::kFloat);
  Output y = ops::Slice(s, x, {1, 2}, {2, 2});
  auto got = RunOne(s, y, {{x, RandomTensor<float>({3, 3}, 1)}});
  EXPECT_TRUE(HasError(got.status(), absl::StatusCode::kInvalidArgument,
                       {"dimension 1", "[3,3]"}));
}

// The executor runs a cheap kernel on the thread that made it ready: a slice
// of a vector (how a packed transfer's members are cut out) is always a view;
// a slice of a matrix may copy, and goes to the pool beside other work.
TEST(SliceTest, OnlyASliceOfAVectorIsCheap) {
  Scope s = Scope::NewRootScope();
  Output vector = ops::Placeholder(s, DataType::kFloat, {-1});
  Output matrix = ops::Placeholder(s, DataType::kFloat, {-1, 4});
  Output unknown = ops::Placeholder(s, DataType::kFloat);
  Output of_vector = ops::Slice(s, vector, {2}, {3});
  Output of_matrix = ops::Slice(s, matrix, {0, 1}, {2, 2});
  Output of_unknown = ops::Slice(s, unknown, {0}, {1});
  ASSERT_TRUE(s.ok()) << s.status();
  auto expensive = [](const Output& slice) {
    auto kernel =
        KernelRegistry::Global()->CreateKernel(*slice.node(), nullptr, "CPU");
    EXPECT_TRUE(kernel.ok()) << kernel.status();
    return kernel.ok() && (*kernel)->IsExpensive();
  };
  EXPECT_FALSE(expensive(of_vector));
  EXPECT_TRUE(expensive(of_matrix));
  EXPECT_TRUE(expensive(of_unknown));
}

TEST(PadTest, MatchesNaiveLoop) {
  uint32_t seed = 1;
  // (Not a structured binding: lambdas below capture the two.)
  for (const auto& test :
       std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{3}, {1, 2}},
           {{2, 3}, {0, 1, 2, 0}},
           {{2, 3, 4}, {1, 1, 0, 0, 2, 3}},
           {{0, 2}, {1, 1, 1, 1}}}) {
    const std::vector<int64_t>& dims = test.first;
    const std::vector<int64_t>& pads = test.second;
    const Tensor x = RandomTensor<double>(*TensorShape::FromDims(dims), seed++);
    std::vector<int64_t> out_dims;
    for (size_t d = 0; d < dims.size(); ++d) {
      out_dims.push_back(dims[d] + pads[2 * d] + pads[2 * d + 1]);
    }
    const Tensor want = Gen<double>(x, out_dims, [&](std::vector<int64_t>* p) {
      for (size_t d = 0; d < p->size(); ++d) {
        (*p)[d] -= pads[2 * d];
        if ((*p)[d] < 0 || (*p)[d] >= dims[d]) return false;
      }
      return true;
    });
    Scope s = Scope::NewRootScope();
    const int64_t rank = static_cast<int64_t>(dims.size());
    Output y = ops::Pad(s, x, *Tensor::FromValues<int64_t>({rank, 2}, pads));
    auto got = RunOne(s, y);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(y.shape(), PartialTensorShape(want.shape()));
    EXPECT_TRUE(TensorsEqual<double>(*got, want)) << x.shape().DebugString();
  }
}

TEST(TileTest, MatchesNaiveLoop) {
  uint32_t seed = 1;
  for (const auto& test :
       std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{3}, {4}},
           {{2, 3}, {2, 1}},
           {{2, 3}, {1, 3}},
           {{2, 1, 3}, {2, 5, 2}},
           {{2, 3}, {0, 2}}}) {
    const std::vector<int64_t>& dims = test.first;
    const std::vector<int64_t>& m = test.second;
    const Tensor x =
        RandomTensor<int32_t>(*TensorShape::FromDims(dims), seed++);
    std::vector<int64_t> out_dims;
    for (size_t d = 0; d < dims.size(); ++d) out_dims.push_back(dims[d] * m[d]);
    const Tensor want = Gen<int32_t>(x, out_dims, [&](std::vector<int64_t>* p) {
      for (size_t d = 0; d < p->size(); ++d) (*p)[d] %= dims[d];
      return true;
    });
    Scope s = Scope::NewRootScope();
    Output y = ops::Tile(s, x, Tensor::Vector<int64_t>(m));
    auto got = RunOne(s, y);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(y.shape(), PartialTensorShape(want.shape()));
    EXPECT_TRUE(TensorsEqual<int32_t>(*got, want)) << x.shape().DebugString();
  }
}

}  // namespace
}  // namespace distflow
