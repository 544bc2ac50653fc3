// Seed 000's product x . w = [[20]], run twice by a program built against an
// installed distflow: in this process, and through a one-task cluster's gRPC
// server (which needs the "grpc://" runtime linked in by distflow::distflow).
// It also reads the graph as a GraphDef, which needs the installed generated
// headers.
#include <cstdint>
#include <iostream>

#include "distflow/distflow.h"
#include "proto/graph.pb.h"

namespace df = distflow;

namespace {

absl::StatusOr<df::Tensor> RunProduct(const df::SessionOptions& options) {
  df::Scope root = df::Scope::NewRootScope();
  df::ops::Variable x(root.WithOpName("x"),
                      df::Tensor::Matrix<int32_t>({{1, 2, 3, 4}}));
  df::ops::Variable w(root.WithOpName("w"),
                      df::Tensor::Matrix<int32_t>({{2}, {2}, {2}, {2}}));
  df::Output product = df::ops::MatMul(root.WithOpName("product"), x, w);
  df::Operation init = df::ops::GlobalVariablesInitializer(root);

  df::proto::GraphDef graph;
  if (absl::Status s = root.ToGraphDef(&graph); !s.ok()) return s;
  if (graph.node_size() == 0) {
    return absl::InternalError("the GraphDef of the product has no nodes");
  }

  auto session = df::ClientSession::Create(root, options);
  if (!session.ok()) return session.status();
  if (absl::Status s = (*session)->RunTargets({init}); !s.ok()) return s;
  auto out = (*session)->Run({product});
  if (!out.ok()) return out.status();
  return (*out)[0];
}

}  // namespace

int main() {
  auto local = RunProduct({});
  if (!local.ok()) {
    std::cerr << "local session: " << local.status() << "\n";
    return 1;
  }
  std::cout << "local: " << local->DebugString() << "\n";

  auto cluster = df::ClusterSpec::Create({{"worker", {"localhost:0"}}});
  if (!cluster.ok()) {
    std::cerr << "cluster: " << cluster.status() << "\n";
    return 1;
  }
  auto server = df::Server::Create(*cluster, "worker", 0);
  if (!server.ok()) {
    std::cerr << "server: " << server.status() << "\n";
    return 1;
  }
  df::SessionOptions options;
  options.target = (*server)->target();
  auto remote = RunProduct(options);
  if (!remote.ok()) {
    std::cerr << "session on " << options.target << ": " << remote.status()
              << "\n";
    return 1;
  }
  std::cout << "grpc: " << remote->DebugString() << "\n";
  return (*server)->Stop().ok() ? 0 : 1;
}
