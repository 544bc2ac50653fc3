#include "distflow/train/saver.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "core/safetensors.h"
#include "distflow/ops.h"
#include "graph/device_name.h"
#include "graph/graph.h"
#include "graph/ops/checkpoint_ops.h"
#include "train/checkpoint_files.h"

namespace distflow {
namespace train {
namespace {

// The device a variable lives on, in a canonical form so that "/job:ps/task:1"
// and "/job:ps/replica:0/task:1/device:CPU:0" fall in one shard. Fields the
// request leaves open stay open (the placer decides them, the same way for
// every variable that leaves them open).
absl::StatusOr<std::string> DeviceKey(const ops::Variable& var) {
  const std::string& requested = var.handle().node()->requested_device();
  DF_ASSIGN_OR_RETURN(DeviceName name, DeviceName::Parse(requested));
  if (!name.replica) name.replica = 0;
  if (!name.type) name.type = "CPU";
  if (!name.id) name.id = 0;
  return name.ToString();
}

std::string DirOf(const std::string& prefix) {
  const std::string dir = std::filesystem::path(prefix).parent_path().string();
  return dir.empty() ? "." : dir;
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

// A name part that no other save uses.
std::string NewSaveTag() {
  std::random_device random;
  const uint64_t bits = (uint64_t{random()} << 32) | random();
  return absl::StrCat(absl::Hex(bits, absl::kZeroPad16));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Saver>> Saver::Create(
    const Scope& scope, const SaverOptions& options) {
  DF_RETURN_IF_ERROR(scope.status());
  if (options.max_to_keep < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Saver: max_to_keep is ", options.max_to_keep,
                     "; it must be >= 0 (0 keeps every checkpoint)"));
  }
  if (options.basename.empty() || absl::StrContains(options.basename, '/')) {
    return absl::InvalidArgumentError(
        absl::StrCat("Saver: basename '", options.basename,
                     "' must be a non-empty file name without '/'"));
  }
  const std::vector<ops::Variable> variables = ops::GlobalVariables(scope);
  if (variables.empty()) {
    return absl::InvalidArgumentError(
        "Saver: the graph has no variables to save; create the Saver after "
        "building the model");
  }
  // Shards in device order, so ps task 0 writes shard 0.
  std::map<std::string, Shard> by_device;
  for (const ops::Variable& v : variables) {
    auto dtype = SafetensorsDtypeName(v.dtype());
    if (!dtype.ok()) {
      return AddErrorContext(
          dtype.status(),
          absl::StrCat("Saver: variable '", v.var_name(), "' cannot be saved"));
    }
    DF_ASSIGN_OR_RETURN(std::string key, DeviceKey(v));
    Shard& shard = by_device[key];
    shard.device = key;
    shard.variables.push_back(v);
    shard.names.push_back(v.var_name());
  }
  Scope s = scope.WithNoControlDependencies().NewSubScope("save");
  std::vector<Shard> shards;
  for (auto& [key, shard] : by_device) {
    const std::string i = std::to_string(shards.size());
    shard.save_path =
        ops::Placeholder(s.WithOpName("shard_path_" + i), DataType::kString,
                         PartialTensorShape({}));
    shard.save = ops::SaveShard(s.WithOpName("save_shard_" + i),
                                shard.save_path, shard.variables, shard.names);
    shard.restore_files = ops::Placeholder(
        s.WithOpName("restore_files_" + i), DataType::kString,
        PartialTensorShape({static_cast<int64_t>(shard.variables.size())}));
    shard.restore =
        ops::RestoreShard(s.WithOpName("restore_shard_" + i),
                          shard.restore_files, shard.variables, shard.names);
    shards.push_back(std::move(shard));
  }
  DF_RETURN_IF_ERROR(scope.status());
  return std::unique_ptr<Saver>(new Saver(std::move(shards), options));
}

absl::StatusOr<std::string> Saver::Save(ClientSession* session,
                                        const std::string& dir,
                                        int64_t global_step) {
  if (dir.empty()) {
    return absl::InvalidArgumentError("Saver::Save: the directory is empty");
  }
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::InternalError(absl::StrCat(
        "cannot create checkpoint directory '", dir, "': ", error.message()));
  }
  const std::string prefix_name =
      absl::StrCat(options_.basename, "-", global_step);
  const std::string prefix = JoinPath(dir, prefix_name);
  const std::string index_path = IndexPath(prefix);
  const int n = num_shards();

