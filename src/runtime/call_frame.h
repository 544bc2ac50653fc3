// The call frame of one Run: fed tensors in, fetched tensors out.
#ifndef DISTFLOW_RUNTIME_CALL_FRAME_H_
#define DISTFLOW_RUNTIME_CALL_FRAME_H_

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "kernels/op_kernel.h"

namespace distflow {

class RunCallFrame : public CallFrame {
 public:
  RunCallFrame(std::vector<Tensor> args, int num_retvals)
      : args_(std::move(args)), retvals_(num_retvals) {}

  absl::StatusOr<Tensor> GetArg(int index) const override {
    if (index < 0 || index >= static_cast<int>(args_.size())) {
      return absl::InternalError(absl::StrCat("no argument ", index));
    }
    return args_[index];
  }
  absl::Status SetRetval(int index, const Tensor& value) override {
    if (index < 0 || index >= static_cast<int>(retvals_.size())) {
      return absl::InternalError(absl::StrCat("no return value ", index));
    }
    // Distinct indices are written by distinct nodes, possibly at once; each
    // slot once.
    retvals_[index] = value;
    return absl::OkStatus();
  }
  std::vector<Tensor> TakeRetvals() { return std::move(retvals_); }

 private:
  std::vector<Tensor> args_;
  std::vector<Tensor> retvals_;
};

}  // namespace distflow

#endif  // DISTFLOW_RUNTIME_CALL_FRAME_H_
