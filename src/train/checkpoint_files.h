// The files of a checkpoint besides its shards: the names of the files, the
// index (<prefix>.index.json) and the directory's `checkpoint` file. See
// docs/formats.md.
#ifndef DISTFLOW_TRAIN_CHECKPOINT_FILES_H_
#define DISTFLOW_TRAIN_CHECKPOINT_FILES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distflow/tensor_shape.h"
#include "distflow/types.h"

namespace distflow {
namespace train {

// The index format version this build writes and the newest it reads.
inline constexpr int kCheckpointIndexVersion = 1;

// "<prefix_name>.shard-00001-of-00003.safetensors": shard 1 of 3.
std::string ShardFileName(const std::string& prefix_name, int shard,
                          int num_shards);
// "<prefix>.index.json"
std::string IndexPath(const std::string& prefix);

// What <prefix>.index.json records: the global step, the shard files (names
// relative to the index's directory) and, for each tensor, its shard, dtype
// and shape.
struct CheckpointIndex {
  struct Tensor {
    int shard = 0;
    DataType dtype = DataType::kInvalid;
    TensorShape shape;
  };
  int64_t global_step = 0;
  std::vector<std::string> shards;
  std::map<std::string, Tensor> tensors;
};

absl::Status WriteCheckpointIndex(const std::string& path,
                                  const CheckpointIndex& index);
// NOT_FOUND if `path` does not exist; DATA_LOSS naming the file and the field
// for a malformed index; FAILED_PRECONDITION for one from a newer distflow.
absl::StatusOr<CheckpointIndex> ReadCheckpointIndex(const std::string& path);

// The `checkpoint` file of a directory: the kept checkpoints, oldest first,
// the last being the latest (prefixes relative to the directory).
struct CheckpointState {
  std::vector<std::string> prefixes;
};

// "<dir>/checkpoint"
std::string CheckpointStatePath(const std::string& dir);
absl::Status WriteCheckpointState(const std::string& dir,
                                  const CheckpointState& state);
// NOT_FOUND if the directory has no `checkpoint` file; DATA_LOSS naming it if
// it is malformed.
absl::StatusOr<CheckpointState> ReadCheckpointState(const std::string& dir);

// Removes every file of checkpoint `prefix_name` in `dir` (its index, its
// shards and temporary files of either); the first error names the file.
absl::Status DeleteCheckpointFiles(const std::string& dir,
                                   const std::string& prefix_name);

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_CHECKPOINT_FILES_H_
