#include "tools/distflow/inspect_command.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/safetensors.h"
#include "distflow/train/saver.h"
#include "nlohmann/json.hpp"
#include "tools/distflow/exit_code.h"
#include "tools/distflow/tensor_stats.h"
#include "train/checkpoint_files.h"

namespace distflow {
namespace tools {
namespace {

namespace fs = std::filesystem;

constexpr char kIndexSuffix[] = ".index.json";

constexpr char kSummary[] =
    "Prints a checkpoint: its global step, and each tensor's dtype, shape, "
    "min, max and mean";

constexpr char kDetails[] =
    "Prints what a checkpoint holds: its global step, then every tensor\n"
    "(sorted by name) with its dtype, shape, min, max and mean, and the\n"
    "shard file it is in. Every tensor's CRC32C is checked: a damaged one is\n"
    "reported naming the tensor and the file, and the exit status is 1.";

constexpr char kFooter[] =
    "CHECKPOINT is a checkpoint directory (its latest checkpoint is shown),\n"
    "an index file (model.ckpt-200.index.json), a prefix (model.ckpt-200)\n"
    "or one of its shard files (the whole checkpoint is shown).\n"
    "\n"
    "Examples:\n"
    "  distflow inspect /tmp/train_logs\n"
    "  distflow inspect --json /tmp/train_logs/model.ckpt-200 | jq "
    ".global_step";

struct InspectFlags {
  std::string checkpoint;
  bool json = false;
};

// One row of the table.
struct TensorRow {
  std::string name;
  DataType dtype = DataType::kInvalid;
  TensorShape shape;
  std::string shard;
  std::optional<TensorStats> stats;
  std::string error;  // empty if the tensor reads back intact
};

struct CheckpointReport {
  std::string prefix;
  int64_t global_step = 0;
  std::vector<std::string> shards;
  std::vector<TensorRow> tensors;
};

// The prefix of the checkpoint that `path` names: a directory's latest, an
// index or shard file's, or `path` itself when its index exists.
absl::StatusOr<std::string> ResolvePrefix(const std::string& path) {
  std::error_code error;
  if (fs::is_directory(path, error)) {
    auto latest = train::LatestCheckpoint(path);
    if (absl::IsNotFound(latest.status())) {
      return absl::NotFoundError(absl::StrCat(
          latest.status().message(),
          "; give a directory a Saver wrote checkpoints to, an index file or "
          "a prefix"));
    }
    return latest;
  }
  // One of the checkpoint's shard files: "<prefix>.shard-00000-of-00002...".
  if (absl::EndsWith(path, ".safetensors")) {
    const size_t shard = path.rfind(".shard-");
    if (shard != std::string::npos) return path.substr(0, shard);
  }
  if (absl::EndsWith(path, kIndexSuffix)) {
    return path.substr(0, path.size() - std::string(kIndexSuffix).size());
  }
  if (!fs::exists(train::IndexPath(path), error)) {
    return absl::NotFoundError(absl::StrCat(
        "no checkpoint at '", path, "': neither a directory nor a prefix with ",
        "an index file ", train::IndexPath(path),
        "; give a checkpoint directory, an index file or a prefix"));
  }
  return path;
}

absl::StatusOr<CheckpointReport> ReadReport(const std::string& path) {
  CheckpointReport report;
  auto prefix = ResolvePrefix(path);
  if (!prefix.ok()) return prefix.status();
  report.prefix = *prefix;
  auto index = train::ReadCheckpointIndex(train::IndexPath(*prefix));
  if (!index.ok()) return index.status();
  report.global_step = index->global_step;
  report.shards = index->shards;
  const fs::path dir = fs::path(*prefix).parent_path();
  std::map<int, std::unique_ptr<SafetensorsReader>> readers;
  for (const auto& [name, entry] : index->tensors) {  // sorted by name
    TensorRow row;
    row.name = name;
    row.dtype = entry.dtype;
    row.shape = entry.shape;
    if (entry.shard < 0 || entry.shard >= index->shards.size()) {
      row.error = absl::StrCat("tensor '", name, "' names shard ", entry.shard,
                               " but the index lists ", index->shards.size());
      report.tensors.push_back(std::move(row));
      continue;
    }
    row.shard = index->shards[entry.shard];
    auto& reader = readers[entry.shard];
    absl::Status status;
    if (reader == nullptr) {
      auto opened = SafetensorsReader::Open((dir / row.shard).string());
      if (opened.ok()) {
        reader = *std::move(opened);
      } else {
        status = opened.status();
      }
    }
    if (reader != nullptr) {
      auto tensor = reader->Read(name);
      if (!tensor.ok()) {
        status = tensor.status();
      } else if (tensor->dtype() != entry.dtype ||
                 tensor->shape() != entry.shape) {
        status = absl::DataLossError(absl::StrCat(
            "tensor '", name, "' is ", tensor->TypeString(), " in ",
            reader->path(), " but ", DataTypeName(entry.dtype),
            entry.shape.DebugString(), " in the index"));
      } else {
        row.stats = ComputeTensorStats(*tensor);
      }
    }
    if (!status.ok()) row.error = status.ToString();
    report.tensors.push_back(std::move(row));
  }
  return report;
}

std::string StatOrDash(const std::optional<TensorStats>& stats,
                       double TensorStats::*field) {
  return stats ? FormatStat((*stats).*field) : "-";
}

void PrintTable(const CheckpointReport& report) {
  int64_t parameters = 0;
  for (const TensorRow& row : report.tensors) {
    parameters += row.shape.num_elements();
  }
  std::cout << "checkpoint: " << report.prefix << "\n"
            << "global step: " << report.global_step << "\n"
            << "tensors: " << report.tensors.size() << " (" << parameters
            << " values) in " << report.shards.size()
            << (report.shards.size() == 1 ? " shard" : " shards") << "\n\n";
  std::vector<std::vector<std::string>> cells = {
      {"name", "dtype", "shape", "min", "max", "mean", "shard"}};
  for (const TensorRow& row : report.tensors) {
    cells.push_back({row.name, DataTypeName(row.dtype), row.shape.DebugString(),
                     StatOrDash(row.stats, &TensorStats::min),
                     StatOrDash(row.stats, &TensorStats::max),
                     StatOrDash(row.stats, &TensorStats::mean),
                     row.error.empty() ? row.shard : "DAMAGED: " + row.shard});
  }
  std::vector<size_t> widths(cells[0].size(), 0);
  for (const auto& line : cells) {
    for (size_t i = 0; i < line.size(); ++i) {
      widths[i] = std::max(widths[i], line[i].size());
    }
  }
  for (const auto& line : cells) {
    std::string text;
    for (size_t i = 0; i < line.size(); ++i) {
      const bool last = i + 1 == line.size();
      absl::StrAppend(
          &text, line[i],
          last ? "" : std::string(widths[i] - line[i].size() + 2, ' '));
    }
    std::cout << text << "\n";
  }
}

void PrintJson(const CheckpointReport& report) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const TensorRow& row : report.tensors) {
    nlohmann::json t = {{"name", row.name},
                        {"dtype", DataTypeName(row.dtype)},
                        {"shape", row.shape.dim_sizes()},
                        {"shard", row.shard}};
    if (row.stats) {
      // NaN has no JSON form: nlohmann writes it as null.
      t["min"] = row.stats->min;
      t["max"] = row.stats->max;
      t["mean"] = row.stats->mean;
    }
    if (!row.error.empty()) t["error"] = row.error;
    tensors.push_back(std::move(t));
  }
  nlohmann::json out = {{"checkpoint", report.prefix},
                        {"global_step", report.global_step},
                        {"shards", report.shards},
                        {"tensors", std::move(tensors)}};
  std::cout << out.dump(2) << "\n";
}

int RunInspect(const InspectFlags& flags) {
  auto report = ReadReport(flags.checkpoint);
  if (!report.ok()) {
    std::cerr << "distflow inspect: " << report.status() << "\n";
    return kExitFailure;
  }
  if (flags.json) {
    PrintJson(*report);
  } else {
    PrintTable(*report);
  }
  int damaged = 0;
  for (const TensorRow& row : report->tensors) {
    if (row.error.empty()) continue;
    ++damaged;
    std::cerr << "distflow inspect: " << row.error << "\n";
  }
  if (damaged > 0) {
    std::cerr << "distflow inspect: " << damaged << " of "
              << report->tensors.size() << " tensors of " << report->prefix
              << " are damaged\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

void AddInspectCommand(CLI::App& app) {
  auto flags = std::make_shared<InspectFlags>();
  CLI::App* cmd = app.add_subcommand("inspect", kSummary);
  // CLI11 prints the footer after the flags: the details, then examples.
  cmd->footer(absl::StrCat(kDetails, "\n\n", kFooter));
  cmd->add_option("CHECKPOINT", flags->checkpoint,
                  "A checkpoint directory, index file or prefix")
      ->required();
  cmd->add_flag("--json", flags->json,
                "Print JSON: {checkpoint, global_step, shards, tensors: "
                "[{name, dtype, shape, shard, min, max, mean, error?}]}");
  cmd->callback([flags] { ExitWith(RunInspect(*flags)); });
}

}  // namespace tools
}  // namespace distflow
