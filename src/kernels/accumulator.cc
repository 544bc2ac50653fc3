#include "kernels/accumulator.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace distflow {
namespace {

// The gradient's elements (float32 or float64) as doubles. Only the sparse
// path uses it: its rows land in a map.
std::vector<double> ToDoubles(const Tensor& t) {
  std::vector<double> out(t.NumElements());
  if (t.dtype() == DataType::kFloat) {
    auto in = t.flat<float>();
    for (size_t i = 0; i < in.size(); ++i) out[i] = in[i];
  } else {
    auto in = t.flat<double>();
    for (size_t i = 0; i < in.size(); ++i) out[i] = in[i];
  }
  return out;
}

// s[0, end - begin) = the sum of gradients[k][begin, end), added in double
// in the gradients' order.
template <typename T>
void SumOf(const std::vector<Tensor>& gradients, int64_t begin, int64_t end,
           double* s) {
  const T* first = gradients[0].flat<T>().data();
  for (int64_t i = begin; i < end; ++i) s[i - begin] = first[i];
  for (size_t k = 1; k < gradients.size(); ++k) {
    const T* g = gradients[k].flat<T>().data();
    for (int64_t i = begin; i < end; ++i) s[i - begin] += g[i];
  }
}

template <typename T>
void AddInto(const Tensor& g, double* sum) {
  const T* in = g.flat<T>().data();
  const int64_t n = g.NumElements();
  for (int64_t i = 0; i < n; ++i) sum[i] += in[i];
}

// out[i] = sums[i] / count. Dividing by a power of two is multiplying by its
// exact reciprocal: the same result, at a fraction of a division's cost.
template <typename T>
void WriteAverage(const double* sums, int64_t n, int count, T* out) {
  if ((count & (count - 1)) == 0) {
    const double reciprocal = 1.0 / count;
    for (int64_t i = 0; i < n; ++i) {
      out[i] = static_cast<T>(sums[i] * reciprocal);
    }
  } else {
    const double divisor = count;
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(sums[i] / divisor);
  }
}

// The average of `gradients` (two or more, of `shape`), summed in double a
// block at a time: each gradient is read once, and the partial sums stay in
// the first-level cache.
template <typename T>
Tensor AverageOf(const std::vector<Tensor>& gradients, DataType dtype,
                 const TensorShape& shape) {
  Tensor out = Tensor::Uninitialized(dtype, shape);
  T* o = out.flat<T>().data();
  const int64_t n = out.NumElements();
  const int count = static_cast<int>(gradients.size());
  constexpr int64_t kBlock = 512;
  double s[kBlock];
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    const int64_t end = std::min(n, begin + kBlock);
    SumOf<T>(gradients, begin, end, s);
    WriteAverage<T>(s, end - begin, count, o + begin);
  }
  return out;
}

// A tensor of `dtype` and `shape` holding `values / count`. Every element is
// written, so the buffer starts uninitialized.
Tensor FromDoubles(DataType dtype, const TensorShape& shape,
                   const double* values, int64_t n, int count) {
  Tensor t = Tensor::Uninitialized(dtype, shape);
  if (dtype == DataType::kFloat) {
    WriteAverage<float>(values, n, count, t.flat<float>().data());
  } else {
    WriteAverage<double>(values, n, count, t.flat<double>().data());
  }
  return t;
}

int64_t IndexAt(const Tensor& indices, int64_t i) {
  return indices.dtype() == DataType::kInt32 ? indices.flat<int32_t>()[i]
                                             : indices.flat<int64_t>()[i];
}

}  // namespace

Accumulator::Accumulator(std::string name, DataType dtype,
                         PartialTensorShape shape)
    : name_(std::move(name)),
      dtype_(dtype),
      declared_shape_(std::move(shape)) {}

std::string Accumulator::Describe() const {
  return absl::StrCat(is_sparse() ? "sparse " : "", "accumulator '", name_,
                      "' of shape ", declared_shape_.DebugString());
}

