#include "train/checkpoint_files.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/file.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "core/safetensors.h"
#include "nlohmann/json.hpp"

namespace distflow {
namespace train {
namespace {

using Json = nlohmann::json;

constexpr char kStateFileName[] = "checkpoint";
constexpr char kStateLockFileName[] = "checkpoint.lock";
// The state file is no secret (it lists file names): the group may read it.
constexpr int kStateFileMode = 0640;

// The contents of `path`, refused (DATA_LOSS) beyond `max_bytes`.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path,
                                          uint64_t max_bytes,
                                          absl::string_view what) {
  DF_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file,
                      RandomAccessFile::Open(path));
  if (file->size() > max_bytes) {
    return absl::DataLossError(absl::StrCat(
        what, " '", path, "' is ", file->size(), " bytes, more than the ",
        max_bytes, " such a file can hold: the file is damaged"));
  }
  std::string text(file->size(), '\0');
  DF_RETURN_IF_ERROR(file->ReadAt(0, text.size(), text.data()));
  return text;
}

absl::StatusOr<Json> ParseJsonObject(absl::string_view text,
                                     const std::string& path,
                                     absl::string_view what) {
  Json json = Json::parse(text.begin(), text.end(), nullptr,
                          /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return absl::DataLossError(absl::StrCat(what, " '", path,
                                            "' is not a JSON object: the file "
                                            "is damaged"));
  }
  return json;
}

absl::Status BadField(const std::string& path, absl::string_view field) {
  return absl::DataLossError(absl::StrCat("checkpoint index '", path,
                                          "' has a missing or malformed ",
                                          field, ": the file is damaged"));
}

}  // namespace

std::string ShardFileName(const std::string& prefix_name, int shard,
                          int num_shards, const std::string& tag) {
  return absl::StrFormat("%s.shard-%05d-of-%05d%s.safetensors", prefix_name,
                         shard, num_shards, tag.empty() ? "" : "." + tag);
}

std::string IndexPath(const std::string& prefix) {
  return prefix + ".index.json";
}

absl::Status WriteCheckpointIndex(const std::string& path,
                                  const CheckpointIndex& index) {
  Json tensors = Json::object();
  for (const auto& [name, t] : index.tensors) {
    DF_ASSIGN_OR_RETURN(std::string dtype, SafetensorsDtypeName(t.dtype));
    tensors[name] = {
        {"shard", t.shard}, {"dtype", dtype}, {"shape", t.shape.dim_sizes()}};
  }
  const Json json = {{"format_version", kCheckpointIndexVersion},
                     {"global_step", index.global_step},
                     {"shards", index.shards},
                     {"tensors", std::move(tensors)}};
  return WriteFileAtomically(path, json.dump(1) + "\n");
}

absl::StatusOr<CheckpointIndex> ReadCheckpointIndex(const std::string& path) {
  DF_ASSIGN_OR_RETURN(
      std::string text,
      ReadSmallFile(path, kMaxCheckpointIndexBytes, "checkpoint index"));
  return ParseCheckpointIndex(text, path);
}

absl::StatusOr<CheckpointIndex> ParseCheckpointIndex(absl::string_view text,
                                                     const std::string& path) {
  DF_ASSIGN_OR_RETURN(Json json,
                      ParseJsonObject(text, path, "checkpoint index"));
  const Json& version = json["format_version"];
  if (!version.is_number_integer() || version.get<int64_t>() < 1) {
    return BadField(path, "format_version");
  }
  if (version.get<int64_t>() > kCheckpointIndexVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint index '", path, "' has format version ",
        version.get<int64_t>(), " but this build reads up to version ",
        kCheckpointIndexVersion, "; restore it with a newer distflow"));
  }
  CheckpointIndex index;
  const Json& step = json["global_step"];
  if (!step.is_number_integer()) return BadField(path, "global_step");
  index.global_step = step.get<int64_t>();
  const Json& shards = json["shards"];
  if (!shards.is_array()) return BadField(path, "shards");
  for (const Json& s : shards) {
    if (!s.is_string()) return BadField(path, "shards");
    index.shards.push_back(s.get<std::string>());
  }
  const Json& tensors = json["tensors"];
  if (!tensors.is_object()) return BadField(path, "tensors");
  for (const auto& [name, t] : tensors.items()) {
    const std::string field = absl::StrCat("entry for tensor '", name, "'");
    if (!t.is_object()) return BadField(path, field);
    CheckpointIndex::Tensor entry;
    const Json& shard = t.contains("shard") ? t["shard"] : Json();
    if (!shard.is_number_unsigned() ||
        shard.get<uint64_t>() >= index.shards.size()) {
      return BadField(path, field);
    }
    entry.shard = shard.get<int>();
    const Json& dtype = t.contains("dtype") ? t["dtype"] : Json();
    const auto parsed =
        dtype.is_string()
            ? DataTypeFromSafetensorsName(dtype.get<std::string>())
            : std::nullopt;
    if (!parsed) return BadField(path, field);
    entry.dtype = *parsed;
    const Json& shape = t.contains("shape") ? t["shape"] : Json();
    std::vector<int64_t> dims;
    for (const Json& d : shape.is_array() ? shape : Json::array()) {
      if (!d.is_number_unsigned()) return BadField(path, field);
      dims.push_back(d.get<int64_t>());
    }
    auto tensor_shape = TensorShape::FromDims(dims);
    if (!shape.is_array() || !tensor_shape.ok()) return BadField(path, field);
    entry.shape = *tensor_shape;
    index.tensors[name] = std::move(entry);
  }
  return index;
}

