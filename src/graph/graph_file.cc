#include "graph/graph_file.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/file.h"
#include "base/status_macros.h"
#include "distflow/graph_file.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "graph/graph_def_io.h"

namespace distflow {
namespace {

// Keeps the text parser's first error, with its position, for the message.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!error_.empty()) return;
    // The parser counts lines and columns from 0; editors count from 1.
    error_ =
        absl::StrCat("line ", line + 1, ", column ", column + 1, ": ", message);
  }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

}  // namespace

bool IsTextGraphPath(const std::string& path) {
  return absl::EndsWith(path, ".pbtxt");
}

absl::Status WriteGraphDefFile(const proto::GraphDef& def,
                               const std::string& path) {
  std::string contents;
  const bool serialized =
      IsTextGraphPath(path)
          ? google::protobuf::TextFormat::PrintToString(def, &contents)
          : def.SerializeToString(&contents);
  if (!serialized) {
    return absl::InternalError(
        absl::StrCat("could not serialize the graph for ", path));
  }
  return WriteFileAtomically(path, contents);
}

absl::StatusOr<proto::GraphDef> ReadGraphDefFile(const std::string& path) {
  DF_ASSIGN_OR_RETURN(std::string contents, ReadFileToString(path));
  proto::GraphDef def;
  // A text GraphDef never parses as binary: its first byte ('n' of "node",
  // '#' or a blank) is a tag with an invalid wire type. So binary goes first
  // and text is the fallback, whatever the file is called.
  if (!def.ParseFromString(contents)) {
    def.Clear();
    FirstErrorCollector errors;
    google::protobuf::TextFormat::Parser parser;
    parser.RecordErrorsTo(&errors);
    if (!parser.ParseFromString(contents, &def)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path,
          " is not a GraphDef: not the binary protobuf form, and as text: ",
          errors.error().empty() ? "unreadable" : errors.error(),
          ". Save graphs with WriteGraphFile (distflow/graph_file.h)"));
    }
  }
  if (def.version() > kGraphDefVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " holds a GraphDef of version ", def.version(),
                     ", newer than this build reads (", kGraphDefVersion,
                     "): use a newer distflow"));
  }
  return def;
}

absl::Status WriteGraphFile(const Scope& scope, const std::string& path) {
  proto::GraphDef def;
  DF_RETURN_IF_ERROR(scope.ToGraphDef(&def));
  return WriteGraphDefFile(def, path);
}

}  // namespace distflow
