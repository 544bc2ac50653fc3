// Helpers shared by graph-layer tests.
#ifndef DISTFLOW_GRAPH_GRAPH_TEST_UTIL_H_
#define DISTFLOW_GRAPH_GRAPH_TEST_UTIL_H_

#include <string>
#include <vector>

#include "proto/graph.pb.h"

namespace distflow {
namespace test {

// A NodeDef of `op` named `name` with `inputs` ("node", "node:1", "^node").
inline proto::NodeDef MakeNode(const std::string& name, const std::string& op,
                               const std::vector<std::string>& inputs = {}) {
  proto::NodeDef def;
  def.set_name(name);
  def.set_op(op);
  for (const std::string& in : inputs) def.add_input(in);
  return def;
}

}  // namespace test
}  // namespace distflow

#endif  // DISTFLOW_GRAPH_GRAPH_TEST_UTIL_H_
