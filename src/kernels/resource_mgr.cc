#include "kernels/resource_mgr.h"

namespace distflow {

void ResourceMgr::Cleanup(const std::string& container) {
  absl::MutexLock lock(&mu_);
  absl::erase_if(resources_,
                 [&](const auto& kv) { return kv.first.first == container; });
}

void ResourceMgr::Clear() {
  absl::MutexLock lock(&mu_);
  resources_.clear();
}

}  // namespace distflow
