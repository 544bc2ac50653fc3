// A session that runs the whole graph in this process, on one CPU device.
#ifndef DISTFLOW_RUNTIME_LOCAL_SESSION_H_
#define DISTFLOW_RUNTIME_LOCAL_SESSION_H_

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "base/thread_pool.h"
#include "distflow/session.h"
#include "graph/graph.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "runtime/session_factory.h"

namespace distflow {

// Every node runs on this process's CPU device, whatever device it requested: a
// local session ignores job and task names (a malformed device name is still an
// error).
class LocalSession : public Session {
 public:
  explicit LocalSession(const SessionOptions& options);
  ~LocalSession() override;

  absl::Status Extend(const proto::GraphDef& graph) override;
  absl::StatusOr<std::vector<Tensor>> Run(
      const std::vector<std::pair<std::string, Tensor>>& feeds,
      const std::vector<std::string>& fetches,
      const std::vector<std::string>& targets) override;
  absl::Status Close() override;

  static constexpr char kDeviceName[] =
      "/job:localhost/replica:0/task:0/device:CPU:0";

 private:
  // The executor for one combination of feeds, fetches and targets, built on
  // first use.
  absl::StatusOr<std::shared_ptr<Executor>> GetExecutor(
      const std::vector<std::pair<std::string, Tensor>>& feeds,
      const std::vector<std::string>& fetches,
      const std::vector<std::string>& targets);
  // INVALID_ARGUMENT naming the feed if a value's dtype or shape does not fit
  // its endpoint.
  absl::Status CheckFeeds(
      const std::vector<std::pair<std::string, Tensor>>& feeds)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  ThreadPool inter_op_pool_;
  ThreadPool intra_op_pool_;
  CpuDevice device_;
  std::atomic<int64_t> next_step_id_{1};

  absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  Graph graph_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<Executor>> executors_
      ABSL_GUARDED_BY(mu_);
};

class LocalSessionFactory : public SessionFactory {
 public:
  bool AcceptsTarget(const std::string& target) const override {
    return target.empty();
  }
  absl::StatusOr<std::unique_ptr<Session>> NewSession(
      const SessionOptions& options) override {
    return std::unique_ptr<Session>(new LocalSession(options));
  }
};

}  // namespace distflow

#endif  // DISTFLOW_RUNTIME_LOCAL_SESSION_H_
