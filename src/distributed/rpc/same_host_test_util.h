// What the same-host tests share: an offer of a tensor of this process, as a
// task of the same host sends it.
#ifndef DISTFLOW_DISTRIBUTED_RPC_SAME_HOST_TEST_UTIL_H_
#define DISTFLOW_DISTRIBUTED_RPC_SAME_HOST_TEST_UTIL_H_

#include <unistd.h>

#include <cstdint>

#include "distflow/tensor.h"
#include "distributed/rpc/same_host.h"
#include "proto/worker.pb.h"

namespace distflow {

// A push header offering `value` (int32) of step 1, key "k", by address.
inline proto::PushTensorHeader Offer(const Tensor& value) {
  proto::PushTensorHeader header;
  header.set_step_id(1);
  header.set_key("k");
  header.set_dtype(proto::DT_INT32);
  header.mutable_shape()->add_dim(value.NumElements());
  header.set_total_bytes(static_cast<int64_t>(value.TotalBytes()));
  header.mutable_same_host()->set_host_id(SameHostIdentity());
  header.mutable_same_host()->set_pid(getpid());
  header.mutable_same_host()->set_address(
      reinterpret_cast<uint64_t>(value.raw_data()));
  return header;
}

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_SAME_HOST_TEST_UTIL_H_
