// A tensor whose bytes are other tensors' bytes laid end to end, without
// copying them.
//
// A packed transfer joins the small tensors that cross from one task to
// another (graph/edge_packing.h). Concatenating them costs the sender a copy
// of every byte just before the transport reads them all again; a gathered
// tensor instead keeps its parts, and a transport that can send from several
// places (a socket's writev, gRPC's slices, process_vm_readv's iovecs) sends
// them as they lie. Anything else that reads the tensor gets a contiguous
// copy, made once on first access.
#ifndef DISTFLOW_CORE_GATHERED_TENSOR_H_
#define DISTFLOW_CORE_GATHERED_TENSOR_H_

#include <optional>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "distflow/tensor.h"

namespace distflow {

// A 1-D tensor of `dtype` holding the elements of `parts` in order, each part
// read in row-major order. The parts stay referenced, never copied unless the
// tensor's data is accessed. INVALID_ARGUMENT naming the part when one is not
// of `dtype`, or when `dtype` is not a fixed-size type.
absl::StatusOr<Tensor> GatherTensors(DataType dtype, std::vector<Tensor> parts);

// The tensor's bytes as the ranges of memory they occupy, in order: one range
// for an ordinary tensor, the parts' ranges (cut to the tensor's own view)
// for a gathered one. Empty ranges are left out. Reading them does not make
// a gathered tensor's contiguous copy.
using ByteRanges = absl::InlinedVector<absl::Span<const char>, 4>;
ByteRanges TensorByteRanges(const Tensor& tensor);

// Elements [begin, end) of a 1-D gathered `tensor`, as a view into the one
// part that holds them all, so that taking a packed transfer apart copies
// nothing; nullopt when `tensor` is not gathered or the elements span parts.
std::optional<Tensor> GatheredElements(const Tensor& tensor, int64_t begin,
                                       int64_t end);

}  // namespace distflow

#endif  // DISTFLOW_CORE_GATHERED_TENSOR_H_