absl::StatusOr<bool> Accumulator::Apply(int64_t local_step,
                                        const std::vector<Tensor>& gradient) {
  const Tensor& values = gradient.back();
  if (values.dtype() != dtype_) {
    return absl::InvalidArgumentError(
        absl::StrCat(Describe(), " holds ", DataTypeName(dtype_),
                     " gradients, got ", values.TypeString()));
  }
  Wakeups wakeups;
  absl::MutexLock lock(&mu_);
  if (local_step < global_step_) return false;  // stale: dropped
  DF_RETURN_IF_ERROR(AddLocked(gradient));
  ++count_;
  takers_.AssertHeld();
  takers_.Notify(&wakeups);
  return true;
}

void Accumulator::Take(int64_t num_required, CancellationManager* cancellation,
                       std::shared_ptr<Accumulator> self, TakeDone done) {
  if (num_required < 1) {
    done(absl::InvalidArgumentError(
             absl::StrCat("taking from ", Describe(),
                          " needs num_required >= 1, got ", num_required)),
         {});
    return;
  }
  auto result = std::make_shared<Result>();
  Wakeups wakeups;
  absl::MutexLock lock(&mu_);
  if (closed_) {
    wakeups.Add([done, d = Describe()] {
      done(absl::CancelledError(absl::StrCat(d, " is closed")), {});
    });
    return;
  }
  auto serve = [this, num_required, result]()
                   ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                     if (count_ < num_required) return false;
                     *result = TakeAverageLocked();
                     count_ = 0;
                     ++global_step_;
                     return true;
                   };
  takers_.AssertHeld();
  takers_.Wait(
      cancellation, std::move(self),
      absl::StrCat(num_required, " gradients in ", Describe()),
      std::move(serve),
      [done = std::move(done), result](const absl::Status& s) {
        done(s, s.ok() ? std::move(*result) : Result());
      },
      &wakeups);
  // Enough may have arrived already.
  takers_.Notify(&wakeups);
}

void Accumulator::SetGlobalStep(int64_t step) {
  absl::MutexLock lock(&mu_);
  global_step_ = step;
  closed_ = false;
}

void Accumulator::Close() {
  Wakeups wakeups;
  absl::MutexLock lock(&mu_);
  closed_ = true;
  takers_.AssertHeld();
  takers_.FailAll(absl::CancelledError(absl::StrCat(Describe(), " is closed")),
                  &wakeups);
}

int Accumulator::NumAccumulated() const {
  absl::MutexLock lock(&mu_);
  return count_;
}

int64_t Accumulator::global_step() const {
  absl::MutexLock lock(&mu_);
  return global_step_;
}

std::string Accumulator::DebugString() const {
  return absl::StrCat("a ", DataTypeName(dtype_), " ", Describe());
}

absl::Status DenseAccumulator::AddLocked(const std::vector<Tensor>& gradient) {
  const Tensor& g = gradient[0];
  if (!has_shape_) {
    if (!declared_shape_.IsCompatibleWith(PartialTensorShape(g.shape()))) {
      return absl::InvalidArgumentError(
          absl::StrCat("a gradient of shape ", g.shape().DebugString(),
                       " does not fit ", Describe()));
    }
    shape_ = g.shape();
    has_shape_ = true;
  } else if (g.shape() != shape_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a gradient of shape ", g.shape().DebugString(), " does not fit ",
        Describe(), ", which holds gradients of shape ", shape_.DebugString()));
  }
  // A round's first gradients are held as they came (tensors are immutable
  // and shared, so this copies nothing) and averaged in one pass by the take;
  // one more than kHeldGradients starts a sum in double.
  const bool is_float = g.dtype() == DataType::kFloat;
  if (count_ < kHeldGradients) {
    held_.push_back(g);
    return absl::OkStatus();
  }
  if (count_ == kHeldGradients) {
    sum_.resize(g.NumElements());
    const int64_t n = static_cast<int64_t>(sum_.size());
    is_float ? SumOf<float>(held_, 0, n, sum_.data())
             : SumOf<double>(held_, 0, n, sum_.data());
    held_.clear();
  }
  is_float ? AddInto<float>(g, sum_.data()) : AddInto<double>(g, sum_.data());
  return absl::OkStatus();
}

