// Saver durability: the order of flushes and renames, file modes, and saves
// that fail part way (faults injected through base/file.h's hook).
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "base/file.h"
#include "distflow/ops.h"
#include "distflow/session.h"
#include "distflow/train/global_step.h"
#include "distflow/train/saver.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"
#include "train/checkpoint_files.h"
#include "train/checkpoint_test_util.h"

namespace distflow {
namespace train {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Base(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

// One variable and the global step; `Set` assigns the variable.
struct Model {
  Scope root = Scope::NewRootScope();
  ops::Variable weight;
  ops::Variable step;
  Output value;
  Operation assign;

  Model() {
    weight = ops::Variable(root.WithOpName("weight"),
                           Tensor::Vector<float>({1, 2, 3}));
    step = GetOrCreateGlobalStep(root);
    value = ops::Placeholder(root, DataType::kFloat);
    assign = ops::Assign(root, weight, value).op();
  }
  void Set(ClientSession* session, float v) {
    ASSERT_TRUE(
        session->Run({{value, Tensor::Vector<float>({v, v, v})}}, {}, {assign})
            .ok());
  }
  float Get(ClientSession* session) {
    auto got = session->Run({weight});
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? (*got)[0].flat<float>()[0] : -1;
  }
};

// Installs a fault hook for its lifetime: records every call and fails
// those `fail` picks (with the errno it returns).
class FileFaults {
 public:
  using Fail = std::function<int(absl::string_view, const std::string&)>;
  explicit FileFaults(Fail fail = nullptr) : fail_(std::move(fail)) {
    SetFileFaultHookForTesting(
        [this](absl::string_view call, const std::string& path) {
          std::lock_guard<std::mutex> lock(mu_);
          calls_.push_back(absl::StrCat(call, " ", Base(path)));
          if (on_call_) on_call_(call, path);
          return fail_ ? fail_(call, path) : 0;
        });
  }
  ~FileFaults() { SetFileFaultHookForTesting(nullptr); }
  void OnCall(std::function<void(absl::string_view, const std::string&)> f) {
    std::lock_guard<std::mutex> lock(mu_);
    on_call_ = std::move(f);
  }
  std::vector<std::string> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  Fail fail_;
  std::mutex mu_;
  std::function<void(absl::string_view, const std::string&)> on_call_;
  std::vector<std::string> calls_;
};

// The calls of `calls` that are not writes, with temporary names cut to
// "<name>.tmp".
std::vector<std::string> Durability(const std::vector<std::string>& calls) {
  std::vector<std::string> out;
  for (std::string c : calls) {
    if (absl::StartsWith(c, "write ") || absl::StartsWith(c, "create ")) {
      continue;
    }
    const size_t tmp = c.find(".tmp-");
    if (tmp != std::string::npos) c = c.substr(0, tmp + 4);
    out.push_back(c);
  }
  return out;
}

TEST(SaverDurabilityTest, EachFileIsFlushedRenamedAndItsDirectoryFlushed) {
  Model m;
  SaverOptions options;
  options.max_to_keep = 1;
  auto saver = Saver::Create(m.root, options);
  ASSERT_TRUE(saver.ok()) << saver.status();
  auto session = test::InitializedSession(m.root);
  ASSERT_TRUE(session.ok()) << session.status();
  const std::string dir = TestDir();
  ASSERT_TRUE((*saver)->Save(session->get(), dir, 1).ok());

  FileFaults faults;
  // The old checkpoint must still be whole when the new list reaches the
  // disk: it is pruned only after.
  bool old_was_there = false;
  faults.OnCall([&](absl::string_view call, const std::string& path) {
    if (call == "fsync_dir" &&
        std::filesystem::exists(CheckpointStatePath(dir)) &&
        absl::StrContains(*ReadFileToString(CheckpointStatePath(dir)),
                          "model.ckpt-2") &&
        !old_was_there) {
      old_was_there =
          std::filesystem::exists(dir + "/model.ckpt-1.index.json") &&
          std::filesystem::exists(
              dir + "/model.ckpt-1.shard-00000-of-00001.safetensors");
    }
  });
  ASSERT_TRUE((*saver)->Save(session->get(), dir, 2).ok());
  const std::string d = Base(dir);
  EXPECT_THAT(
      Durability(faults.calls()),
      ElementsAre("fsync model.ckpt-2.shard-00000-of-00001.safetensors.tmp",
                  "rename model.ckpt-2.shard-00000-of-00001.safetensors",
                  "fsync_dir " + d, "fsync model.ckpt-2.index.json.tmp",
                  "rename model.ckpt-2.index.json", "fsync_dir " + d,
                  "lock checkpoint.lock", "fsync checkpoint.tmp",
                  "rename checkpoint", "fsync_dir " + d));
  EXPECT_TRUE(old_was_there);
  EXPECT_THAT(
      Files(dir),
      ElementsAre("checkpoint", "checkpoint.lock", "model.ckpt-2.index.json",
                  "model.ckpt-2.shard-00000-of-00001.safetensors"));
}

TEST(SaverDurabilityTest, DataAndIndexAreOwnerOnlyTheListGroupReadable) {
  Model m;
  auto saver = Saver::Create(m.root);
  ASSERT_TRUE(saver.ok());
  auto session = test::InitializedSession(m.root);
  ASSERT_TRUE(session.ok());
  const std::string dir = TestDir();
  ASSERT_TRUE((*saver)->Save(session->get(), dir, 3).ok());
  auto mode = [&](const std::string& name) {
    struct stat st;
    EXPECT_EQ(::stat((dir + "/" + name).c_str(), &st), 0) << name;
    return st.st_mode & 0777;
  };
  EXPECT_EQ(mode("model.ckpt-3.shard-00000-of-00001.safetensors"), 0600u);
  EXPECT_EQ(mode("model.ckpt-3.index.json"), 0600u);
  EXPECT_EQ(mode("checkpoint"), 0640u);
  EXPECT_EQ(mode("checkpoint.lock"), 0640u);
}

// A save of a step that has a checkpoint, failing at each point in turn,
// leaves that checkpoint restorable with its old values and no stray file.
TEST(SaverDurabilityTest, FailedResaveKeepsTheCommittedCheckpointOfThatStep) {
  Model m;
  auto saver = Saver::Create(m.root);
  ASSERT_TRUE(saver.ok());
  auto session = test::InitializedSession(m.root);
  ASSERT_TRUE(session.ok());
  const std::string dir = TestDir();
  m.Set(session->get(), 7);
  ASSERT_TRUE((*saver)->Save(session->get(), dir, 5).ok());
  const std::vector<std::string> committed = Files(dir);

  struct Fault {
    const char* call;
    const char* file;  // part of the file name it hits
  };
  for (const Fault& f : {Fault{"write", ".shard-"}, Fault{"fsync", ".shard-"},
                         Fault{"rename", ".shard-"}, Fault{"write", ".index"},
                         Fault{"rename", ".index"}}) {
    SCOPED_TRACE(absl::StrCat(f.call, " of ", f.file));
    m.Set(session->get(), 8);
    {
      FileFaults faults([&](absl::string_view call, const std::string& path) {
        return call == f.call && absl::StrContains(Base(path), f.file) ? ENOSPC
                                                                       : 0;
      });
      auto prefix = (*saver)->Save(session->get(), dir, 5);
      EXPECT_EQ(prefix.status().code(), absl::StatusCode::kResourceExhausted);
      EXPECT_THAT(prefix.status().message(), HasSubstr(dir + "/model.ckpt-5"));
    }
    EXPECT_EQ(Files(dir), committed);
    m.Set(session->get(), 0);
    auto info = (*saver)->RestoreLatest(session->get(), dir);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->global_step, 5);
    EXPECT_EQ(m.Get(session->get()), 7);
  }

  // A re-save that succeeds replaces the checkpoint and its old files go.
  m.Set(session->get(), 9);
  ASSERT_TRUE((*saver)->Save(session->get(), dir, 5).ok());
  auto index = ReadCheckpointIndex(dir + "/model.ckpt-5.index.json");
  ASSERT_TRUE(index.ok()) << index.status();
  ASSERT_EQ(index->shards.size(), 1u);
  EXPECT_NE(index->shards[0], "model.ckpt-5.shard-00000-of-00001.safetensors");
  EXPECT_THAT(Files(dir),
              ElementsAre("checkpoint", "checkpoint.lock",
                          "model.ckpt-5.index.json", index->shards[0]));
  m.Set(session->get(), 0);
  ASSERT_TRUE((*saver)->RestoreLatest(session->get(), dir).ok());
  EXPECT_EQ(m.Get(session->get()), 9);
}

// A checkpoint whose index is on disk but whose list could not be updated is
// complete: its files stay, and the older checkpoints stay listed.
TEST(SaverDurabilityTest, FailedListUpdateKeepsEveryCheckpoint) {
  Model m;
  SaverOptions options;
  options.max_to_keep = 1;
  auto saver = Saver::Create(m.root, options);
  ASSERT_TRUE(saver.ok());
  auto session = test::InitializedSession(m.root);
  ASSERT_TRUE(session.ok());
  const std::string dir = TestDir();
  ASSERT_TRUE((*saver)->Save(session->get(), dir, 1).ok());
  {
    FileFaults faults([](absl::string_view call, const std::string& path) {
      return call == "rename" && Base(path) == "checkpoint" ? ENOSPC : 0;
    });
    auto prefix = (*saver)->Save(session->get(), dir, 2);
    EXPECT_EQ(prefix.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(prefix.status().message(), HasSubstr(dir + "/checkpoint"));
  }
  EXPECT_THAT(ReadCheckpointState(dir)->prefixes, ElementsAre("model.ckpt-1"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.ckpt-1.index.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.ckpt-2.index.json"));
}

}  // namespace
}  // namespace train
}  // namespace distflow
