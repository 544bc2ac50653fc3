// Conv2D, its gradient ops and pooling (oneDNN kernels), checked against
// naive loops over every output element, for SAME and VALID padding, strides,
// odd padding (the extra row and column at the bottom and right) and
// dilations.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

struct ConvCase {
  std::vector<int64_t> input;   // NHWC
  std::vector<int64_t> filter;  // HWIO (for pooling: [kh, kw])
  int64_t sh, sw;
  std::string padding;
  int64_t dh = 1, dw = 1;
};

std::string Describe(const ConvCase& c) {
  return absl::StrCat("input [", absl::StrJoin(c.input, ","), "] filter [",
                      absl::StrJoin(c.filter, ","), "] strides ", c.sh, ",",
                      c.sw, " ", c.padding, " dilations ", c.dh, ",", c.dw);
}

// Output size and padding before the input, as TensorFlow defines them.
void Window(int64_t in, int64_t k, int64_t s, int64_t d,
            const std::string& padding, int64_t* out, int64_t* pad) {
  const int64_t ek = (k - 1) * d + 1;
  if (padding == "VALID") {
    *out = (in - ek) / s + 1;
    *pad = 0;
  } else {
    *out = (in + s - 1) / s;
    *pad = std::max<int64_t>((*out - 1) * s + ek - in, 0) / 2;
  }
}

// Calls fn(n, oy, ox, ky, kx, iy, ix) for every output position and filter
// tap that reads an input element inside the image.
template <typename Fn>
void ForEachTap(const ConvCase& c, int64_t kh, int64_t kw, Fn fn) {
  int64_t oh, ow, pt, pl;
  Window(c.input[1], kh, c.sh, c.dh, c.padding, &oh, &pt);
  Window(c.input[2], kw, c.sw, c.dw, c.padding, &ow, &pl);
  for (int64_t n = 0; n < c.input[0]; ++n)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t ky = 0; ky < kh; ++ky)
          for (int64_t kx = 0; kx < kw; ++kx) {
            const int64_t iy = oy * c.sh + ky * c.dh - pt;
            const int64_t ix = ox * c.sw + kx * c.dw - pl;
            if (iy < 0 || ix < 0 || iy >= c.input[1] || ix >= c.input[2])
              continue;
            fn(n, oy, ox, ky, kx, iy, ix);
          }
}

TensorShape ConvOutputShape(const ConvCase& c, int64_t channels) {
  int64_t oh, ow, pad;
  Window(c.input[1], c.filter[0], c.sh, c.dh, c.padding, &oh, &pad);
  Window(c.input[2], c.filter[1], c.sw, c.dw, c.padding, &ow, &pad);
  return TensorShape({c.input[0], oh, ow, channels});
}

// Naive convolution and its two gradients, in double.
struct ConvReference {
  Tensor output, d_input, d_filter;
};
ConvReference NaiveConv(const ConvCase& c, const Tensor& x, const Tensor& f,
                        const Tensor& g) {
  const int64_t H = c.input[1], W = c.input[2], C = c.input[3];
  const int64_t KW = c.filter[1], O = c.filter[3];
  const TensorShape out_shape = ConvOutputShape(c, O);
  const int64_t OH = out_shape.dim_size(1), OW = out_shape.dim_size(2);
  std::vector<double> y(out_shape.num_elements(), 0), dx(x.NumElements(), 0),
      df(f.NumElements(), 0);
  ForEachTap(c, c.filter[0], KW,
             [&](int64_t n, int64_t oy, int64_t ox, int64_t ky, int64_t kx,
                 int64_t iy, int64_t ix) {
               for (int64_t ci = 0; ci < C; ++ci)
                 for (int64_t o = 0; o < O; ++o) {
                   const int64_t xi = ((n * H + iy) * W + ix) * C + ci;
                   const int64_t fi = ((ky * KW + kx) * C + ci) * O + o;
                   const int64_t yi = ((n * OH + oy) * OW + ox) * O + o;
                   y[yi] += double{x.data<float>()[xi]} * f.data<float>()[fi];
                   dx[xi] += double{g.data<float>()[yi]} * f.data<float>()[fi];
                   df[fi] += double{g.data<float>()[yi]} * x.data<float>()[xi];
                 }
             });
  auto to_tensor = [](const TensorShape& shape, const std::vector<double>& v) {
    Tensor t(DataType::kFloat, shape);
    for (int64_t i = 0; i < t.NumElements(); ++i)
      t.data<float>()[i] = static_cast<float>(v[i]);
    return t;
  };
  return {to_tensor(out_shape, y), to_tensor(x.shape(), dx),
          to_tensor(f.shape(), df)};
}

