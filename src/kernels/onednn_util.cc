#include "kernels/onednn_util.h"

#include <omp.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/logging.h"

namespace distflow {
namespace onednn {

namespace {
ABSL_CONST_INIT absl::Mutex multi_threaded_execution(absl::kConstInit);

// The fields of `w` that the spatial pair attr `name` sets.
std::pair<int64_t*, int64_t*> PairFields(const std::string& name, Window2D* w) {
  if (name == "ksize") return {&w->kh, &w->kw};
  if (name == "strides") return {&w->sh, &w->sw};
  DF_CHECK(name == "dilations") << name;
  return {&w->dh, &w->dw};
}
}  // namespace

const dnnl::engine& CpuEngine() {
  static const dnnl::engine* engine =
      new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

// The lock is taken conditionally, which the analysis cannot follow.
ExecutionScope::ExecutionScope(OpKernelContext* ctx)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  // The OpenMP thread count is a per-thread setting: set it on every call, as
  // kernels run on whichever executor thread is free. Cheap when unchanged.
  const int threads = ctx->intra_op_pool()->NumThreads();
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
  if (threads > 1) {
    mu_ = &multi_threaded_execution;
    mu_->Lock();
  }
}

ExecutionScope::~ExecutionScope() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  if (mu_ != nullptr) mu_->Unlock();
}

absl::Status FromError(const std::string& op, const dnnl::error& e) {
  return absl::InternalError(absl::StrCat(op, ": oneDNN failed (status ",
                                          static_cast<int>(e.status),
                                          "): ", e.what()));
}

Stream::Stream(OpKernelContext* ctx) : scope_(ctx), stream_(CpuEngine()) {}

void Stream::Execute(const dnnl::primitive& p,
                     const dnnl::memory::desc& scratchpad,
                     std::unordered_map<int, dnnl::memory> args) {
  Tensor scratch = Allocate(scratchpad);
  args[DNNL_ARG_SCRATCHPAD] = MemoryOf(scratchpad, scratch);
  p.execute(stream_, args);
  stream_.wait();  // before `scratch` is released
}

void Stream::Reorder(const dnnl::reorder& r, dnnl::memory from,
                     dnnl::memory to) {
  r.execute(stream_, from, to);
  stream_.wait();
}

absl::StatusOr<TensorShape> ShapeFromSizes(const std::string& op,
                                           const std::string& what,
                                           const Tensor& t) {
  if (t.dtype() != DataType::kInt32 || t.dims() != 1 || t.dim_size(0) != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": ", what, " must be an int32 vector of 4 sizes, got ",
        t.TypeString()));
  }
  std::vector<int64_t> dims(t.data<int32_t>(), t.data<int32_t>() + 4);
  return TensorShape::FromDims(dims);
}

absl::Status GetWindowAttrs(OpKernelConstruction* ctx, const std::string& op,
                            std::initializer_list<const char*> pairs,
                            Window2D* w) {
  std::vector<std::vector<int64_t>> values(pairs.size());
  std::string padding, format;
  absl::Status status;
  int i = 0;
  for (const char* name : pairs)
    status.Update(ctx->GetAttr(name, &values[i++]));
  status.Update(ctx->GetAttr("padding", &padding));
  status.Update(ctx->GetAttr("data_format", &format));
  if (!status.ok()) return status;
  if (format != "NHWC") {
    status.Update(absl::InvalidArgumentError(absl::StrCat(
        op, ": only data_format NHWC is supported, got ", format)));
  }
  i = 0;
  for (const char* name : pairs) {
    auto [a, b] = PairFields(name, w);
    status.Update(GetSpatialPair(name, values[i++], a, b));
  }
  auto p = ParsePadding(padding);
  status.Update(p.status());
  if (p.ok()) w->padding = *p;
  return status;
}

bool NothingToCompute(Tensor* out,
                      std::initializer_list<const Tensor*> operands) {
  if (out->NumElements() == 0) return true;
  for (const Tensor* t : operands) {
    if (t->NumElements() == 0) {
      std::fill_n(out->data<float>(), out->NumElements(), 0.0f);
      return true;
    }
  }
  return false;
}

dnnl::memory::desc NhwcDesc(int64_t n, int64_t c, int64_t h, int64_t w) {
  return dnnl::memory::desc({n, c, h, w}, dnnl::memory::data_type::f32,
                            dnnl::memory::format_tag::nhwc);
}

dnnl::memory MemoryOf(const dnnl::memory::desc& desc, const Tensor& t) {
  return dnnl::memory(desc, CpuEngine(), t.raw_data());
}

dnnl::primitive_attr UserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

Tensor Allocate(const dnnl::memory::desc& desc) {
  const int64_t bytes = static_cast<int64_t>(desc.get_size());
  return Tensor::Uninitialized(DataType::kUInt8, TensorShape({bytes}));
}

}  // namespace onednn
}  // namespace distflow
