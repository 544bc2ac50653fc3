// What the oneDNN-based kernels (convolution, pooling) share: the CPU engine,
// per-shape caches of primitives, threading, and error conversion.
//
// Debian's oneDNN runs its primitives on OpenMP threads. Kernels call
// UseIntraOpThreads before executing a primitive so that oneDNN uses as many
// threads as the session's intra-op pool, not one per core regardless.
#ifndef DISTFLOW_KERNELS_ONEDNN_UTIL_H_
#define DISTFLOW_KERNELS_ONEDNN_UTIL_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "distflow/tensor.h"
#include "dnnl.hpp"
#include "graph/ops/window_geometry.h"
#include "kernels/op_kernel.h"

namespace distflow {
namespace onednn {

// The process's oneDNN CPU engine (created on first use; thread-safe).
const dnnl::engine& CpuEngine();

// Held while a kernel executes oneDNN primitives: makes them use as many
// OpenMP threads as `ctx`'s intra-op pool, and, when that is more than one,
// runs them one at a time in the process. Each such execution already keeps
// every intra-op thread busy, and two OpenMP teams sharing the cores spin at
// their barriers waiting for each other, which costs far more than waiting
// for the lock.
class ExecutionScope {
 public:
  explicit ExecutionScope(OpKernelContext* ctx);
  ~ExecutionScope();
  ExecutionScope(const ExecutionScope&) = delete;
  ExecutionScope& operator=(const ExecutionScope&) = delete;

 private:
  absl::Mutex* mu_ = nullptr;  // held if not null
};

// INTERNAL error naming `op` and what oneDNN reported.
absl::Status FromError(const std::string& op, const dnnl::error& e);

// Runs `body`, which builds or executes primitives, and returns what oneDNN
// threw, if anything, as an error naming `op`.
template <typename Body>
absl::Status Run(const std::string& op, Body&& body) {
  try {
    body();
  } catch (const dnnl::error& e) {
    return FromError(op, e);
  }
  return absl::OkStatus();
}

// A stream on the CPU engine, used under an ExecutionScope. Its constructor
// and methods may throw dnnl::error: use it inside Run.
class Stream {
 public:
  explicit Stream(OpKernelContext* ctx);

  // Executes `p` with `args` and a scratchpad of its own described by
  // `scratchpad` (see UserScratchpad), and waits for it to finish.
  void Execute(const dnnl::primitive& p, const dnnl::memory::desc& scratchpad,
               std::unordered_map<int, dnnl::memory> args);

  // Executes the reorder `r` from `from` to `to` and waits for it to finish.
  void Reorder(const dnnl::reorder& r, dnnl::memory from, dnnl::memory to);

 private:
  ExecutionScope scope_;
  dnnl::stream stream_;
};

// The shape given by `t`, which must be an int32 vector of 4 sizes (such as
// Conv2DBackpropInput's input_sizes), or INVALID_ARGUMENT naming `op` and
// the input `what`.
absl::StatusOr<TensorShape> ShapeFromSizes(const std::string& op,
                                           const std::string& what,
                                           const Tensor& t);

// Reads into `w` the attrs of the windowed op `op` (convolution, pooling):
// the spatial pairs named in `pairs` ("ksize", "strides" or "dilations", in
// that order of checking), "padding" and "data_format", which must be NHWC.
absl::Status GetWindowAttrs(OpKernelConstruction* ctx, const std::string& op,
                            std::initializer_list<const char*> pairs,
                            Window2D* w);

// True when there is nothing to execute: `out` is empty, or one of
// `operands` is, and then `out` is filled with zeros.
bool NothingToCompute(Tensor* out,
                      std::initializer_list<const Tensor*> operands);

// The oneDNN descriptor of an NHWC float tensor of logical shape [n, c, h, w].
dnnl::memory::desc NhwcDesc(int64_t n, int64_t c, int64_t h, int64_t w);

// A oneDNN memory over `t`'s buffer (not owned; `t` must outlive it).
dnnl::memory MemoryOf(const dnnl::memory::desc& desc, const Tensor& t);

// Attributes asking for a caller-provided scratchpad: each execution then
// has its own, so one primitive can run on several threads at once.
dnnl::primitive_attr UserScratchpad();

// A buffer for `desc` (such as a scratchpad or a blocked weight layout).
Tensor Allocate(const dnnl::memory::desc& desc);

// Primitives built once per input shape and kept for the kernel's lifetime,
// so that training steps reuse them. Entries are immutable once built, and a
// oneDNN primitive may execute on several threads at once (the kernels give
// each execution its own scratchpad), so Get needs the lock only to find or
// insert.
template <typename Entry>
class PrimitiveCache {
 public:
  using Key = std::vector<int64_t>;
  // The entry for `key`, built by `make` on first use. `make` may throw
  // dnnl::error; the caller converts it.
  const Entry* Get(const Key& key, const std::function<Entry()>& make) {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) return it->second.get();
    auto entry = std::make_unique<Entry>(make());
    const Entry* result = entry.get();
    entries_.emplace(key, std::move(entry));
    return result;
  }

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<Key, std::unique_ptr<Entry>> entries_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace onednn
}  // namespace distflow

#endif  // DISTFLOW_KERNELS_ONEDNN_UTIL_H_
