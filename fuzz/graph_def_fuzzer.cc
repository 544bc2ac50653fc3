// Bytes -> GraphDef -> Graph -> kernels: what a worker does on RegisterGraph
// (and a session on Extend): import with type and shape inference, then the
// construction of every node's kernel, as Executor::Create does. Any GraphDef
// must be refused with an error, never crash the task or make it allocate
// without bound.
#include <cstddef>
#include <cstdint>

#include "graph/graph.h"
#include "graph/graph_def_io.h"
#include "kernels/kernel_registry.h"
#include "proto/graph.pb.h"
#include "runtime/device.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  distflow::proto::GraphDef def;
  if (!def.ParseFromArray(data, static_cast<int>(size))) return 0;
  distflow::Graph graph;
  if (!distflow::ImportGraphDef(def, &graph).ok()) return 0;
  static const char kDevice[] = "/job:worker/replica:0/task:0/device:CPU:0";
  distflow::CpuDevice device(kDevice, /*intra_op_pool=*/nullptr);
  for (const auto& node : graph.nodes()) {
    node->set_assigned_device(kDevice);
    (void)distflow::KernelRegistry::Global()->CreateKernel(
        *node, &device, distflow::CpuDevice::kDeviceType);
  }
  return 0;
}
