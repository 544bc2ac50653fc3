// Seed 000's graph, run in one process: x = [[1, 2, 3, 4]], w = [[2], [2], [2],
// [2]], product = x . w = [[20]].
//
// The distributed version of this program (one ps task holding the variables,
// one worker running the product) comes with the distributed runtime; the graph
// is the same.
#include <cstdint>
#include <iostream>

#include "distflow/distflow.h"

namespace df = distflow;

int main() {
  df::Scope root = df::Scope::NewRootScope();
  df::ops::Variable x(root.WithOpName("x"),
                      df::Tensor::Matrix<int32_t>({{1, 2, 3, 4}}));
  df::ops::Variable w(root.WithOpName("w"),
                      df::Tensor::Matrix<int32_t>({{2}, {2}, {2}, {2}}));
  df::Output product = df::ops::MatMul(root.WithOpName("product"), x, w);
  df::Operation init = df::ops::GlobalVariablesInitializer(root);

  auto session = df::ClientSession::Create(root);
  if (!session.ok()) {
    std::cerr << "error: " << session.status() << "\n";
    return 1;
  }
  if (absl::Status s = (*session)->RunTargets({init}); !s.ok()) {
    std::cerr << "error: " << s << "\n";
    return 1;
  }
  auto out = (*session)->Run({product});
  if (!out.ok()) {
    std::cerr << "error: " << out.status() << "\n";
    return 1;
  }
  std::cout << (*out)[0].DebugString() << "\n";
  return 0;
}