Tensor ShapeTensor(const std::vector<int64_t>& dims) {
  std::vector<int32_t> v(dims.begin(), dims.end());
  return Tensor::Vector<int32_t>(v);
}

class ConvTest : public ::testing::TestWithParam<int> {};

const ConvCase kConvCases[] = {
    {{2, 5, 5, 1}, {3, 3, 1, 2}, 1, 1, "SAME"},
    {{2, 5, 5, 1}, {3, 3, 1, 2}, 1, 1, "VALID"},
    {{1, 7, 6, 3},
     {2, 3, 3, 4},
     2,
     2,
     "SAME"},  // odd padding: extra at the end
    {{1, 8, 8, 2}, {4, 4, 2, 3}, 2, 3, "SAME"},  // even kernel, unequal strides
    {{2, 9, 7, 3}, {3, 2, 3, 5}, 2, 1, "VALID"},
    {{1, 9, 9, 2}, {3, 3, 2, 3}, 1, 1, "SAME", 2, 2},  // dilated
    {{1, 10, 9, 2}, {2, 3, 2, 2}, 1, 2, "VALID", 3, 2},
    {{3, 28, 28, 1}, {5, 5, 1, 32}, 1, 1, "SAME"},  // the Fashion-MNIST CNN
    {{1, 14, 14, 32}, {5, 5, 32, 64}, 1, 1, "SAME"},
};

TEST_P(ConvTest, ForwardAndBothGradientsMatchNaiveLoops) {
  const ConvCase& c = kConvCases[GetParam()];
  SCOPED_TRACE(Describe(c));
  const Tensor x = RandomTensor<float>(*TensorShape::FromDims(c.input), 1);
  const Tensor f = RandomTensor<float>(*TensorShape::FromDims(c.filter), 2);
  const Tensor g = RandomTensor<float>(ConvOutputShape(c, c.filter[3]), 3);
  const ConvReference want = NaiveConv(c, x, f, g);

  Scope s = Scope::NewRootScope();
  Output px = ops::Placeholder(s, DataType::kFloat);
  Output pf = ops::Placeholder(s, DataType::kFloat);
  Output pg = ops::Placeholder(s, DataType::kFloat);
  const std::vector<int64_t> strides = {1, c.sh, c.sw, 1};
  ops::Conv2DOptions options;
  options.dilations = {1, c.dh, c.dw, 1};
  Output y = ops::Conv2D(s, px, pf, strides, c.padding, options);
  Output dx = ops::Conv2DBackpropInput(s, ShapeTensor(c.input), pf, pg, strides,
                                       c.padding, options);
  Output df = ops::Conv2DBackpropFilter(s, px, ShapeTensor(c.filter), pg,
                                        strides, c.padding, options);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(dx.shape(), PartialTensorShape(x.shape()));
  EXPECT_EQ(df.shape(), PartialTensorShape(f.shape()));
  SessionOptions session_options;
  session_options.intra_op_threads = 2;
  // Twice: the second run reuses the cached primitives.
  for (int run = 0; run < 2; ++run) {
    auto got =
        RunGraph(s, {{px, x}, {pf, f}, {pg, g}}, {y, dx, df}, session_options);
    ASSERT_TRUE(got.ok()) << got.status();
    // Sums of up to 800 products of values in [-1, 1].
    EXPECT_TRUE(AllClose<float>((*got)[0], want.output, 1e-4, 1e-4));
    EXPECT_TRUE(AllClose<float>((*got)[1], want.d_input, 1e-4, 1e-4));
    EXPECT_TRUE(AllClose<float>((*got)[2], want.d_filter, 2e-4, 1e-4));
  }
}
INSTANTIATE_TEST_SUITE_P(
    Cases, ConvTest,
    ::testing::Range(0, static_cast<int>(std::size(kConvCases))));

