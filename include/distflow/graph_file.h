// Saving a graph to a file, for `distflow graph FILE` and other tools.
//
//   DF_RETURN_IF_ERROR(distflow::WriteGraphFile(root, "/tmp/model.pb"));
//
// The file holds a GraphDef (proto/graph.proto, see docs/formats.md): every
// node with its op, inputs, requested device and attributes.
#ifndef DISTFLOW_GRAPH_FILE_H_
#define DISTFLOW_GRAPH_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "distflow/scope.h"

namespace distflow {

// Writes the graph of `scope` to `path`: in protobuf's text format if the path
// ends in ".pbtxt", else in its binary format. The file appears whole or not
// at all (a temporary name, then a rename). The scope's error if building the
// graph failed; an error naming the file if it cannot be written.
absl::Status WriteGraphFile(const Scope& scope, const std::string& path);

}  // namespace distflow

#endif  // DISTFLOW_GRAPH_FILE_H_
