// Summaries for TensorBoard: event files of scalars (such as the loss and the
// accuracy, from ops::ScalarSummary) and of the graph.
//
// A SummaryWriter appends to one event file,
// <logdir>/events.out.tfevents.<seconds>.<hostname>, in the format TensorBoard
// reads (`tensorboard --logdir <logdir>`; see docs/formats.md). In a cluster
// only the chief writes summaries.
#ifndef DISTFLOW_TRAIN_SUMMARY_H_
#define DISTFLOW_TRAIN_SUMMARY_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distflow/scope.h"
#include "distflow/tensor.h"

namespace distflow {
namespace train {

// Events are buffered and reach the file on Flush() and when the writer is
// destroyed: call Flush() after each batch of events (such as every summary
// step), so that a job that is killed leaves a file of complete, readable
// events. Errors name the event file. Thread-safe.
class SummaryWriter {
 public:
  // Opens a new event file in `logdir` (created with its parents if missing)
  // and writes the file_version event "brain.Event:2" first. If a file of that
  // name exists (two writers started in the same second), a suffix ".1", ".2",
  // ... keeps them apart. An error names the directory or the file and the
  // system's reason (such as "Permission denied").
  static absl::StatusOr<std::unique_ptr<SummaryWriter>> Create(
      const std::string& logdir);
  // Flushes and closes the file.
  virtual ~SummaryWriter() = default;

  // Adds the values of a serialized Summary, as produced by
  // ops::ScalarSummary or ops::MergeSummary (a string scalar), at `step`.
  // INVALID_ARGUMENT for another kind of tensor or bytes that are not a
  // Summary.
  virtual absl::Status AddSummary(const Tensor& serialized_summary,
                                  int64_t step) = 0;
  // Adds the scalar `value` of series `tag` (stored as a float32) at `step`.
  virtual absl::Status AddScalar(const std::string& tag, double value,
                                 int64_t step) = 0;
  // Adds the graph of `scope`: every op with its inputs, device and
  // attributes, for TensorBoard's graph view. The scope's error if building
  // the graph failed.
  virtual absl::Status AddGraph(const Scope& scope) = 0;
  // Writes the events added so far to the file and syncs it to the disk.
  virtual absl::Status Flush() = 0;

  // The event file's path.
  virtual const std::string& path() const = 0;
};

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_SUMMARY_H_
