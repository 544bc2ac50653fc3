// Per-device registry of resources: state that outlives a step, such as
// variables.
#ifndef DISTFLOW_KERNELS_RESOURCE_MGR_H_
#define DISTFLOW_KERNELS_RESOURCE_MGR_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace distflow {

class ResourceBase {
 public:
  virtual ~ResourceBase() = default;
  // A short description for error messages and debugging.
  virtual std::string DebugString() const = 0;
};

// Resources by (container, name). Shared ownership: a kernel holding a resource
// keeps it alive even if the container is cleared meanwhile. Thread-safe.
class ResourceMgr {
 public:
  // The resource, NOT_FOUND if absent, INVALID_ARGUMENT if it is of another
  // type.
  template <typename T>
  absl::StatusOr<std::shared_ptr<T>> Lookup(const std::string& container,
                                            const std::string& name) const;
  // The resource, created with `create()` if absent.
  template <typename T>
  absl::StatusOr<std::shared_ptr<T>> LookupOrCreate(
      const std::string& container, const std::string& name,
      const std::function<std::shared_ptr<T>()>& create);
  // Drops every resource of `container`.
  void Cleanup(const std::string& container);
  // Drops everything.
  void Clear();

 private:
  using Key = std::pair<std::string, std::string>;
  template <typename T>
  static absl::StatusOr<std::shared_ptr<T>> Cast(
      const Key& key, const std::shared_ptr<ResourceBase>& r);

  mutable absl::Mutex mu_;
  absl::flat_hash_map<Key, std::shared_ptr<ResourceBase>> resources_
      ABSL_GUARDED_BY(mu_);
};

template <typename T>
absl::StatusOr<std::shared_ptr<T>> ResourceMgr::Cast(
    const Key& key, const std::shared_ptr<ResourceBase>& r) {
  auto typed = std::dynamic_pointer_cast<T>(r);
  if (typed == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("resource '", key.second, "' in container '", key.first,
                     "' is ", r->DebugString(), ", not the kind requested"));
  }
  return typed;
}

template <typename T>
absl::StatusOr<std::shared_ptr<T>> ResourceMgr::Lookup(
    const std::string& container, const std::string& name) const {
  absl::MutexLock lock(&mu_);
  Key key(container, name);
  auto it = resources_.find(key);
  if (it == resources_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "resource '", name, "' does not exist in container '", container, "'"));
  }
  return Cast<T>(key, it->second);
}

template <typename T>
absl::StatusOr<std::shared_ptr<T>> ResourceMgr::LookupOrCreate(
    const std::string& container, const std::string& name,
    const std::function<std::shared_ptr<T>()>& create) {
  absl::MutexLock lock(&mu_);
  Key key(container, name);
  auto it = resources_.find(key);
  if (it == resources_.end()) {
    it = resources_.emplace(key, create()).first;
  }
  return Cast<T>(key, it->second);
}

}  // namespace distflow

#endif  // DISTFLOW_KERNELS_RESOURCE_MGR_H_
