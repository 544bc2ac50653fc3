// Helpers for kernel tests: running a graph built with a Scope in a real local
// session, the way users run kernels, and deterministic test data.
#ifndef DISTFLOW_KERNELS_KERNEL_TEST_UTIL_H_
#define DISTFLOW_KERNELS_KERNEL_TEST_UTIL_H_

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "distflow/ops.h"
#include "distflow/scope.h"
#include "distflow/session.h"
#include "distflow/tensor.h"
#include "gtest/gtest.h"

namespace distflow {
namespace test {

// Runs the scope's graph in a new local session: feeds `feeds`, runs `targets`
// and returns the values of `fetches`.
inline absl::StatusOr<std::vector<Tensor>> RunGraph(
    const Scope& scope, const ClientSession::FeedDict& feeds,
    const std::vector<Output>& fetches, const SessionOptions& options = {}) {
  auto session = ClientSession::Create(scope, options);
  if (!session.ok()) return session.status();
  return (*session)->Run(feeds, fetches);
}

// A new local session over `scope` with its global variables initialized.
inline absl::StatusOr<std::unique_ptr<ClientSession>> InitializedSession(
    const Scope& scope) {
  auto session = ClientSession::Create(scope);
  if (!session.ok()) return session.status();
  absl::Status init =
      (*session)->RunTargets({ops::GlobalVariablesInitializer(scope)});
  if (!init.ok()) return init;
  return session;
}

// The value of `fetch` computed in a new local session, or the error of running
// it.
inline absl::StatusOr<Tensor> RunOne(const Scope& scope, const Output& fetch,
                                     const ClientSession::FeedDict& feeds = {},
                                     const SessionOptions& options = {}) {
  auto out = RunGraph(scope, feeds, {fetch}, options);
  if (!out.ok()) return out.status();
  if (out->size() != 1)
    return absl::InternalError("expected exactly one fetched value");
  return std::move((*out)[0]);
}

// `n` deterministic pseudo-random values: floats in [-1, 1), or small integers
// so that sums and products of a few terms stay in range (uint8 covers its
// whole range: it wraps like the kernels).
template <typename T>
std::vector<T> RandomValues(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<T> values(n);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    for (T& v : values) v = static_cast<T>(dist(gen));
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    std::uniform_int_distribution<int> dist(0, 255);
    for (T& v : values) v = static_cast<T>(dist(gen));
  } else {
    std::uniform_int_distribution<int> dist(-100, 100);
    for (T& v : values) v = static_cast<T>(dist(gen));
  }
  return values;
}

// A tensor of `shape` holding `values` (whose count must match).
template <typename T>
Tensor MakeTensor(const TensorShape& shape, const std::vector<T>& values) {
  Tensor t(DataTypeOf<T>::value, shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), shape.num_elements());
  for (int64_t i = 0;
       i < shape.num_elements() && i < static_cast<int64_t>(values.size());
       ++i) {
    t.flat<T>()[i] = values[i];
  }
  return t;
}

template <typename T>
Tensor RandomTensor(const TensorShape& shape, uint32_t seed) {
  return MakeTensor<T>(shape, RandomValues<T>(shape.num_elements(), seed));
}

// Success if `got` has `want`'s dtype and shape and exactly equal elements;
// otherwise names the first element that differs.
template <typename T>
::testing::AssertionResult TensorsEqual(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return ::testing::AssertionFailure()
           << "got " << got.TypeString() << ", want " << want.TypeString();
  }
  auto g = got.flat<T>();
  auto w = want.flat<T>();
  for (size_t i = 0; i < g.size(); ++i) {
    if (!(g[i] == w[i])) {
      return ::testing::AssertionFailure()
             << "element " << i << " of " << got.TypeString()
             << " differs: got " << ::testing::PrintToString(g[i]) << ", want "
             << ::testing::PrintToString(w[i]);
    }
  }
  return ::testing::AssertionSuccess();
}

// Success if `status` has `code` and its message contains every string of
// `parts`.
inline ::testing::AssertionResult HasError(
    const absl::Status& status, absl::StatusCode code,
    std::initializer_list<std::string> parts) {
  if (status.code() != code) {
    return ::testing::AssertionFailure() << "got " << status << ", want code "
                                         << absl::StatusCodeToString(code);
  }
  for (const std::string& part : parts) {
    if (std::string(status.message()).find(part) == std::string::npos) {
      return ::testing::AssertionFailure()
             << "message of " << status << " does not mention \"" << part
             << "\"";
    }
  }
  return ::testing::AssertionSuccess();
}

// The types the numeric kernels support, for typed tests.
using NumericTypes = ::testing::Types<float, double, int32_t, int64_t, uint8_t>;

}  // namespace test
}  // namespace distflow

#endif  // DISTFLOW_KERNELS_KERNEL_TEST_UTIL_H_
