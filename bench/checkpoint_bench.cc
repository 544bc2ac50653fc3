// Checkpoint save and restore throughput: distflow's Saver (one safetensors
// shard per device, CRC32C per tensor, fsync and rename) in a local session
// and on an in-process cluster of 2 ps tasks writing in parallel, against
// PyTorch's torch.save / torch.load of the same tensors, made as durable
// (bench/checkpoint_peer.py), measured in the same run.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_util.h"
#include "distflow/distflow.h"
#include "distributed/rpc/test_cluster.h"

namespace df = distflow;

namespace {

constexpr int kTensors = 8;
constexpr int kRepeats = 5;

struct Timing {
  double save_ms = -1;
  double restore_ms = -1;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

[[noreturn]] void Fail(const char* what, const absl::Status& s) {
  std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  std::exit(1);
}

// Saves and restores kTensors float variables of `mib` MiB each, spread over
// `num_ps` ps tasks (0: a local session).
Timing MeasureDistflow(const std::string& dir, int num_ps, int mib) {
  std::unique_ptr<df::TestCluster> cluster;
  df::SessionOptions options;
  if (num_ps > 0) {
    auto created = df::TestCluster::Create({{"ps", num_ps}, {"worker", 1}});
    if (!created.ok()) Fail("cluster", created.status());
    cluster = std::move(*created);
    options.target = cluster->server("worker", 0)->target();
  }
  df::Scope root = df::Scope::NewRootScope();
  const int64_t elements = int64_t{mib} * 1024 * 1024 / 4;
  for (int i = 0; i < kTensors; ++i) {
    df::Scope s =
        num_ps > 0
            ? root.WithDevice("/job:ps/task:" + std::to_string(i % num_ps))
            : root;
    df::ops::Variable(
        s.WithOpName("layer" + std::to_string(i) + "/kernel"),
        df::ops::RandomUniform(s, {elements}, df::DataType::kFloat));
  }
  // One checkpoint kept, as the peer keeps one file.
  df::train::SaverOptions saver_options;
  saver_options.max_to_keep = 1;
  auto saver = df::train::Saver::Create(root, saver_options);
  if (!saver.ok()) Fail("saver", saver.status());
  auto session = df::ClientSession::Create(root, options);
  if (!session.ok()) Fail("session", session.status());
  absl::Status init =
      (*session)->RunTargets({df::ops::GlobalVariablesInitializer(root)});
  if (!init.ok()) Fail("init", init);
  std::vector<double> saves, restores;
  for (int r = 0; r < kRepeats; ++r) {
    // Each save starts with no dirty pages left by the one before (or by the
    // peer), which would otherwise throttle its writes; the peer does the same.
    sync();
    auto start = std::chrono::steady_clock::now();
    auto prefix = (*saver)->Save(session->get(), dir, r);
    if (!prefix.ok()) Fail("save", prefix.status());
    saves.push_back(bench::Seconds(start) * 1e3);
    start = std::chrono::steady_clock::now();
    absl::Status restored = (*saver)->Restore(session->get(), *prefix);
    if (!restored.ok()) Fail("restore", restored);
    restores.push_back(bench::Seconds(start) * 1e3);
  }
  return {Median(saves), Median(restores)};
}

Timing MeasurePeer(const std::string& dir, int mib) {
  const std::string command =
      "OPENBLAS_NUM_THREADS=1 /usr/bin/python3 " DISTFLOW_BENCH_DIR
      "/checkpoint_peer.py " +
      dir + " " + std::to_string(kTensors) + " " + std::to_string(mib) + " " +
      std::to_string(kRepeats) + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  Timing t;
  if (pipe == nullptr) return t;
  if (std::fscanf(pipe, "%lf %lf", &t.save_ms, &t.restore_ms) != 2) t = {};
  pclose(pipe);
  return t;
}

// A fresh directory under `parent`.
std::string TempDir(const std::string& parent) {
  std::string dir = parent + "/distflow_checkpoint_bench_XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    Fail("temp dir", absl::InternalError(dir));
  }
  return dir;
}

}  // namespace

int main() {
  std::printf(
      "checkpoint of %d float32 tensors: median of %d saves and restores "
      "(ratio: PyTorch time / distflow time, > 1 means distflow is faster)\n",
      kTensors, kRepeats);
  // In memory (tmpfs: fsync is free) the software is measured; on disk, the
  // durable write, which on a shared machine varies with other I/O.
  struct Place {
    const char* name;
    std::string parent;
    std::vector<int> mib;
  };
  std::vector<Place> places;
  if (std::filesystem::is_directory("/dev/shm")) {
    places.push_back({"memory (/dev/shm)", "/dev/shm", {4, 32}});
  }
  places.push_back(
      {"disk", std::filesystem::temp_directory_path().string(), {32}});
  for (const Place& place : places) {
    for (int mib : place.mib) {
      const std::string dir = TempDir(place.parent);
      std::printf("  %d MiB in all, on %s\n", kTensors * mib, place.name);
      const Timing peer = MeasurePeer(dir, mib);
      if (peer.save_ms > 0) {
        std::printf(
            "    pytorch torch.save/load   save %8.1f ms  restore %8.1f ms\n",
            peer.save_ms, peer.restore_ms);
      } else {
        std::printf(
            "    pytorch peer unavailable (/usr/bin/python3 with torch)\n");
      }
      for (int num_ps : {0, 2}) {
        const Timing ours =
            MeasureDistflow(dir + "/ps" + std::to_string(num_ps), num_ps, mib);
        std::printf("    distflow %-16s save %8.1f ms  restore %8.1f ms",
                    num_ps == 0 ? "local session" : "2 ps tasks", ours.save_ms,
                    ours.restore_ms);
        if (peer.save_ms > 0) {
          std::printf("  ratio save %.2f restore %.2f",
                      peer.save_ms / ours.save_ms,
                      peer.restore_ms / ours.restore_ms);
        }
        std::printf("\n");
      }
      std::filesystem::remove_all(dir);
    }
  }
  return 0;
}
