#include "distflow/replica_device_setter.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "graph/attr_value.h"
#include "graph/device_name.h"
#include "graph/graph.h"

namespace distflow {
namespace {

// What every copy of one setter shares: the parsed devices and the strategy's
// state. Scopes copy their device functions, so the state cannot live in the
// function object itself.
class Setter {
 public:
  Setter(int ps_tasks, const std::string& worker_device,
         const ReplicaDeviceSetterOptions& options)
      : ps_tasks_(ps_tasks),
        worker_raw_(worker_device),
        ps_raw_(options.ps_device),
        ps_ops_(options.ps_ops.begin(), options.ps_ops.end()),
        strategy_(options.strategy),
        custom_strategy_(options.custom_strategy),
        merge_devices_(options.merge_devices),
        loads_(std::max(ps_tasks, 0), 0) {
    auto worker = DeviceName::Parse(worker_device);
    worker_ok_ = worker.ok();
    if (worker_ok_) worker_ = *worker;
    auto ps = DeviceName::Parse(options.ps_device);
    ps_ok_ = ps.ok();
    if (ps_ok_) ps_ = *ps;
  }

  std::string Place(const Operation& op) {
    const std::string requested = op.device();
    if (!merge_devices_ && !requested.empty()) return requested;
    auto current = DeviceName::Parse(requested);
    // The scope has already validated what it requested; pass anything odd
    // through so that the scope reports it.
    if (!current.ok()) return requested;

    if (ps_tasks_ > 0 && ps_ops_.contains(op.type())) {
      // A bad ps_device comes back as is: the scope reports it, naming it.
      if (!ps_ok_) return ps_raw_;
      DeviceName ps = ps_;
      // Choose a task only when the op stays on the ps job: a state op
      // requested on another job is left there.
      if (ps.job && (!current->job || current->job == ps.job)) {
        ps.task = NextTask(op);
      }
      ps.MergeFrom(*current);
      return ps.ToString();
    }
    if (!worker_ok_) return worker_raw_;
    DeviceName worker = worker_;
    worker.MergeFrom(*current);
    return worker.ToString();
  }

 private:
  int NextTask(const Operation& op) {
    if (custom_strategy_) return custom_strategy_(op);
    absl::MutexLock lock(&mu_);
    if (strategy_ == PsStrategy::kRoundRobin) {
      const int task = next_;
      next_ = (next_ + 1) % ps_tasks_;
      return task;
    }
    const int task = static_cast<int>(
        std::min_element(loads_.begin(), loads_.end()) - loads_.begin());
    loads_[task] += StateOpByteSize(op);
    return task;
  }

  const int ps_tasks_;
  const std::string worker_raw_;
  const std::string ps_raw_;
  DeviceName worker_;
  DeviceName ps_;
  bool worker_ok_ = false;
  bool ps_ok_ = false;
  const absl::flat_hash_set<std::string> ps_ops_;
  const PsStrategy strategy_;
  const std::function<int(const Operation&)> custom_strategy_;
  const bool merge_devices_;

  absl::Mutex mu_;
  int next_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int64_t> loads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

int64_t StateOpByteSize(const Operation& op) {
  if (!op.valid()) return 0;
  const AttrMap& attrs = op.node()->attrs();
  DataType dtype = DataType::kInvalid;
  int64_t element_size = 1;
  if (GetAttr(attrs, "dtype", &dtype).ok() && DataTypeSize(dtype) > 0) {
    element_size = static_cast<int64_t>(DataTypeSize(dtype));
  }
  PartialTensorShape shape;
  int64_t elements = 1;
  if (GetAttr(attrs, "shape", &shape).ok() && !shape.unknown_rank()) {
    for (int64_t d : shape.dim_sizes()) elements *= d < 0 ? 1 : d;
  }
  return element_size * elements;
}

DeviceFunction ReplicaDeviceSetter(int ps_tasks,
                                   const std::string& worker_device,
                                   const ReplicaDeviceSetterOptions& options) {
  if (ps_tasks <= 0) {
    // No ps tasks: nothing to place, as TensorFlow's setter returns no
    // function at all then.
    return [](const Operation&) { return std::string(); };
  }
  auto setter = std::make_shared<Setter>(ps_tasks, worker_device, options);
  return [setter](const Operation& op) { return setter->Place(op); };
}

DeviceFunction ReplicaDeviceSetter(const ClusterSpec& cluster,
                                   const std::string& worker_device,
                                   const ReplicaDeviceSetterOptions& options) {
  auto ps = DeviceName::Parse(options.ps_device);
  const std::string ps_job = ps.ok() && ps->job ? *ps->job : "ps";
  // A malformed ps_device still needs a function that reports it.
  const int ps_tasks = ps.ok() ? cluster.num_tasks(ps_job)
                               : std::max(cluster.num_tasks(ps_job), 1);
  return ReplicaDeviceSetter(ps_tasks, worker_device, options);
}

DeviceFunction ReplicaDeviceSetter(const ClusterSpec& cluster,
                                   const std::string& worker_device,
                                   PsStrategy strategy) {
  ReplicaDeviceSetterOptions options;
  options.strategy = strategy;
  return ReplicaDeviceSetter(cluster, worker_device, options);
}

}  // namespace distflow