  // A checkpoint of this step that is already committed (its index exists)
  // must stay whole until the new one is: this save writes shards of other
  // names, and the new index replaces the old one in one rename.
  std::string tag;
  if (std::filesystem::exists(index_path, error)) tag = NewSaveTag();
  CheckpointIndex index;
  index.global_step = global_step;
  ClientSession::FeedDict feeds;
  std::vector<Operation> targets;
  for (int i = 0; i < n; ++i) {
    index.shards.push_back(ShardFileName(prefix_name, i, n, tag));
    feeds.emplace_back(shards_[i].save_path,
                       Tensor::Scalar(JoinPath(dir, index.shards[i])));
    targets.push_back(shards_[i].save);
  }
  // A failure removes the shards this save wrote, which no index names, so
  // that they are never taken for a checkpoint, unless the index naming them
  // made it to disk before the error (a failed flush of the directory).
  auto fail = [&](const absl::Status& s) {
    auto on_disk = ReadCheckpointIndex(index_path);
    if (!on_disk.ok() || on_disk->shards != index.shards) {
      for (const std::string& shard : index.shards) {
        std::error_code ignored;
        std::filesystem::remove(JoinPath(dir, shard), ignored);
      }
    }
    return AddErrorContext(s, absl::StrCat("saving checkpoint '", prefix, "'"));
  };
  auto saved = session->Run(feeds, {}, targets);
  if (!saved.ok()) return fail(saved.status());

