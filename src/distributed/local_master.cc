#include "distributed/local_master.h"

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace distflow {
namespace {

struct Registry {
  absl::Mutex mu;
  absl::flat_hash_map<std::string, std::weak_ptr<Master>> masters
      ABSL_GUARDED_BY(mu);
};

Registry& GetRegistry() {
  static Registry* registry = new Registry();
  return *registry;
}

}  // namespace

void RegisterLocalMaster(const std::string& target,
                         std::weak_ptr<Master> master) {
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  r.masters[target] = std::move(master);
}

void UnregisterLocalMaster(const std::string& target) {
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  r.masters.erase(target);
}

std::shared_ptr<Master> FindLocalMaster(const std::string& target) {
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  auto it = r.masters.find(target);
  return it == r.masters.end() ? nullptr : it->second.lock();
}

}  // namespace distflow
