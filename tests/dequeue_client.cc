// A client that takes one item from a queue on the ps through another task's
// master, for the tests of what a client killed mid-step leaves behind:
//
//   dequeue_client --master=host:port
//
// The queue (shared name "items", float scalars) lives on /job:ps/task:0.
// The client prints "dequeuing" just before its step, which waits until an
// item comes, then "dequeued <value>".
#include <iostream>
#include <string>

#include "absl/strings/match.h"
#include "distflow/distflow.h"
#include "distflow/ops/data_flow_ops.h"

namespace df = distflow;

int main(int argc, char** argv) {
  std::string master;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (absl::StartsWith(arg, "--master=")) {
      master = arg.substr(sizeof("--master=") - 1);
    } else {
      std::cerr << "dequeue_client: unknown flag '" << arg
                << "'; usage: dequeue_client --master=host:port\n";
      return 2;
    }
  }
  if (master.empty()) {
    std::cerr << "dequeue_client: --master=host:port is required\n";
    return 2;
  }
  df::Scope root = df::Scope::NewRootScope();
  df::Output queue = df::ops::FIFOQueue(
      root.WithDevice("/job:ps/task:0").WithOpName("queue"),
      df::DataType::kFloat, df::PartialTensorShape({}), "items");
  df::Output item = df::ops::QueueDequeue(root.WithOpName("dequeue"), queue);
  df::SessionOptions options;
  options.target = "grpc://" + master;
  auto session = df::ClientSession::Create(root, options);
  if (!session.ok()) {
    std::cerr << "dequeue_client: " << session.status() << "\n";
    return 1;
  }
  std::cout << "dequeuing" << std::endl;
  auto out = (*session)->Run({item});
  if (!out.ok()) {
    std::cerr << "dequeue_client: " << out.status() << "\n";
    return 1;
  }
  std::cout << "dequeued " << (*out)[0].scalar<float>() << std::endl;
  return 0;
}
