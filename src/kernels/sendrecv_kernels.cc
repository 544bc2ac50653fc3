// _Send and _Recv kernels: hand a tensor to the step's rendezvous, and wait
// for one from it without holding a thread. _GatherPack: joins a packed
// transfer's tensors without copying them.
#include <string>

#include "absl/strings/str_cat.h"
#include "core/gathered_tensor.h"
#include "kernels/kernel_families.h"

namespace distflow {
namespace {

std::string KeyFromAttrs(OpKernelConstruction* ctx) {
  std::string send_device, recv_device, tensor_name;
  ctx->SetStatus(ctx->GetAttr("send_device", &send_device));
  ctx->SetStatus(ctx->GetAttr("recv_device", &recv_device));
  ctx->SetStatus(ctx->GetAttr("tensor_name", &tensor_name));
  return MakeRendezvousKey(send_device, recv_device, tensor_name);
}

absl::Status NoRendezvous(const std::string& op, const std::string& name) {
  return absl::InternalError(
      absl::StrCat(op, " '", name,
                   "' ran without a rendezvous: partitioned graphs must run "
                   "on a worker"));
}

// Async so that the step waits until the value has reached the receiving
// task (errors on the way fail the step that sent it).
class SendOp : public AsyncOpKernel {
 public:
  explicit SendOp(OpKernelConstruction* ctx)
      : AsyncOpKernel(ctx), key_(KeyFromAttrs(ctx)) {}
  // Hands the tensor to the rendezvous, whose transports send it on without
  // waiting on this thread for the receiver.
  bool IsExpensive() const override { return false; }
  void ComputeAsync(OpKernelContext* ctx, std::function<void()> done) override {
    if (ctx->rendezvous() == nullptr) {
      ctx->SetStatus(NoRendezvous("_Send", name()));
      done();
      return;
    }
    ctx->rendezvous()->SendAsync(key_, ctx->input(0),
                                 [ctx, done](const absl::Status& s) {
                                   ctx->SetStatus(s);
                                   done();
                                 });
  }

 private:
  std::string key_;
};

class RecvOp : public AsyncOpKernel {
 public:
  explicit RecvOp(OpKernelConstruction* ctx)
      : AsyncOpKernel(ctx), key_(KeyFromAttrs(ctx)) {}
  // Registers a callback for the tensor.
  bool IsExpensive() const override { return false; }
  void ComputeAsync(OpKernelContext* ctx, std::function<void()> done) override {
    if (ctx->rendezvous() == nullptr) {
      ctx->SetStatus(NoRendezvous("_Recv", name()));
      done();
      return;
    }
    ctx->rendezvous()->RecvAsync(
        key_, [ctx, done](const absl::Status& s, Tensor value) {
          if (s.ok()) {
            ctx->set_output(0, std::move(value));
          } else {
            ctx->SetStatus(s);
          }
          done();
        });
  }

 private:
  std::string key_;
};

// The transport sends the parts from where they lie; the receiver gets them
// in one buffer and slices them apart (graph/partition.cc).
class GatherPackOp : public OpKernel {
 public:
  explicit GatherPackOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    ctx->SetStatus(ctx->GetAttr("T", &dtype_));
  }
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    std::vector<Tensor> parts;
    parts.reserve(ctx->num_inputs());
    for (int i = 0; i < ctx->num_inputs(); ++i) parts.push_back(ctx->input(i));
    absl::StatusOr<Tensor> packed = GatherTensors(dtype_, std::move(parts));
    DF_OP_REQUIRES_OK(ctx, packed.status());
    ctx->set_output(0, *std::move(packed));
  }

 private:
  DataType dtype_ = DataType::kInvalid;
};

}  // namespace

void RegisterSendRecvKernels(KernelRegistry* r) {
  RegisterCpuKernel<SendOp>(r, "_Send");
  RegisterCpuKernel<RecvOp>(r, "_Recv");
  RegisterCpuKernel<GatherPackOp>(r, "_GatherPack");
}

}  // namespace distflow