std::string CheckpointStatePath(const std::string& dir) {
  return absl::StrCat(dir, "/", kStateFileName);
}

std::string CheckpointStateLockPath(const std::string& dir) {
  return absl::StrCat(dir, "/", kStateLockFileName);
}

absl::Status WriteCheckpointState(const std::string& dir,
                                  const CheckpointState& state) {
  const Json json = {
      {"latest", state.prefixes.empty() ? "" : state.prefixes.back()},
      {"all", state.prefixes}};
  return WriteFileAtomically(CheckpointStatePath(dir), json.dump(1) + "\n",
                             kStateFileMode);
}

absl::Status UpdateCheckpointState(
    const std::string& dir,
    const std::function<void(CheckpointState*)>& update) {
  DF_ASSIGN_OR_RETURN(std::unique_ptr<FileLock> lock,
                      FileLock::Acquire(CheckpointStateLockPath(dir)));
  auto state = ReadCheckpointState(dir);
  if (!state.ok()) {
    if (!absl::IsNotFound(state.status())) {
      DF_LOG(Warning) << "starting a new list of checkpoints: "
                      << state.status();
    }
    state = CheckpointState();
  }
  update(&*state);
  return WriteCheckpointState(dir, *state);
}

absl::StatusOr<CheckpointState> ReadCheckpointState(const std::string& dir) {
  const std::string path = CheckpointStatePath(dir);
  auto text = ReadSmallFile(path, kMaxCheckpointStateBytes, "checkpoint state");
  if (absl::IsNotFound(text.status())) {
    return absl::NotFoundError(absl::StrCat("no checkpoint in '", dir,
                                            "': it has no file '",
                                            kStateFileName, "' naming one"));
  }
  DF_RETURN_IF_ERROR(text.status());
  return ParseCheckpointState(*text, path);
}

absl::StatusOr<CheckpointState> ParseCheckpointState(absl::string_view text,
                                                     const std::string& path) {
  auto json = ParseJsonObject(text, path, "checkpoint state");
  DF_RETURN_IF_ERROR(json.status());
  CheckpointState state;
  const Json& all = (*json)["all"];
  const Json& latest = (*json)["latest"];
  bool ok = all.is_array() && latest.is_string();
  for (const Json& p : ok ? all : Json::array()) {
    ok = ok && p.is_string() && !p.get<std::string>().empty();
    if (ok) state.prefixes.push_back(p.get<std::string>());
  }
  // The latest is the last of the list; a file edited to name another one
  // wins, as it is what the user asked for.
  if (ok && !latest.get<std::string>().empty() &&
      (state.prefixes.empty() || state.prefixes.back() != latest)) {
    state.prefixes.erase(
        std::remove(state.prefixes.begin(), state.prefixes.end(), latest),
        state.prefixes.end());
    state.prefixes.push_back(latest.get<std::string>());
  }
  if (!ok) {
    return absl::DataLossError(absl::StrCat(
        "checkpoint state '", path,
        "' must hold {\"latest\": prefix, \"all\": [prefixes]}: the file is "
        "damaged"));
  }
  return state;
}

absl::Status DeleteCheckpointFiles(const std::string& dir,
                                   const std::string& prefix_name) {
  // "<prefix>." never matches another step: "model.ckpt-1." is not a prefix
  // of "model.ckpt-10.index.json".
  const std::string index_name = IndexPath(prefix_name);
  const std::string shard_start = prefix_name + ".shard-";
  std::error_code error;
  std::vector<std::filesystem::path> doomed;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, index_name) ||
        absl::StartsWith(name, shard_start)) {
      doomed.push_back(entry.path());
    }
  }
  if (error) {
    return absl::InternalError(absl::StrCat(
        "cannot list checkpoint directory '", dir, "': ", error.message()));
  }
  // The index goes first: a checkpoint without its index is never restored,
  // so a deletion cut short leaves no half checkpoint that looks whole.
  std::stable_partition(doomed.begin(), doomed.end(), [&](const auto& p) {
    return p.filename().string() == index_name;
  });
  for (const auto& p : doomed) {
    if (!std::filesystem::remove(p, error) && error) {
      return absl::InternalError(
          absl::StrCat("cannot remove '", p.string(), "': ", error.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status DeleteStaleShards(const std::string& dir,
                               const std::string& prefix_name,
                               const std::vector<std::string>& current) {
  const std::string shard_start = prefix_name + ".shard-";
  std::error_code error;
  std::vector<std::filesystem::path> doomed;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, shard_start) &&
        !absl::StrContains(name, ".tmp-") &&
        std::find(current.begin(), current.end(), name) == current.end()) {
      doomed.push_back(entry.path());
    }
  }
  if (error) {
    return absl::InternalError(absl::StrCat(
        "cannot list checkpoint directory '", dir, "': ", error.message()));
  }
  for (const auto& p : doomed) {
    if (!std::filesystem::remove(p, error) && error) {
      return absl::InternalError(
          absl::StrCat("cannot remove '", p.string(), "': ", error.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace train
}  // namespace distflow
