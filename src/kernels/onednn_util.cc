#include "kernels/onednn_util.h"

#include <omp.h>

#include "absl/strings/str_cat.h"

namespace distflow {
namespace onednn {

const dnnl::engine& CpuEngine() {
  static const dnnl::engine* engine =
      new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

void UseIntraOpThreads(OpKernelContext* ctx) {
  // The OpenMP thread count is a per-thread setting: set it on every call, as
  // kernels run on whichever executor thread is free. Cheap when unchanged.
  const int threads = ctx->intra_op_pool()->NumThreads();
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
}

absl::Status FromError(const std::string& op, const dnnl::error& e) {
  return absl::InternalError(absl::StrCat(op, ": oneDNN failed (status ",
                                          static_cast<int>(e.status),
                                          "): ", e.what()));
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
