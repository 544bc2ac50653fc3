#include "base/status_macros.h"
#include "distflow/session.h"
#include "graph/graph.h"
#include "proto/graph.pb.h"

namespace distflow {

absl::StatusOr<std::unique_ptr<ClientSession>> ClientSession::Create(
    const Scope& scope, const SessionOptions& options) {
  DF_RETURN_IF_ERROR(scope.status());
  DF_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(options));
  std::unique_ptr<ClientSession> client(
      new ClientSession(scope, std::move(session)));
  DF_RETURN_IF_ERROR(client->ExtendIfGrown());
  return client;
}

absl::Status ClientSession::ExtendIfGrown() {
  DF_RETURN_IF_ERROR(scope_.status());
  absl::MutexLock lock(&mu_);
  const Graph& graph = *scope_.graph();
  if (graph.num_nodes() == nodes_sent_) return absl::OkStatus();
  proto::GraphDef delta;
  graph.ToGraphDefSince(nodes_sent_, &delta);
  DF_RETURN_IF_ERROR(session_->Extend(delta));
  nodes_sent_ = graph.num_nodes();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> ClientSession::Run(
    const std::vector<Output>& fetches) {
  return Run(FeedDict{}, fetches, {});
}

absl::Status ClientSession::RunTargets(const std::vector<Operation>& targets) {
  return Run(FeedDict{}, {}, targets).status();
}

absl::StatusOr<std::vector<Tensor>> ClientSession::Run(
    const FeedDict& feeds, const std::vector<Output>& fetches,
    const std::vector<Operation>& targets) {
  DF_RETURN_IF_ERROR(ExtendIfGrown());
  std::vector<std::pair<std::string, Tensor>> feed_names;
  std::vector<std::string> fetch_names, target_names;
  for (const auto& [output, value] : feeds) {
    if (!output.valid())
      return absl::InvalidArgumentError("a feed names an invalid Output");
    feed_names.emplace_back(output.name(), value);
  }
  for (const Output& output : fetches) {
    if (!output.valid())
      return absl::InvalidArgumentError("a fetch is an invalid Output");
    fetch_names.push_back(output.name());
  }
  for (const Operation& op : targets) {
    if (!op.valid())
      return absl::InvalidArgumentError("a target is an invalid Operation");
    target_names.push_back(op.name());
  }
  return session_->Run(feed_names, fetch_names, target_names);
}

}  // namespace distflow
