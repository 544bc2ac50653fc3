// Bytes -> a ClusterSpec from JSON (--cluster_spec, cluster files), then the
// proto round trip every task does when it serves the cluster.
#include <cstddef>
#include <cstdint>
#include <string>

#include "distflow/cluster.h"
#include "proto/cluster.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto spec = distflow::ClusterSpec::FromJson(text);
  if (!spec.ok()) return 0;
  distflow::proto::ClusterDef def;
  spec->ToProto(&def);
  auto back = distflow::ClusterSpec::FromProto(def);
  if (!back.ok()) __builtin_trap();
  (void)back->TaskDeviceNames();
  return 0;
}
