// Summary statistics of a tensor's values, for printing tensors too large to
// show whole.
#ifndef DISTFLOW_TOOLS_DISTFLOW_TENSOR_STATS_H_
#define DISTFLOW_TOOLS_DISTFLOW_TENSOR_STATS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "distflow/tensor.h"

namespace distflow {
namespace tools {

struct TensorStats {
  double min = 0;
  double max = 0;
  double mean = 0;
};

// The minimum, maximum and mean of a numeric or bool tensor's elements (bools
// count as 0 and 1), accumulated in double. A NaN anywhere makes all three
// NaN, so a diverged tensor cannot hide behind its finite elements. nullopt
// for an empty tensor and for string and resource tensors.
std::optional<TensorStats> ComputeTensorStats(const Tensor& tensor);

// A number for a table: up to 6 significant digits ("0.125", "-3.5e-07",
// "nan").
std::string FormatStat(double value);

}  // namespace tools
}  // namespace distflow

#endif  // DISTFLOW_TOOLS_DISTFLOW_TENSOR_STATS_H_
