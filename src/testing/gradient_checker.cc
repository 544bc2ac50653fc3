#include "testing/gradient_checker.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "core/type_dispatch.h"
#include "distflow/gradients.h"
#include "distflow/ops.h"
#include "distflow/session.h"

namespace distflow {
namespace test {
namespace {

// Element i of a float32 or float64 tensor, as a double.
double Get(const Tensor& t, int64_t i) {
  return t.dtype() == DataType::kFloat ? t.flat<float>()[i]
                                       : t.flat<double>()[i];
}
void Set(Tensor* t, int64_t i, double v) {
  if (t->dtype() == DataType::kFloat) {
    t->flat<float>()[i] = static_cast<float>(v);
  } else {
    t->flat<double>()[i] = v;
  }
}

}  // namespace

absl::StatusOr<double> MaxGradientError(const Scope& scope,
                                        const std::vector<Output>& xs,
                                        const std::vector<Tensor>& x_values,
                                        const Output& y,
                                        const GradientCheckOptions& options) {
  if (xs.size() != x_values.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("MaxGradientError: ", xs.size(), " xs but ",
                     x_values.size(), " values"));
  }
  for (size_t k = 0; k < xs.size(); ++k) {
    const DataType t = x_values[k].dtype();
    if (t != DataType::kFloat && t != DataType::kDouble) {
      return absl::InvalidArgumentError(
          absl::StrCat("MaxGradientError: x ", xs[k].name(),
                       " must be float32 or float64, got ", DataTypeName(t)));
    }
  }
  if (y.dtype() != DataType::kFloat && y.dtype() != DataType::kDouble) {
    return absl::InvalidArgumentError(absl::StrCat(
        "MaxGradientError: y ", y.name(), " must be float32 or float64, got ",
        DataTypeName(y.dtype())));
  }
  // The symbolic Jacobian's row j is the gradient for grad_y = e_j.
  Output grad_y = ops::Placeholder(scope.WithOpName("grad_y"), y.dtype());
  DF_ASSIGN_OR_RETURN(std::vector<Gradient> grads,
                      Gradients(scope, {y}, xs, {grad_y}));
  std::vector<Output> dense;
  std::vector<int> fetched_index(xs.size(), -1);
  for (size_t k = 0; k < xs.size(); ++k) {
    if (!grads[k].has_value()) continue;
    fetched_index[k] = static_cast<int>(dense.size());
    dense.push_back(grads[k].ToDense(scope));
  }
  DF_RETURN_IF_ERROR(scope.status());
  DF_ASSIGN_OR_RETURN(auto session, ClientSession::Create(scope));

  auto feeds_with = [&](const std::vector<Tensor>& values) {
    ClientSession::FeedDict feeds;
    for (size_t k = 0; k < xs.size(); ++k) feeds.push_back({xs[k], values[k]});
    return feeds;
  };
  auto eval_y =
      [&](const std::vector<Tensor>& values) -> absl::StatusOr<Tensor> {
    DF_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                        session->Run(feeds_with(values), {y}));
    return out[0];
  };

  DF_ASSIGN_OR_RETURN(Tensor y0, eval_y(x_values));
  const int64_t m = y0.NumElements();

  // symbolic[k][i * m + j] = d y_j / d x_k[i]
  std::vector<std::vector<double>> symbolic(xs.size());
  for (size_t k = 0; k < xs.size(); ++k) {
    symbolic[k].assign(x_values[k].NumElements() * m, 0.0);
  }
  for (int64_t j = 0; j < m; ++j) {
    Tensor e(y.dtype(), y0.shape());
    for (int64_t i = 0; i < m; ++i) Set(&e, i, i == j ? 1.0 : 0.0);
    ClientSession::FeedDict feeds = feeds_with(x_values);
    feeds.push_back({grad_y, e});
    if (dense.empty()) break;
    DF_ASSIGN_OR_RETURN(std::vector<Tensor> out, session->Run(feeds, dense));
    for (size_t k = 0; k < xs.size(); ++k) {
      if (fetched_index[k] < 0) continue;
      const Tensor& g = out[fetched_index[k]];
      if (g.shape() != x_values[k].shape()) {
        return absl::InternalError(
            absl::StrCat("the gradient for ", xs[k].name(), " has shape ",
                         g.shape().DebugString(), " but x has shape ",
                         x_values[k].shape().DebugString()));
      }
      for (int64_t i = 0; i < g.NumElements(); ++i) {
        symbolic[k][i * m + j] = Get(g, i);
      }
    }
  }

  double max_error = 0;
  for (size_t k = 0; k < xs.size(); ++k) {
    for (int64_t i = 0; i < x_values[k].NumElements(); ++i) {
      std::vector<Tensor> plus, minus;
      for (const Tensor& v : x_values) {
        plus.push_back(v.Copy());
        minus.push_back(v.Copy());
      }
      const double x = Get(x_values[k], i);
      Set(&plus[k], i, x + options.delta);
      Set(&minus[k], i, x - options.delta);
      // The step actually taken, after rounding to the inputs' type.
      const double step = Get(plus[k], i) - Get(minus[k], i);
      DF_ASSIGN_OR_RETURN(Tensor y_plus, eval_y(plus));
      DF_ASSIGN_OR_RETURN(Tensor y_minus, eval_y(minus));
      for (int64_t j = 0; j < m; ++j) {
        const double numeric = (Get(y_plus, j) - Get(y_minus, j)) / step;
        const double error = std::abs(numeric - symbolic[k][i * m + j]);
        if (std::isnan(error)) return std::numeric_limits<double>::infinity();
        max_error = std::max(max_error, error);
      }
    }
  }
  return max_error;
}

}  // namespace test
}  // namespace distflow
