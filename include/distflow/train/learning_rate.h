// Learning-rate schedules: scalar graph values computed from the global step
// each time a step runs, to pass as an optimizer's learning rate.
//
//   auto step = train::GetOrCreateGlobalStep(scope);
//   Output lr = train::ExponentialDecay(scope, 0.1, step, 1000, 0.96);
//   train::GradientDescentOptimizer sgd(lr);
//
// Errors (such as decay_steps <= 0) are recorded in the scope, like those of
// ops, and the result is an invalid Output.
#ifndef DISTFLOW_TRAIN_LEARNING_RATE_H_
#define DISTFLOW_TRAIN_LEARNING_RATE_H_

#include <cstdint>
#include <vector>

#include "distflow/scope.h"
#include "distflow/types.h"

namespace distflow {
namespace train {

// learning_rate * decay_rate ^ (global_step / decay_steps); with `staircase`
// the exponent is rounded down, so the rate drops every decay_steps steps.
// `learning_rate` is a number or a scalar Output; `global_step` an integer or
// float scalar (such as the global step variable). The result is a scalar of
// `dtype` (float32 or float64: the type of the variables it will train).
Output ExponentialDecay(const Scope& scope, const Input& learning_rate,
                        const Output& global_step, int64_t decay_steps,
                        double decay_rate, bool staircase = false,
                        DataType dtype = DataType::kFloat);

// values[0] while global_step <= boundaries[0], values[i] while
// boundaries[i-1] < global_step <= boundaries[i], and values.back() after the
// last boundary. Needs one more value than boundaries, and strictly
// increasing boundaries. `global_step` is an integer scalar; the result is a
// scalar of `dtype`.
Output PiecewiseConstant(const Scope& scope, const Output& global_step,
                         const std::vector<int64_t>& boundaries,
                         const std::vector<double>& values,
                         DataType dtype = DataType::kFloat);

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_LEARNING_RATE_H_
