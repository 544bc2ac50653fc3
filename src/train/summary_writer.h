// The SummaryWriter of distflow/train/summary.h: Event protos
// (proto/summary.proto), one per record of a TFRecord file.
#ifndef DISTFLOW_TRAIN_SUMMARY_WRITER_H_
#define DISTFLOW_TRAIN_SUMMARY_WRITER_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "distflow/train/summary.h"
#include "proto/summary.pb.h"
#include "train/record_writer.h"

namespace distflow {
namespace train {

// The version string of the first event of every event file.
inline constexpr char kEventFileVersion[] = "brain.Event:2";

class EventFileWriter : public SummaryWriter {
 public:
  explicit EventFileWriter(std::unique_ptr<RecordWriter> file)
      : path_(file->path()), file_(std::move(file)) {}

  absl::Status AddSummary(const Tensor& serialized_summary,
                          int64_t step) override;
  absl::Status AddScalar(const std::string& tag, double value,
                         int64_t step) override;
  absl::Status AddGraph(const Scope& scope) override;
  absl::Status Flush() override;
  const std::string& path() const override { return path_; }

  // Stamps `event` with the current time and appends it.
  absl::Status WriteEvent(proto::Event event);

 private:
  const std::string path_;
  absl::Mutex mu_;
  const std::unique_ptr<RecordWriter> file_ ABSL_PT_GUARDED_BY(mu_);
};

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_SUMMARY_WRITER_H_
