// The files of a checkpoint besides its shards: the names of the files, the
// index (<prefix>.index.json) and the directory's `checkpoint` file. See
// docs/formats.md.
#ifndef DISTFLOW_TRAIN_CHECKPOINT_FILES_H_
#define DISTFLOW_TRAIN_CHECKPOINT_FILES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "distflow/tensor_shape.h"
#include "distflow/types.h"

namespace distflow {
namespace train {

// The index format version this build writes and the newest it reads.
inline constexpr int kCheckpointIndexVersion = 1;

// "<prefix_name>.shard-00001-of-00003.safetensors": shard 1 of 3. A non-empty
// `tag` gives "<prefix_name>.shard-00001-of-00003.<tag>.safetensors", the
// names of a save of a step whose checkpoint exists, which must not replace
// that checkpoint's files before the new one is complete.
std::string ShardFileName(const std::string& prefix_name, int shard,
                          int num_shards, const std::string& tag = "");
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
// for a malformed index (or one over kMaxCheckpointIndexBytes);
// FAILED_PRECONDITION for one from a newer distflow.
absl::StatusOr<CheckpointIndex> ReadCheckpointIndex(const std::string& path);
// The index in `text`, as ReadCheckpointIndex reads it; errors name `path`.
absl::StatusOr<CheckpointIndex> ParseCheckpointIndex(absl::string_view text,
                                                     const std::string& path);
// Far beyond any real index (about 100 bytes a tensor) or state file: a
// larger file is damaged, and is refused before it is read into memory.
inline constexpr uint64_t kMaxCheckpointIndexBytes = uint64_t{256} << 20;
inline constexpr uint64_t kMaxCheckpointStateBytes = uint64_t{16} << 20;

// The `checkpoint` file of a directory: the kept checkpoints, oldest first,
// the last being the latest (prefixes relative to the directory).
struct CheckpointState {
  std::vector<std::string> prefixes;
};

// "<dir>/checkpoint"
std::string CheckpointStatePath(const std::string& dir);
// "<dir>/checkpoint.lock": the lock UpdateCheckpointState holds.
std::string CheckpointStateLockPath(const std::string& dir);
// Replaces the `checkpoint` file (mode 0640) durably: when this returns OK the
// file and its directory are on disk. Not locked: see UpdateCheckpointState.
absl::Status WriteCheckpointState(const std::string& dir,
                                  const CheckpointState& state);
// Reads the `checkpoint` file of `dir` (an empty list if there is none, or if
// it is damaged, with a warning), lets `update` change the list and writes it
// back (as WriteCheckpointState), all under an exclusive lock on
// CheckpointStateLockPath(dir): two processes updating one directory at once
// (two chiefs) each see the other's change instead of overwriting it.
absl::Status UpdateCheckpointState(
    const std::string& dir,
    const std::function<void(CheckpointState*)>& update);
// NOT_FOUND if the directory has no `checkpoint` file; DATA_LOSS naming it if
// it is malformed.
absl::StatusOr<CheckpointState> ReadCheckpointState(const std::string& dir);
// The state in `text`, as ReadCheckpointState reads it from the file `path`.
absl::StatusOr<CheckpointState> ParseCheckpointState(absl::string_view text,
                                                     const std::string& path);

// Removes every file of checkpoint `prefix_name` in `dir` (its index, its
// shards and temporary files of either); the first error names the file.
absl::Status DeleteCheckpointFiles(const std::string& dir,
                                   const std::string& prefix_name);

// Removes the shard files of checkpoint `prefix_name` in `dir` that are not
// in `current` (the shards its index names): those an earlier save of the
// same step left. Temporary files, which may be another writer's, stay.
absl::Status DeleteStaleShards(const std::string& dir,
                               const std::string& prefix_name,
                               const std::vector<std::string>& current);

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_CHECKPOINT_FILES_H_
