// GraphDef files: binary or text protobuf, as WriteGraphFile
// (include/distflow/graph_file.h) writes them.
#ifndef DISTFLOW_GRAPH_GRAPH_FILE_H_
#define DISTFLOW_GRAPH_GRAPH_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/graph.pb.h"

namespace distflow {

// True for paths written in the text format (ending in ".pbtxt").
bool IsTextGraphPath(const std::string& path);

// Writes `def` to `path` (text format for IsTextGraphPath) atomically.
absl::Status WriteGraphDefFile(const proto::GraphDef& def,
                               const std::string& path);

// Reads a GraphDef in either format, whatever the file's name: binary first,
// then text. NOT_FOUND if `path` does not exist; INVALID_ARGUMENT naming the
// file if it is neither form of a GraphDef (with the text parser's line and
// column); FAILED_PRECONDITION naming the file and both versions if its
// version is newer than this build reads.
absl::StatusOr<proto::GraphDef> ReadGraphDefFile(const std::string& path);

}  // namespace distflow

#endif  // DISTFLOW_GRAPH_GRAPH_FILE_H_
