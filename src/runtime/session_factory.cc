#include "runtime/session_factory.h"

#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "runtime/local_session.h"

namespace distflow {
namespace {

struct Registry {
  absl::Mutex mu;
  std::map<std::string, std::shared_ptr<SessionFactory>> factories
      ABSL_GUARDED_BY(mu);
};

Registry& GetRegistry() {
  static Registry* registry = [] {
    auto* r = new Registry();
    absl::MutexLock lock(&r->mu);
    r->factories["local"] = std::make_shared<LocalSessionFactory>();
    return r;
  }();
  return *registry;
}

}  // namespace

void RegisterSessionFactory(const std::string& name,
                            std::unique_ptr<SessionFactory> factory) {
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  r.factories[name] = std::move(factory);
}

absl::StatusOr<std::unique_ptr<Session>> NewSession(
    const SessionOptions& options) {
  Registry& r = GetRegistry();
  std::shared_ptr<SessionFactory> chosen;
  std::vector<std::string> names;
  {
    absl::MutexLock lock(&r.mu);
    for (const auto& [name, factory] : r.factories) {
      names.push_back(name);
      if (factory->AcceptsTarget(options.target)) {
        chosen = factory;
        break;
      }
    }
  }
  if (chosen == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("no runtime accepts session target '", options.target,
                     "' (registered: ", absl::StrJoin(names, ", "),
                     "); use \"\" for a local session, or link the distributed "
                     "runtime for grpc://host:port"));
  }
  return chosen->NewSession(options);
}

}  // namespace distflow
