#include "runtime/local_session.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/mutex_checks.h"
#include "base/status_macros.h"
#include "base/step_trace.h"
#include "graph/device_name.h"
#include "graph/graph_def_io.h"
#include "graph/subgraph.h"
#include "proto/graph.pb.h"
#include "runtime/call_frame.h"

namespace distflow {
namespace {

int ThreadsOr(int requested) {
  return requested > 0 ? requested : ThreadPool::HardwareThreads();
}

}  // namespace

LocalSession::LocalSession(const SessionOptions& options)
    : inter_op_pool_("inter_op", ThreadsOr(options.inter_op_threads)),
      intra_op_pool_("intra_op", ThreadsOr(options.intra_op_threads)),
      device_(kDeviceName, &intra_op_pool_) {
  // As a server does: no lock-order bookkeeping on every lock of a step.
  DisableMutexDeadlockDetection();
}

LocalSession::~LocalSession() { (void)Close(); }

absl::Status LocalSession::Extend(const proto::GraphDef& graph) {
  absl::MutexLock lock(&mu_);
  if (closed_)
    return absl::FailedPreconditionError("Extend on a closed session");
  for (const proto::NodeDef& node : graph.node()) {
    auto device = DeviceName::Parse(node.device());
    if (!device.ok()) {
      return AddErrorContext(device.status(),
                             absl::StrCat(node.op(), " '", node.name(), "'"));
    }
  }
  const int first_new = graph_.num_nodes();
  if (absl::Status s = ImportGraphDef(graph, &graph_); !s.ok()) {
    // A bad GraphDef leaves the session's graph as it was.
    graph_.TruncateTo(first_new);
    return s;
  }
  for (int i = first_new; i < graph_.num_nodes(); ++i) {
    graph_.nodes()[i]->set_assigned_device(kDeviceName);
  }
  return absl::OkStatus();
}

absl::Status LocalSession::Close() {
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::OkStatus();
  closed_ = true;
  executors_.clear();
  device_.resource_manager()->Clear();
  return absl::OkStatus();
}

absl::Status LocalSession::CheckFeeds(
    const std::vector<std::pair<std::string, Tensor>>& feeds) {
  for (const auto& [name, value] : feeds) {
    auto endpoint = FindEndpoint(graph_, name);
    if (!endpoint.ok()) return AddErrorContext(endpoint.status(), "feed");
    const DataType want = endpoint->node->output_type(endpoint->index);
    const PartialTensorShape& shape =
        endpoint->node->output_shape(endpoint->index);
    if (!value.IsInitialized()) {
      return absl::InvalidArgumentError(
          absl::StrCat("feed '", name, "' has an uninitialized tensor"));
    }
    if (value.dtype() != want || !shape.IsCompatibleWith(value.shape())) {
      return absl::InvalidArgumentError(
          absl::StrCat("feed '", name, "' is ", value.TypeString(), " but ",
                       endpoint->node->DebugName(), " produces ",
                       DataTypeName(want), shape.DebugString()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Executor>> LocalSession::GetExecutor(
    const std::vector<std::pair<std::string, Tensor>>& feeds,
    const std::vector<std::string>& fetches,
    const std::vector<std::string>& targets) {
  CallSignature signature;
  for (const auto& feed : feeds) signature.feeds.push_back(feed.first);
  signature.fetches = fetches;
  signature.targets = targets;
  const std::string key = absl::StrCat(absl::StrJoin(signature.feeds, ","), "|",
                                       absl::StrJoin(fetches, ","), "|",
                                       absl::StrJoin(targets, ","));
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::FailedPreconditionError("Run on a closed session");
  DF_RETURN_IF_ERROR(CheckFeeds(feeds));
  auto it = executors_.find(key);
  if (it != executors_.end()) return it->second;
  DF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> call_graph,
                      BuildCallGraph(graph_, signature));
  Executor::Options options;
  options.device = &device_;
  DF_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                      Executor::Create(std::move(call_graph), options));
  std::shared_ptr<Executor> shared = std::move(executor);
  executors_.emplace(key, shared);
  return shared;
}

absl::StatusOr<std::vector<Tensor>> LocalSession::Run(
    const std::vector<std::pair<std::string, Tensor>>& feeds,
    const std::vector<std::string>& fetches,
    const std::vector<std::string>& targets) {
  DF_ASSIGN_OR_RETURN(std::shared_ptr<Executor> executor,
                      GetExecutor(feeds, fetches, targets));
  std::vector<Tensor> args;
  args.reserve(feeds.size());
  for (const auto& feed : feeds) args.push_back(feed.second);
  RunCallFrame frame(std::move(args), static_cast<int>(fetches.size()));
  Executor::RunArgs run_args;
  run_args.call_frame = &frame;
  run_args.step_id = next_step_id_.fetch_add(1);
  run_args.runner = &inter_op_pool_;
  {
    trace::ScopedSpan step("step", "step");
    DF_RETURN_IF_ERROR(executor->Run(run_args));
  }
  std::vector<Tensor> outputs = frame.TakeRetvals();
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].IsInitialized()) {
      return absl::InternalError(
          absl::StrCat("fetch '", fetches[i], "' produced no value"));
    }
  }
  return outputs;
}

}  // namespace distflow
