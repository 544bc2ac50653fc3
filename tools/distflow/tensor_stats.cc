#include "tools/distflow/tensor_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"
#include "core/type_dispatch.h"

namespace distflow {
namespace tools {
namespace {

template <typename T>
TensorStats StatsOf(const T* values, int64_t n) {
  TensorStats stats;
  stats.min = std::numeric_limits<double>::infinity();
  stats.max = -std::numeric_limits<double>::infinity();
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(values[i]);
    if (std::isnan(v)) {
      const double nan = std::numeric_limits<double>::quiet_NaN();
      return TensorStats{nan, nan, nan};
    }
    stats.min = std::min(stats.min, v);
    stats.max = std::max(stats.max, v);
    sum += v;
  }
  stats.mean = sum / static_cast<double>(n);
  return stats;
}

}  // namespace

std::optional<TensorStats> ComputeTensorStats(const Tensor& tensor) {
  if (!tensor.IsInitialized() || tensor.NumElements() == 0) return std::nullopt;
  const int64_t n = tensor.NumElements();
  if (tensor.dtype() == DataType::kBool) {
    return StatsOf(tensor.data<bool>(), n);
  }
  std::optional<TensorStats> stats;
  (void)VisitNumericType(tensor.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    stats = StatsOf(tensor.data<T>(), n);
    return absl::OkStatus();
  });
  return stats;
}

std::string FormatStat(double value) { return absl::StrFormat("%.6g", value); }

}  // namespace tools
}  // namespace distflow