Accumulator::Result DenseAccumulator::TakeAverageLocked() {
  std::vector<Tensor> held = std::move(held_);
  held_.clear();
  // The average of one gradient is that gradient, bit for bit.
  if (count_ == 1) return {std::move(held[0])};
  if (count_ <= kHeldGradients) {
    return {dtype_ == DataType::kFloat
                ? AverageOf<float>(held, dtype_, shape_)
                : AverageOf<double>(held, dtype_, shape_)};
  }
  return {FromDoubles(dtype_, shape_, sum_.data(),
                      static_cast<int64_t>(sum_.size()), count_)};
}

absl::Status SparseAccumulator::AddLocked(const std::vector<Tensor>& gradient) {
  const Tensor& indices = gradient[0];
  const Tensor& values = gradient[1];
  if (indices.dims() != 1 || values.dims() < 1 ||
      values.dim_size(0) != indices.dim_size(0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a sparse gradient needs indices [n] and values [n, ...], got indices ",
        indices.shape().DebugString(), " and values ",
        values.shape().DebugString(), " for ", Describe()));
  }
  std::vector<int64_t> row(values.shape().dim_sizes().begin() + 1,
                           values.shape().dim_sizes().end());
  if (!has_row_shape_) {
    if (!declared_shape_.unknown_rank()) {
      std::vector<int64_t> declared_row(declared_shape_.dim_sizes());
      if (!declared_row.empty()) declared_row.erase(declared_row.begin());
      auto want = PartialTensorShape::FromDims(declared_row);
      auto got = PartialTensorShape::FromDims(row);
      if (declared_shape_.dims() == 0 || !want.ok() || !got.ok() ||
          !want->IsCompatibleWith(*got)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "sparse gradient values of shape ", values.shape().DebugString(),
            " do not fit the rows of ", Describe()));
      }
    }
    row_shape_ = row;
    has_row_shape_ = true;
    row_size_ = 1;
    for (int64_t d : row) row_size_ *= d;
  } else if (row != row_shape_) {
    return absl::InvalidArgumentError(
        absl::StrCat("sparse gradient values of shape ",
                     values.shape().DebugString(), " do not fit the rows [",
                     absl::StrJoin(row_shape_, ","), "] of ", Describe()));
  }
  const int64_t limit =
      declared_shape_.dims() > 0 ? declared_shape_.dim_size(0) : -1;
  const int64_t n = indices.dim_size(0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t index = IndexAt(indices, i);
    if (index < 0 || (limit >= 0 && index >= limit)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sparse gradient index ", index, " (position ", i,
          ") is outside [0, ", limit >= 0 ? absl::StrCat(limit) : "inf",
          ") for ", Describe()));
    }
  }
  std::vector<double> v = ToDoubles(values);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<double>& sum = rows_[IndexAt(indices, i)];
    sum.resize(row_size_, 0.0);
    for (int64_t j = 0; j < row_size_; ++j) sum[j] += v[i * row_size_ + j];
  }
  return absl::OkStatus();
}

Accumulator::Result SparseAccumulator::TakeAverageLocked() {
  const int64_t m = static_cast<int64_t>(rows_.size());
  Tensor indices(DataType::kInt64, TensorShape({m}));
  TensorShape values_shape({m});
  for (int64_t d : row_shape_) values_shape.AddDim(d);
  std::vector<double> flat;
  flat.reserve(m * row_size_);
  int64_t i = 0, max_index = -1;
  for (const auto& [index, sum] : rows_) {
    indices.flat<int64_t>()[i++] = index;
    flat.insert(flat.end(), sum.begin(), sum.end());
    max_index = index;
  }
  Tensor values = FromDoubles(dtype_, values_shape, flat.data(),
                              static_cast<int64_t>(flat.size()), count_);
  std::vector<int32_t> dense;
  const int64_t rows =
      declared_shape_.dims() > 0 && declared_shape_.dim_size(0) >= 0
          ? declared_shape_.dim_size(0)
          : max_index + 1;
  dense.push_back(static_cast<int32_t>(rows));
  for (int64_t d : row_shape_) dense.push_back(static_cast<int32_t>(d));
  rows_.clear();
  return {indices, values, Tensor::Vector<int32_t>(dense)};
}

}  // namespace distflow
