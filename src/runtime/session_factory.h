// Runtimes that sessions can be created on, chosen by the session target.
#ifndef DISTFLOW_RUNTIME_SESSION_FACTORY_H_
#define DISTFLOW_RUNTIME_SESSION_FACTORY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "distflow/session.h"

namespace distflow {

class SessionFactory {
 public:
  virtual ~SessionFactory() = default;
  // True if this factory serves `target` (such as "" or "grpc://host:port").
  virtual bool AcceptsTarget(const std::string& target) const = 0;
  virtual absl::StatusOr<std::unique_ptr<Session>> NewSession(
      const SessionOptions& options) = 0;
};

// Adds a factory under `name` ("local", "grpc"). A second factory of the same
// name replaces the first. Thread-safe. The local runtime is always registered.
void RegisterSessionFactory(const std::string& name,
                            std::unique_ptr<SessionFactory> factory);

}  // namespace distflow

#endif  // DISTFLOW_RUNTIME_SESSION_FACTORY_H_
