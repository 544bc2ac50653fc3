// Sessions: running graphs.
//
// A Session runs a graph given as a GraphDef, locally (target "") or on a
// cluster
// ("grpc://host:port", with the distributed runtime linked in). ClientSession
// is the convenient front end for graphs built with a Scope: it ships the graph
// to the session as it grows and takes Outputs and Operations instead of names.
#ifndef DISTFLOW_SESSION_H_
#define DISTFLOW_SESSION_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "distflow/scope.h"
#include "distflow/tensor.h"

namespace distflow {

namespace proto {
class GraphDef;
}

struct SessionOptions {
  // "" runs in this process; "grpc://host:port" runs on the cluster task at
  // that address.
  std::string target;
  // Threads that run independent ops of a step (0: one per core).
  int inter_op_threads = 0;
  // Threads one op may use, such as a large MatMul (0: one per core).
  int intra_op_threads = 0;
};

// A session. Thread-safe: Run may be called from several threads at once.
class Session {
 public:
  virtual ~Session() = default;

  // Adds the nodes of `graph` to the session's graph (the first call gives the
  // whole graph). Errors name the offending node; on error the session's graph
  // is unchanged for later runs.
  virtual absl::Status Extend(const proto::GraphDef& graph) = 0;

  // Feeds the named endpoints ("node:index"), runs what `fetches` (endpoints)
  // and `targets` (node names) need, and returns the fetched values in order.
  // INVALID_ARGUMENT naming the culprit for an unknown name or a feed of the
  // wrong dtype or shape; the first error of any op otherwise.
  //
  // Tensors cross without copies: a fetched value may share its buffer with a
  // variable, and a fed tensor may become a variable's value. Later updates
  // never change a tensor already returned (variables copy on write), but
  // writing into a returned or fed tensor may change the variable: take a
  // Copy() first if you mean to modify it.
  virtual absl::StatusOr<std::vector<Tensor>> Run(
      const std::vector<std::pair<std::string, Tensor>>& feeds,
      const std::vector<std::string>& fetches,
      const std::vector<std::string>& targets) = 0;

  // Releases the session's resources (its variables die with a local session).
  // Later calls to Run fail with FAILED_PRECONDITION. Idempotent.
  virtual absl::Status Close() = 0;
};

// A new session for `options.target`; INVALID_ARGUMENT naming the target if no
// registered runtime accepts it.
absl::StatusOr<std::unique_ptr<Session>> NewSession(
    const SessionOptions& options = {});

// A session bound to the graph of a Scope.
class ClientSession {
 public:
  using FeedDict = std::vector<std::pair<Output, Tensor>>;

  // Fails with the scope's error if building the graph failed.
  static absl::StatusOr<std::unique_ptr<ClientSession>> Create(
      const Scope& scope, const SessionOptions& options = {});

  // Fetches the values of `fetches`.
  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<Output>& fetches);
  // Feeds `feeds`, runs `targets` and returns the values of `fetches`.
  absl::StatusOr<std::vector<Tensor>> Run(
      const FeedDict& feeds, const std::vector<Output>& fetches,
      const std::vector<Operation>& targets = {});
  // Runs `targets` (such as an initializer or a training op) and fetches
  // nothing.
  absl::Status RunTargets(const std::vector<Operation>& targets);

  absl::Status Close() { return session_->Close(); }
  Session* session() const { return session_.get(); }

 private:
  ClientSession(Scope scope, std::unique_ptr<Session> session)
      : scope_(std::move(scope)), session_(std::move(session)) {}
  // Sends the nodes added to the graph since the last call.
  absl::Status ExtendIfGrown();

  Scope scope_;
  std::unique_ptr<Session> session_;
  absl::Mutex mu_;
  int nodes_sent_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace distflow

#endif  // DISTFLOW_SESSION_H_
