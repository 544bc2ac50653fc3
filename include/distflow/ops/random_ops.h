// Op constructors for random numbers, dropout and weight initializers.
// Each adds a node to the scope's graph and returns its output(s); errors are
// recorded in the scope (see distflow/scope.h).
//
// Seeds follow TensorFlow: a random op has two seeds, `seed` and `seed2`. Both
// 0 picks a nondeterministic sequence. Otherwise the op draws a deterministic
// sequence that depends only on the two seeds: the same in every process and
// on every run of the program, yet each execution of the op (each step) draws
// fresh numbers further along the sequence. Two ops with the same non-zero
// seeds draw the same sequence. There is no graph-level seed: ops of a graph
// get only the seeds passed to them.
#ifndef DISTFLOW_OPS_RANDOM_OPS_H_
#define DISTFLOW_OPS_RANDOM_OPS_H_

#include <cstdint>

#include "distflow/scope.h"
#include "distflow/tensor.h"
#include "distflow/tensor_shape.h"
#include "distflow/types.h"

namespace distflow {
namespace ops {

struct RandomSeed {
  int64_t seed = 0;
  int64_t seed2 = 0;
};

// A tensor of shape `shape` (an int32 or int64 vector) of `dtype` (float32 or
// float64) with elements drawn uniformly from [0, 1).
Output RandomUniform(const Scope& scope, const Input& shape,
                     DataType dtype = DataType::kFloat,
                     const RandomSeed& seed = {});
// Elements drawn from the normal distribution of mean 0 and stddev 1.
Output RandomStandardNormal(const Scope& scope, const Input& shape,
                            DataType dtype = DataType::kFloat,
                            const RandomSeed& seed = {});
// Elements drawn from the standard normal distribution, redrawn until they lie
// within 2 standard deviations (|x| <= 2).
Output TruncatedNormal(const Scope& scope, const Input& shape,
                       DataType dtype = DataType::kFloat,
                       const RandomSeed& seed = {});

// The scaled keep mask of dropout, of shape `shape`: each element is
// 1 / (1 - rate) with probability 1 - rate and 0 otherwise. `rate` is a scalar
// of `dtype` in [0, 1) (INVALID_ARGUMENT naming it otherwise when the op runs).
Output DropoutMask(const Scope& scope, const Input& shape, const Input& rate,
                   DataType dtype = DataType::kFloat,
                   const RandomSeed& seed = {});
// x * DropoutMask(Shape(x), rate): zeroes each element of `x` with probability
// `rate` and scales the kept ones by 1 / (1 - rate), so the expected value is
// unchanged. The gradient flows through the same mask as the forward pass of
// the same step. `rate` may be a placeholder: feed 0 at test time to switch
// dropout off (the output then equals x). `seed` as in RandomSeed::seed.
Output Dropout(const Scope& scope, const Input& x, const Input& rate,
               int64_t seed = 0);

// Fan-in and fan-out of a weight shape, as TensorFlow computes them: a scalar
// has 1 and 1; a vector [n] has n and n; a dense kernel [in, out] has in and
// out; a convolution kernel [h, w, in, out] (any rank > 2) has
// in * receptive field and out * receptive field, the receptive field being
// the product of the leading dimensions (h * w).
struct Fans {
  double fan_in = 1;
  double fan_out = 1;
};
Fans ComputeFans(const TensorShape& shape);

// Initial values for weights of shape `shape`, usable as a Variable's initial
// value: Variable(s, GlorotUniform(s, {784, 256})). `seed` as in
// RandomSeed::seed (0: nondeterministic). dtype is float32 or float64.
//
// Uniform in [-limit, limit), limit = sqrt(6 / (fan_in + fan_out)).
Output GlorotUniform(const Scope& scope, const TensorShape& shape,
                     int64_t seed = 0, DataType dtype = DataType::kFloat);
// Truncated normal of stddev sqrt(2 / (fan_in + fan_out)) / 0.8796... (the
// stddev of the standard normal truncated at 2, so that the samples have
// exactly that stddev).
Output GlorotNormal(const Scope& scope, const TensorShape& shape,
                    int64_t seed = 0, DataType dtype = DataType::kFloat);
// Uniform in [-limit, limit), limit = sqrt(6 / fan_in).
Output HeUniform(const Scope& scope, const TensorShape& shape, int64_t seed = 0,
                 DataType dtype = DataType::kFloat);
// Truncated normal of stddev sqrt(2 / fan_in) / 0.8796....
Output HeNormal(const Scope& scope, const TensorShape& shape, int64_t seed = 0,
                DataType dtype = DataType::kFloat);
// mean + stddev * TruncatedNormal (so within 2 stddev of the mean).
Output TruncatedNormalInitializer(const Scope& scope, const TensorShape& shape,
                                  double stddev, double mean = 0,
                                  int64_t seed = 0,
                                  DataType dtype = DataType::kFloat);
// Uniform in [minval, maxval).
Output RandomUniformInitializer(const Scope& scope, const TensorShape& shape,
                                double minval, double maxval, int64_t seed = 0,
                                DataType dtype = DataType::kFloat);

}  // namespace ops
}  // namespace distflow

#endif  // DISTFLOW_OPS_RANDOM_OPS_H_