TEST(ConvErrorTest, ShapeFunctionNamesMismatchedChannels) {
  Scope s = Scope::NewRootScope();
  ops::Conv2D(s, RandomTensor<float>({1, 5, 5, 3}, 1),
              RandomTensor<float>({3, 3, 2, 4}, 2), {1, 1, 1, 1}, "SAME");
  EXPECT_TRUE(HasError(s.status(), absl::StatusCode::kInvalidArgument,
                       {"[1,5,5,3]", "[3,3,2,4]"}));
}

TEST(ConvErrorTest, BadAttributesAreNamed) {
  Scope s = Scope::NewRootScope();
  ops::Conv2D(s, RandomTensor<float>({1, 5, 5, 1}, 1),
              RandomTensor<float>({3, 3, 1, 1}, 2), {1, 1, 1, 1}, "FULL");
  EXPECT_TRUE(HasError(s.status(), absl::StatusCode::kInvalidArgument,
                       {"padding", "FULL"}));
  Scope t = Scope::NewRootScope();
  ops::MaxPool(t, RandomTensor<float>({1, 5, 5, 1}, 1), {2, 2, 1, 1},
               {1, 2, 2, 1}, "VALID");
  EXPECT_TRUE(HasError(t.status(), absl::StatusCode::kInvalidArgument,
                       {"ksize", "[2, 2, 1, 1]"}));
}

TEST(ConvErrorTest, KernelRejectsMismatchedChannelsFedAtRunTime) {
  Scope s = Scope::NewRootScope();
  Output px = ops::Placeholder(s, DataType::kFloat);
  Output pf = ops::Placeholder(s, DataType::kFloat);
  Output y = ops::Conv2D(s, px, pf, {1, 1, 1, 1}, "VALID");
  auto got = RunGraph(s,
                      {{px, RandomTensor<float>({1, 5, 5, 3}, 1)},
                       {pf, RandomTensor<float>({3, 3, 2, 4}, 2)}},
                      {y});
  EXPECT_TRUE(HasError(got.status(), absl::StatusCode::kInvalidArgument,
                       {"Conv2D", "[1,5,5,3]", "[3,3,2,4]"}));
}

// Naive pooling and its gradient (max: to the first maximum of each window;
// average: divided by the number of elements inside the input).
struct PoolReference {
  Tensor max, avg, d_max, d_avg;
};
PoolReference NaivePool(const ConvCase& c, const Tensor& x, const Tensor& g) {
  const int64_t H = c.input[1], W = c.input[2], C = c.input[3];
  const TensorShape out_shape = ConvOutputShape(c, C);
  const int64_t OH = out_shape.dim_size(1), OW = out_shape.dim_size(2);
  const int64_t outputs = out_shape.num_elements() / C;
  // The maximum of each window and channel, and where it is in x.
  struct Best {
    float value = -std::numeric_limits<float>::infinity();
    int64_t index = -1;
  };
  std::vector<Best> best(out_shape.num_elements());
  std::vector<int> count(outputs, 0);
  std::vector<double> avg(best.size(), 0);
  ForEachTap(c, c.filter[0], c.filter[1],
             [&](int64_t n, int64_t oy, int64_t ox, int64_t, int64_t,
                 int64_t iy, int64_t ix) {
               const int64_t o = (n * OH + oy) * OW + ox;
               ++count[o];
               for (int64_t ch = 0; ch < C; ++ch) {
                 const int64_t xi = ((n * H + iy) * W + ix) * C + ch;
                 const float v = x.data<float>()[xi];
                 if (v > best[o * C + ch].value) best[o * C + ch] = {v, xi};
                 avg[o * C + ch] += v;
               }
             });
  PoolReference r{
      Tensor(DataType::kFloat, out_shape), Tensor(DataType::kFloat, out_shape),
      Tensor(DataType::kFloat, x.shape()), Tensor(DataType::kFloat, x.shape())};
  std::vector<double> d_avg(x.NumElements(), 0);
  for (int64_t i = 0; i < out_shape.num_elements(); ++i) {
    r.max.data<float>()[i] = best[i].value;
    r.avg.data<float>()[i] = static_cast<float>(avg[i] / count[i / C]);
    r.d_max.data<float>()[best[i].index] += g.data<float>()[i];
  }
  ForEachTap(c, c.filter[0], c.filter[1],
             [&](int64_t n, int64_t oy, int64_t ox, int64_t, int64_t,
                 int64_t iy, int64_t ix) {
               const int64_t o = (n * OH + oy) * OW + ox;
               for (int64_t ch = 0; ch < C; ++ch)
                 d_avg[((n * H + iy) * W + ix) * C + ch] +=
                     double{g.data<float>()[o * C + ch]} / count[o];
             });
  for (int64_t i = 0; i < x.NumElements(); ++i)
    r.d_avg.data<float>()[i] = static_cast<float>(d_avg[i]);
  return r;
}