  // The index comes from the shards' headers (small), read back here: so the
  // chief also checks that it sees every file the tasks wrote.
  for (int i = 0; i < n; ++i) {
    const std::string path = JoinPath(dir, index.shards[i]);
    auto reader = SafetensorsReader::Open(path);
    if (absl::IsNotFound(reader.status())) {
      return fail(absl::NotFoundError(absl::StrCat(
          "the shard of ", shards_[i].device, " was written as '", path,
          "' but is not visible to this task: the checkpoint directory must "
          "be reachable under the same path by every task (the same machine "
          "or a shared file system)")));
    }
    if (!reader.ok()) return fail(reader.status());
    for (const SafetensorsReader::Entry& e : (*reader)->entries()) {
      index.tensors[e.name] = {i, e.dtype, e.shape};
    }
  }
  absl::Status s = WriteCheckpointIndex(index_path, index);
  if (!s.ok()) return fail(s);
  // Committed: the files of an earlier save of this step are garbage now.
  if (!tag.empty()) {
    s = DeleteStaleShards(dir, prefix_name, index.shards);
    if (!s.ok()) DF_LOG(Warning) << "keeping stale checkpoint files: " << s;
  }
  DF_RETURN_IF_ERROR(UpdateCheckpointState(dir, prefix_name));
  return prefix;
}

absl::Status Saver::UpdateCheckpointState(const std::string& dir,
                                          const std::string& prefix_name) {
  std::vector<std::string> dropped;
  absl::Status s =
      train::UpdateCheckpointState(dir, [&](CheckpointState* state) {
        std::vector<std::string>& kept = state->prefixes;
        kept.erase(std::remove(kept.begin(), kept.end(), prefix_name),
                   kept.end());
        kept.push_back(prefix_name);
        if (options_.max_to_keep > 0 && kept.size() > options_.max_to_keep) {
          const size_t excess = kept.size() - options_.max_to_keep;
          dropped.assign(kept.begin(), kept.begin() + excess);
          kept.erase(kept.begin(), kept.begin() + excess);
        }
      });
  // The new list is on disk before old files go, so it never names a deleted
  // checkpoint; if it is not, nothing goes.
  if (!s.ok()) {
    return AddErrorContext(
        s, absl::StrCat("listing checkpoint '", prefix_name,
                        "' in the checkpoint file of '", dir, "'"));
  }
  for (const std::string& old : dropped) {
    // A stale checkpoint left behind only costs space: report and go on.
    s = DeleteCheckpointFiles(dir, old);
    if (!s.ok()) DF_LOG(Warning) << "keeping old checkpoint files: " << s;
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Saver::RestoreAndGetStep(ClientSession* session,
                                                 const std::string& prefix) {
  const std::string index_path = IndexPath(prefix);
  DF_ASSIGN_OR_RETURN(CheckpointIndex index, ReadCheckpointIndex(index_path));
  const std::string dir = DirOf(prefix);
  ClientSession::FeedDict feeds;
  std::vector<Operation> targets;
  for (const Shard& shard : shards_) {
    std::vector<std::string> files;
    for (size_t i = 0; i < shard.variables.size(); ++i) {
      const std::string& name = shard.names[i];
      auto it = index.tensors.find(name);
      if (it == index.tensors.end()) {
        return absl::NotFoundError(absl::StrCat(
            "checkpoint '", prefix, "' has no tensor '", name,
            "' for the variable of that name (its index '", index_path,
            "' lists ", index.tensors.size(), " tensors)"));
      }
      const CheckpointIndex::Tensor& t = it->second;
      const ops::Variable& var = shard.variables[i];
      if (t.dtype != var.dtype() || !var.shape().IsCompatibleWith(t.shape)) {
        return absl::InvalidArgumentError(
            absl::StrCat("checkpoint '", prefix, "' holds tensor '", name,
                         "' as ", DataTypeName(t.dtype), t.shape.DebugString(),
                         ", which does not fit the variable of that name: ",
                         DataTypeName(var.dtype()), var.shape().DebugString()));
      }
      files.push_back(JoinPath(dir, index.shards[t.shard]));
    }
    feeds.emplace_back(shard.restore_files, Tensor::Vector(files));
    targets.push_back(shard.restore);
  }
  auto restored = session->Run(feeds, {}, targets);
  if (!restored.ok()) {
    return AddErrorContext(restored.status(),
                           absl::StrCat("restoring checkpoint '", prefix, "'"));
  }
  return index.global_step;
}

absl::Status Saver::Restore(ClientSession* session, const std::string& prefix) {
  return RestoreAndGetStep(session, prefix).status();
}

absl::StatusOr<CheckpointInfo> Saver::RestoreLatest(ClientSession* session,
                                                    const std::string& dir) {
  DF_ASSIGN_OR_RETURN(CheckpointState state, ReadCheckpointState(dir));
  if (state.prefixes.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "no checkpoint in '", dir, "': its checkpoint file lists none"));
  }
  absl::Status newest_error;
  for (auto it = state.prefixes.rbegin(); it != state.prefixes.rend(); ++it) {
    const std::string prefix = JoinPath(dir, *it);
    auto step = RestoreAndGetStep(session, prefix);
    if (step.ok()) return CheckpointInfo{prefix, *step};
    // Damage and missing files are a reason to fall back; anything else (a
    // variable that does not fit, a task that is down) is not.
    if (!absl::IsDataLoss(step.status()) && !absl::IsNotFound(step.status())) {
      return step.status();
    }
    DF_LOG(Warning) << "cannot restore checkpoint '" << prefix
                    << "', trying an older one: " << step.status();
    if (newest_error.ok()) newest_error = step.status();
  }
  return AddErrorContext(
      newest_error,
      absl::StrCat("none of the ", state.prefixes.size(), " checkpoints in '",
                   dir, "' restores; the newest fails with"));
}

absl::StatusOr<std::string> LatestCheckpoint(const std::string& dir) {
  DF_ASSIGN_OR_RETURN(CheckpointState state, ReadCheckpointState(dir));
  if (state.prefixes.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "no checkpoint in '", dir, "': its checkpoint file lists none"));
  }
  return JoinPath(dir, state.prefixes.back());
}

}  // namespace train
}  // namespace distflow
