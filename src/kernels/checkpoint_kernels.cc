// SaveShard and RestoreShard: the file I/O of checkpoints, run on the device
// (the ps task) that holds the variables.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "core/safetensors.h"
#include "kernels/kernel_families.h"
#include "kernels/variable.h"

namespace distflow {
namespace {

// The tensor names of a shard op and its variables' handles (inputs 1..N).
class CheckpointShardKernel : public OpKernel {
 public:
  explicit CheckpointShardKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    ctx->SetStatus(ctx->GetAttr("tensor_names", &tensor_names_));
    // The shape each variable was declared with, to refuse a checkpoint
    // tensor that does not fit it.
    for (int i = 1; i < ctx->node().num_inputs(); ++i) {
      PartialTensorShape shape;
      const Node* producer = ctx->node().input(i).node;
      if (producer->op() == "VarHandleOp") {
        ctx->SetStatus(GetAttr(producer->attrs(), "shape", &shape));
      }
      declared_shapes_.push_back(shape);
    }
  }

 protected:
  std::vector<std::string> tensor_names_;
  std::vector<PartialTensorShape> declared_shapes_;  // unknown rank if unknown
};

class SaveShardOp : public CheckpointShardKernel {
 public:
  using CheckpointShardKernel::CheckpointShardKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& path = ctx->input(0);
    DF_OP_REQUIRES(
        ctx, path.dtype() == DataType::kString && path.dims() == 0,
        absl::InvalidArgumentError(absl::StrCat(
            "the path must be a string scalar, not ", path.TypeString())));
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (size_t i = 0; i < tensor_names_.size(); ++i) {
      auto var = GetVariable(ctx, ctx->input(i + 1), /*create=*/false);
      DF_OP_REQUIRES_OK(ctx, var.status());
      absl::MutexLock lock((*var)->mu());
      DF_OP_REQUIRES(
          ctx, (*var)->is_initialized(),
          absl::FailedPreconditionError(absl::StrCat(
              "cannot save variable '", tensor_names_[i],
              "': it is not initialized; run the initializer or restore a "
              "checkpoint first")));
      // Shares the buffer: a later update copies on write, so this stays the
      // value at this moment while the file is written.
      tensors.emplace_back(tensor_names_[i], (*var)->value());
    }
    DF_OP_REQUIRES_OK(ctx,
                      WriteSafetensors(path.scalar<std::string>(), tensors));
  }
};

class RestoreShardOp : public CheckpointShardKernel {
 public:
  using CheckpointShardKernel::CheckpointShardKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& files = ctx->input(0);
    const int64_t n = static_cast<int64_t>(tensor_names_.size());
    DF_OP_REQUIRES(
        ctx,
        files.dtype() == DataType::kString && files.dims() == 1 &&
            files.dim_size(0) == n,
        absl::InvalidArgumentError(absl::StrCat(
            "files must be a string vector of ", n,
            " entries (one per variable), not ", files.TypeString())));
    // Every tensor is read and checked before any variable changes, so a
    // damaged file leaves this device's variables as they were.
    std::map<std::string, std::unique_ptr<SafetensorsReader>> readers;
    std::vector<Tensor> values;
    for (int64_t i = 0; i < n; ++i) {
      const std::string& file = files.flat<std::string>()[i];
      const std::string& name = tensor_names_[i];
      auto& reader = readers[file];
      if (reader == nullptr) {
        auto opened = SafetensorsReader::Open(file);
        DF_OP_REQUIRES_OK(
            ctx, AddErrorContext(opened.status(),
                                 absl::StrCat("restoring '", name, "'")));
        reader = std::move(*opened);
      }
      auto value = reader->Read(name);
      DF_OP_REQUIRES_OK(ctx, value.status());
      auto handle = ScalarHandle(ctx->input(i + 1),
                                 absl::StrCat("the handle of '", name, "'"));
      DF_OP_REQUIRES_OK(ctx, handle.status());
      const ResourceHandle& h = **handle;
      DF_OP_REQUIRES(
          ctx, value->dtype() == h.dtype,
          absl::InvalidArgumentError(absl::StrCat(
              "tensor '", name, "' in '", file, "' is ", value->TypeString(),
              " but variable '", h.name, "' holds ", DataTypeName(h.dtype))));
      DF_OP_REQUIRES(ctx, declared_shapes_[i].IsCompatibleWith(value->shape()),
                     absl::InvalidArgumentError(absl::StrCat(
                         "tensor '", name, "' in '", file, "' has shape ",
                         value->shape().DebugString(), " but variable '",
                         h.name, "' was declared with shape ",
                         declared_shapes_[i].DebugString())));
      values.push_back(std::move(*value));
    }
    for (int64_t i = 0; i < n; ++i) {
      auto var = GetVariable(ctx, ctx->input(i + 1), /*create=*/true);
      DF_OP_REQUIRES_OK(ctx, var.status());
      absl::MutexLock lock((*var)->mu());
      (*var)->set_value(std::move(values[i]));
    }
  }
};

}  // namespace

void RegisterCheckpointKernels(KernelRegistry* r) {
  RegisterCpuKernel<SaveShardOp>(r, "SaveShard");
  RegisterCpuKernel<RestoreShardOp>(r, "RestoreShard");
}

}  // namespace distflow
