// A CPU device of this process: its name, its resources (variables) and its
// intra-op threads.
#ifndef DISTFLOW_RUNTIME_DEVICE_H_
#define DISTFLOW_RUNTIME_DEVICE_H_

#include <string>

#include "base/thread_pool.h"
#include "kernels/op_kernel.h"
#include "kernels/resource_mgr.h"

namespace distflow {

class CpuDevice : public DeviceBase {
 public:
  // `name` is the full device name; `intra_op_pool` (not owned) must outlive
  // the device.
  CpuDevice(std::string name, ThreadPool* intra_op_pool)
      : name_(std::move(name)), intra_op_pool_(intra_op_pool) {}

  const std::string& name() const override { return name_; }
  ResourceMgr* resource_manager() override { return &resources_; }
  ThreadPool* intra_op_pool() override { return intra_op_pool_; }
  static constexpr char kDeviceType[] = "CPU";

 private:
  std::string name_;
  ThreadPool* intra_op_pool_;
  ResourceMgr resources_;
};

}  // namespace distflow

#endif  // DISTFLOW_RUNTIME_DEVICE_H_
