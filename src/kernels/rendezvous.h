// The rendezvous: where a _Send kernel leaves a tensor and the matching _Recv
// kernel picks it up, on the same task or on another one.
//
// A key names one edge of one step ("send_device;recv_device;edge", see
// MakeRendezvousKey); every key is sent and received at most once per
// rendezvous. Implementations live in runtime/ (in-process) and distributed/
// (across tasks); kernels only see this interface. All methods are
// thread-safe.
#ifndef DISTFLOW_KERNELS_RENDEZVOUS_H_
#define DISTFLOW_KERNELS_RENDEZVOUS_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "distflow/tensor.h"

namespace distflow {

class Rendezvous {
 public:
  using SendCallback = std::function<void(const absl::Status&)>;
  // The value comes by value: a receiver that moves it on leaves the
  // rendezvous and the sender holding nothing, so that its buffer is freed
  // (or, for a tensor mapped from another task, given back) as soon as its
  // last consumer is done with it.
  using RecvCallback =
      std::function<void(const absl::Status& status, Tensor value)>;

  virtual ~Rendezvous() = default;

  // Hands `value` to the receiver of `key`. `done` runs exactly once (possibly
  // before SendAsync returns) when the value is in the receiving side's hands,
  // or with the error that prevented it.
  virtual void SendAsync(const std::string& key, Tensor value,
                         SendCallback done) = 0;
  // Calls `done` exactly once with the value sent under `key`, or with the
  // abort status.
  virtual void RecvAsync(const std::string& key, RecvCallback done) = 0;
  // Fails every pending and later receive with `status` (the first abort
  // wins).
  virtual void StartAbort(const absl::Status& status) = 0;
};

// "send_device;recv_device;edge_name".
inline std::string MakeRendezvousKey(absl::string_view send_device,
                                     absl::string_view recv_device,
                                     absl::string_view edge_name) {
  return absl::StrCat(send_device, ";", recv_device, ";", edge_name);
}

}  // namespace distflow

#endif  // DISTFLOW_KERNELS_RENDEZVOUS_H_
