#include "train/summary_writer.h"

#include <unistd.h>

#include <climits>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "train/tensorboard_graph.h"

namespace distflow {
namespace train {
namespace {

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') {
    return "localhost";
  }
  return name;
}

// A new record file named `base`, or `base`.1, `base`.2, ... if taken.
absl::StatusOr<std::unique_ptr<RecordWriter>> CreateUnique(
    const std::string& base) {
  constexpr int kMaxSuffix = 1000;
  for (int suffix = 0; suffix < kMaxSuffix; ++suffix) {
    auto file = RecordWriter::Create(
        suffix == 0 ? base : absl::StrCat(base, ".", suffix));
    if (!absl::IsAlreadyExists(file.status())) return file;
  }
  return absl::AlreadyExistsError(absl::StrCat("cannot create an event file: '",
                                               base, "' and ", kMaxSuffix - 1,
                                               " suffixed names are taken"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<SummaryWriter>> SummaryWriter::Create(
    const std::string& logdir) {
  if (logdir.empty()) {
    return absl::InvalidArgumentError(
        "SummaryWriter needs a log directory; got an empty path");
  }
  std::error_code error;
  std::filesystem::create_directories(logdir, error);
  if (error) {
    const std::string message =
        absl::StrCat("cannot create summary log directory '", logdir,
                     "': ", error.message());
    return error == std::errc::permission_denied
               ? absl::PermissionDeniedError(message)
               : absl::FailedPreconditionError(message);
  }
  const int64_t seconds = absl::ToUnixSeconds(absl::Now());
  DF_ASSIGN_OR_RETURN(std::unique_ptr<RecordWriter> file,
                      CreateUnique(absl::StrCat(logdir, "/events.out.tfevents.",
                                                seconds, ".", HostName())));
  auto writer = std::make_unique<EventFileWriter>(std::move(file));
  proto::Event version;
  version.set_file_version(kEventFileVersion);
  DF_RETURN_IF_ERROR(writer->WriteEvent(std::move(version)));
  // The file is a valid event file from the start.
  DF_RETURN_IF_ERROR(writer->Flush());
  return std::unique_ptr<SummaryWriter>(std::move(writer));
}

absl::Status EventFileWriter::WriteEvent(proto::Event event) {
  event.set_wall_time(absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()));
  absl::MutexLock lock(&mu_);
  return file_->Write(event.SerializeAsString());
}

absl::Status EventFileWriter::AddSummary(const Tensor& serialized_summary,
                                         int64_t step) {
  if (serialized_summary.dtype() != DataType::kString ||
      serialized_summary.NumElements() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AddSummary to '", path_,
        "' needs a string scalar holding a serialized Summary (the output of "
        "ScalarSummary or MergeSummary), got ",
        serialized_summary.TypeString()));
  }
  proto::Event event;
  event.set_step(step);
  if (!event.mutable_summary()->ParseFromString(
          serialized_summary.scalar<std::string>())) {
    return absl::InvalidArgumentError(
        absl::StrCat("AddSummary to '", path_,
                     "': the tensor's bytes are not a serialized Summary"));
  }
  return WriteEvent(std::move(event));
}

absl::Status EventFileWriter::AddScalar(const std::string& tag, double value,
                                        int64_t step) {
  proto::Event event;
  event.set_step(step);
  proto::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  return WriteEvent(std::move(event));
}

absl::Status EventFileWriter::AddGraph(const Scope& scope) {
  if (!scope.ok()) {
    return AddErrorContext(scope.status(),
                           absl::StrCat("cannot add the graph to '", path_,
                                        "': building it failed"));
  }
  proto::Event event;
  event.set_graph_def(ToTensorBoardGraph(*scope.graph()).SerializeAsString());
  return WriteEvent(std::move(event));
}

absl::Status EventFileWriter::Flush() {
  absl::MutexLock lock(&mu_);
  return file_->Flush();
}

}  // namespace train
}  // namespace distflow
