// Checkpoints: saving and restoring every variable of a graph.
//
// A checkpoint <dir>/<basename>-<global_step> is one safetensors file per
// device that holds variables (in a cluster, one per ps task), each written by
// that task itself, all in parallel in one step; the chief then writes the
// index naming the shards and the global step, and the directory's
// `checkpoint` file naming the latest. Tensors are named after their variables
// ("layer1/kernel"), so numpy and PyTorch users can read the shards directly.
// The format is in docs/formats.md.
//
// The directory must be reachable under the same path by every task that
// holds variables and by the chief: the same machine, or a shared file system.
// A Save whose shard files the chief cannot see fails and says so.
#ifndef DISTFLOW_TRAIN_SAVER_H_
#define DISTFLOW_TRAIN_SAVER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distflow/ops/state_ops.h"
#include "distflow/scope.h"
#include "distflow/session.h"

namespace distflow {
namespace train {

struct SaverOptions {
  // Newest checkpoints kept in the directory; older ones are deleted after
  // each Save. 0 keeps every checkpoint.
  int max_to_keep = 5;
  // Checkpoint prefix: <dir>/<basename>-<global_step>.
  std::string basename = "model.ckpt";
};

struct CheckpointInfo {
  std::string prefix;
  int64_t global_step = 0;
};

// Thread-compatible: one thread at a time may Save or Restore.
class Saver {
 public:
  // Adds save and restore ops for every variable of `scope`'s graph (call it
  // after the model is built): one SaveShard and one RestoreShard per device
  // that holds variables, placed on that device, so that each ps task writes
  // and reads its own shard file and all shards are written in parallel in one
  // session step. INVALID_ARGUMENT if the graph has no variables, a variable's
  // dtype cannot be saved (string, resource), or the options are invalid.
  static absl::StatusOr<std::unique_ptr<Saver>> Create(
      const Scope& scope, const SaverOptions& options = {});

  // Writes the checkpoint <dir>/<basename>-<global_step> (one shard file per
  // device, then the index, then the `checkpoint` file naming it, each through
  // a temporary name, an fsync, a rename and an fsync of the directory),
  // creating `dir` if needed; then removes the oldest checkpoints beyond
  // max_to_keep. Shard and index files are private to the owner (0600). The
  // `checkpoint` file is updated under a lock, so two savers of one
  // directory keep both their checkpoints. A failed save removes only the
  // files it wrote: a checkpoint saved before, of this step too, stays whole.
  // Returns the prefix.
  absl::StatusOr<std::string> Save(ClientSession* session,
                                   const std::string& dir, int64_t global_step);

  // Restores every variable of the graph from the checkpoint `prefix`, each
  // from whichever shard holds it, so a checkpoint written by N ps tasks
  // restores onto any number of them. NOT_FOUND naming the file or the tensor
  // if one is missing; DATA_LOSS naming the file and the tensor if one is
  // damaged; INVALID_ARGUMENT if a tensor's dtype or shape does not fit its
  // variable.
  absl::Status Restore(ClientSession* session, const std::string& prefix);

  // Restores the newest checkpoint in `dir` that reads back intact: a damaged
  // or incomplete newest one is reported (logged with its path and the
  // reason) and the previous one is used. NOT_FOUND if `dir` has no
  // checkpoint; the newest one's error if none restores.
  absl::StatusOr<CheckpointInfo> RestoreLatest(ClientSession* session,
                                               const std::string& dir);

  // The number of shard files a Save writes (devices holding variables).
  int num_shards() const { return static_cast<int>(shards_.size()); }

 private:
  // The variables of one device and their save and restore ops.
  struct Shard {
    std::string device;  // as requested, for messages
    std::vector<ops::Variable> variables;
    std::vector<std::string> names;
    Output save_path;  // string scalar fed with the shard file's path
    Operation save;
    Output restore_files;  // string vector fed with each variable's file
    Operation restore;
  };

  Saver(std::vector<Shard> shards, SaverOptions options)
      : shards_(std::move(shards)), options_(std::move(options)) {}
  // Restores `prefix` and returns its global step.
  absl::StatusOr<int64_t> RestoreAndGetStep(ClientSession* session,
                                            const std::string& prefix);
  // Adds `prefix_name` to the directory's `checkpoint` file and deletes the
  // checkpoints beyond max_to_keep.
  absl::Status UpdateCheckpointState(const std::string& dir,
                                     const std::string& prefix_name);

  std::vector<Shard> shards_;
  SaverOptions options_;
};

// The newest checkpoint prefix named by <dir>/checkpoint; NOT_FOUND if none,
// DATA_LOSS naming the file if it is damaged.
absl::StatusOr<std::string> LatestCheckpoint(const std::string& dir);

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_SAVER_H_
