// Op constructors for summaries: values recorded for TensorBoard. Each adds a
// node to the scope's graph and returns its output; errors are recorded in the
// scope (see distflow/scope.h). A summary is a string scalar holding a
// serialized Summary protocol buffer (proto/summary.proto), which
// train::SummaryWriter::AddSummary writes to an event file.
#ifndef DISTFLOW_OPS_SUMMARY_OPS_H_
#define DISTFLOW_OPS_SUMMARY_OPS_H_

#include <vector>

#include "distflow/scope.h"

namespace distflow {
namespace ops {

// A summary holding one scalar: `value` (a scalar of float32, float64, int32,
// int64 or uint8, stored as a float32) under `tag` (a string scalar, such as
// "loss"). A value that is not a scalar is INVALID_ARGUMENT naming the op and
// the shape, when the graph is built if the shape is known, else when it runs.
Output ScalarSummary(const Scope& scope, const Input& tag, const Input& value);

// One summary holding every value of `summaries` (outputs of ScalarSummary or
// MergeSummary), in order. Running it fails with INVALID_ARGUMENT if two
// values share a tag or an input is not a serialized Summary.
Output MergeSummary(const Scope& scope, const std::vector<Input>& summaries);

}  // namespace ops
}  // namespace distflow

#endif  // DISTFLOW_OPS_SUMMARY_OPS_H_