class PoolTest : public ::testing::TestWithParam<int> {};

const ConvCase kPoolCases[] = {
    {{2, 28, 28, 32}, {2, 2}, 2, 2, "SAME"},  // the Fashion-MNIST CNN
    {{2, 14, 14, 64}, {2, 2}, 2, 2, "SAME"},
    {{1, 7, 7, 3}, {3, 3}, 2, 2, "SAME"},  // windows cut by the padding
    {{2, 6, 5, 2}, {2, 3}, 1, 2, "SAME"},
    {{1, 7, 7, 3}, {3, 3}, 2, 2, "VALID"},
    {{2, 5, 6, 4}, {2, 2}, 1, 1, "VALID"},  // overlapping windows
};

TEST_P(PoolTest, PoolingAndGradientsMatchNaiveLoops) {
  const ConvCase& c = kPoolCases[GetParam()];
  SCOPED_TRACE(Describe(c));
  const Tensor x = RandomTensor<float>(*TensorShape::FromDims(c.input), 4);
  const Tensor g = RandomTensor<float>(ConvOutputShape(c, c.input[3]), 5);
  const PoolReference want = NaivePool(c, x, g);

  Scope s = Scope::NewRootScope();
  Output px = ops::Placeholder(s, DataType::kFloat);
  Output pg = ops::Placeholder(s, DataType::kFloat);
  const std::vector<int64_t> ksize = {1, c.filter[0], c.filter[1], 1};
  const std::vector<int64_t> strides = {1, c.sh, c.sw, 1};
  Output max = ops::MaxPool(s, px, ksize, strides, c.padding);
  Output avg = ops::AvgPool(s, px, ksize, strides, c.padding);
  Output d_max = ops::MaxPoolGrad(s, px, max, pg, ksize, strides, c.padding);
  Output d_avg =
      ops::AvgPoolGrad(s, ShapeTensor(c.input), pg, ksize, strides, c.padding);
  ASSERT_TRUE(s.ok()) << s.status();
  SessionOptions options;
  options.intra_op_threads = 2;
  auto got = RunGraph(s, {{px, x}, {pg, g}}, {max, avg, d_max, d_avg}, options);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(AllClose<float>((*got)[0], want.max, 0));
  EXPECT_TRUE(AllClose<float>((*got)[1], want.avg, 1e-6, 1e-6));
  EXPECT_TRUE(AllClose<float>((*got)[2], want.d_max, 1e-6, 1e-6));
  EXPECT_TRUE(AllClose<float>((*got)[3], want.d_avg, 1e-6, 1e-6));
}
INSTANTIATE_TEST_SUITE_P(
    Cases, PoolTest,
    ::testing::Range(0, static_cast<int>(std::size(kPoolCases))));

TEST(PoolErrorTest, GradOfTheWrongShapeIsNamed) {
  Scope s = Scope::NewRootScope();
  Output px = ops::Placeholder(s, DataType::kFloat);
  Output pg = ops::Placeholder(s, DataType::kFloat);
  Output d = ops::AvgPoolGrad(s, ShapeTensor({1, 4, 4, 1}), pg, {1, 2, 2, 1},
                              {1, 2, 2, 1}, "VALID");
  auto got = RunGraph(s, {{pg, RandomTensor<float>({1, 3, 3, 1}, 1)}}, {d});
  EXPECT_TRUE(HasError(got.status(), absl::StatusCode::kInvalidArgument,
                       {"AvgPoolGrad", "[1,3,3,1]", "[1,2,2,1]"}));
  (void)px;
}

}  // namespace
}  // namespace distflow
