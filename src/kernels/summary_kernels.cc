// ScalarSummary and MergeSummary: serialized Summary protos in string scalars.
// Errors leave out the op and node: the executor prefixes them.
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/type_dispatch.h"
#include "kernels/kernel_families.h"
#include "proto/summary.pb.h"

namespace distflow {
namespace {

Tensor StringScalar(std::string value) {
  return Tensor::Scalar<std::string>(std::move(value));
}

class ScalarSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& tag = ctx->input(0);
    const Tensor& value = ctx->input(1);
    // Shapes unknown when the graph was built are checked here.
    DF_OP_REQUIRES(ctx, tag.dims() == 0,
                   absl::InvalidArgumentError(absl::StrCat(
                       "tag must be a scalar, got ", tag.TypeString())));
    DF_OP_REQUIRES(ctx, value.dims() == 0,
                   absl::InvalidArgumentError(absl::StrCat(
                       "value of tag '", tag.scalar<std::string>(),
                       "' must be a scalar, got ", value.TypeString(),
                       " (reduce it first, e.g. with Mean)")));
    double v = 0;
    DF_OP_REQUIRES_OK(
        ctx, VisitNumericType(value.dtype(), [&](auto type) -> absl::Status {
          using T = typename decltype(type)::type;
          v = static_cast<double>(value.scalar<T>());
          return absl::OkStatus();
        }));
    proto::Summary summary;
    proto::Summary::Value* out = summary.add_value();
    out->set_tag(tag.scalar<std::string>());
    out->set_simple_value(static_cast<float>(v));
    ctx->set_output(0, StringScalar(summary.SerializeAsString()));
  }
  bool IsExpensive() const override { return false; }
};

class MergeSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    proto::Summary merged;
    absl::flat_hash_set<std::string> tags;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const Tensor& in = ctx->input(i);
      DF_OP_REQUIRES(ctx, in.dims() == 0,
                     absl::InvalidArgumentError(absl::StrCat(
                         "input ", i, " must be a scalar summary, got ",
                         in.TypeString())));
      proto::Summary part;
      DF_OP_REQUIRES(ctx, part.ParseFromString(in.scalar<std::string>()),
                     absl::InvalidArgumentError(absl::StrCat(
                         "input ", i, " is not a serialized Summary")));
      for (proto::Summary::Value& v : *part.mutable_value()) {
        DF_OP_REQUIRES(ctx, tags.insert(v.tag()).second,
                       absl::InvalidArgumentError(absl::StrCat(
                           "tag '", v.tag(), "' of input ", i,
                           " appears twice; give each summary its own tag")));
        *merged.add_value() = std::move(v);
      }
    }
    ctx->set_output(0, StringScalar(merged.SerializeAsString()));
  }
  bool IsExpensive() const override { return false; }
};

}  // namespace

void RegisterSummaryKernels(KernelRegistry* r) {
  RegisterCpuKernel<ScalarSummaryOp>(r, "ScalarSummary");
  RegisterCpuKernel<MergeSummaryOp>(r, "MergeSummary");
}

}  // namespace distflow
