#include "train/checkpoint_files.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "train/checkpoint_test_util.h"

namespace distflow {
namespace train {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(CheckpointFilesTest, Names) {
  EXPECT_EQ(ShardFileName("model.ckpt-7", 1, 3),
            "model.ckpt-7.shard-00001-of-00003.safetensors");
  EXPECT_EQ(ShardFileName("model.ckpt-7", 1, 3, "00ff"),
            "model.ckpt-7.shard-00001-of-00003.00ff.safetensors");
  EXPECT_EQ(CheckpointStateLockPath("/d"), "/d/checkpoint.lock");
  EXPECT_EQ(IndexPath("/d/model.ckpt-7"), "/d/model.ckpt-7.index.json");
  EXPECT_EQ(CheckpointStatePath("/d"), "/d/checkpoint");
}

TEST(CheckpointFilesTest, IndexRoundTrips) {
  const std::string path = TestDir() + "/m-5.index.json";
  CheckpointIndex index;
  index.global_step = 5;
  index.shards = {"a.safetensors", "b.safetensors"};
  index.tensors["layer1/kernel"] = {1, DataType::kFloat, TensorShape({2, 3})};
  index.tensors["global_step"] = {0, DataType::kInt64, TensorShape({})};
  ASSERT_TRUE(WriteCheckpointIndex(path, index).ok());
  auto read = ReadCheckpointIndex(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->global_step, 5);
  EXPECT_EQ(read->shards, index.shards);
  ASSERT_EQ(read->tensors.size(), 2u);
  EXPECT_EQ(read->tensors["layer1/kernel"].shard, 1);
  EXPECT_EQ(read->tensors["layer1/kernel"].shape, TensorShape({2, 3}));
  EXPECT_EQ(read->tensors["global_step"].dtype, DataType::kInt64);
}

TEST(CheckpointFilesTest, DamagedIndexIsDataLossNamingFileAndField) {
  const std::string path = TestDir() + "/m.index.json";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"format_version": 1, "global_step": 5, "shards": [], )", "JSON"},
      {R"({"format_version": 1, "shards": [], "tensors": {}})", "global_step"},
      {R"({"format_version": 1, "global_step": 5, "shards": ["a"],)"
       R"( "tensors": {"w": {"shard": 1, "dtype": "F32", "shape": [2]}}})",
       "entry for tensor 'w'"},
      {R"({"format_version": 1, "global_step": 5, "shards": ["a"],)"
       R"( "tensors": {"w": {"shard": 0, "dtype": "F16", "shape": [2]}}})",
       "entry for tensor 'w'"},
  };
  for (const auto& [text, field] : cases) {
    ASSERT_TRUE(WriteFileAtomically(path, text).ok());
    auto read = ReadCheckpointIndex(path);
    EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss) << text;
    EXPECT_THAT(read.status().message(), HasSubstr(field)) << text;
    EXPECT_THAT(read.status().message(), HasSubstr(path)) << text;
  }
  ASSERT_TRUE(WriteFileAtomically(path, R"({"format_version": 2})").ok());
  EXPECT_EQ(ReadCheckpointIndex(path).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(CheckpointFilesTest, StateRoundTripsAndNamesTheLatestLast) {
  const std::string dir = TestDir();
  EXPECT_EQ(ReadCheckpointState(dir).status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(WriteCheckpointState(dir, {{"m-1", "m-2"}}).ok());
  EXPECT_THAT(ReadCheckpointState(dir)->prefixes, ElementsAre("m-1", "m-2"));
  // A file edited by hand to name another latest: that one is the latest.
  ASSERT_TRUE(WriteFileAtomically(CheckpointStatePath(dir),
                                  R"({"latest": "m-1", "all": ["m-1", "m-2"]})")
                  .ok());
  EXPECT_THAT(ReadCheckpointState(dir)->prefixes, ElementsAre("m-2", "m-1"));
  ASSERT_TRUE(WriteFileAtomically(CheckpointStatePath(dir), "m-2\n").ok());
  auto state = ReadCheckpointState(dir);
  EXPECT_EQ(state.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(state.status().message(), HasSubstr(CheckpointStatePath(dir)));
}

TEST(CheckpointFilesTest, DeleteRemovesOneCheckpointOnly) {
  const std::string dir = TestDir();
  for (const char* name :
       {"m-1.index.json", "m-1.shard-00000-of-00001.safetensors",
        "m-1.shard-00000-of-00001.safetensors.tmp-0123456789abcdef",
        "m-10.index.json", "m-10.shard-00000-of-00001.safetensors",
        "checkpoint"}) {
    ASSERT_TRUE(WriteFileAtomically(dir + "/" + name, "x").ok());
  }
  ASSERT_TRUE(DeleteCheckpointFiles(dir, "m-1").ok());
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    left.push_back(e.path().filename().string());
  }
  std::sort(left.begin(), left.end());
  EXPECT_THAT(left, ElementsAre("checkpoint", "m-10.index.json",
                                "m-10.shard-00000-of-00001.safetensors"));
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Several writers of one directory's state (threads here; processes and
// hosts take the same flock) each read, change and write the list: none may
// lose another's entry.
TEST(CheckpointFilesTest, ConcurrentUpdatesOfTheStateLoseNothing) {
  const std::string dir = TestDir();
  constexpr int kWriters = 6;
  constexpr int kEach = 15;
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < kEach; ++i) {
        absl::Status s = UpdateCheckpointState(dir, [&](CheckpointState* st) {
          // Widens the window between the read and the write.
          std::this_thread::sleep_for(std::chrono::microseconds(300));
          st->prefixes.push_back(absl::StrCat("w", w, "-", i));
        });
        ASSERT_TRUE(s.ok()) << s;
      }
    });
  }
  for (std::thread& t : writers) t.join();
  auto state = ReadCheckpointState(dir);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(
      std::set<std::string>(state->prefixes.begin(), state->prefixes.end())
          .size(),
      size_t{kWriters * kEach});
  struct stat st;
  ASSERT_EQ(::stat(CheckpointStatePath(dir).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  ASSERT_EQ(::stat(CheckpointStateLockPath(dir).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

TEST(CheckpointFilesTest, UpdateOfADamagedStateStartsANewList) {
  const std::string dir = TestDir();
  ASSERT_TRUE(WriteFileAtomically(CheckpointStatePath(dir), "{").ok());
  ASSERT_TRUE(UpdateCheckpointState(dir, [](CheckpointState* st) {
                EXPECT_TRUE(st->prefixes.empty());
                st->prefixes.push_back("m-1");
              }).ok());
  EXPECT_THAT(ReadCheckpointState(dir)->prefixes, ElementsAre("m-1"));
}

TEST(CheckpointFilesTest, UpdateThatCannotLockNamesTheLockFile) {
  const std::string dir = TestDir() + "/absent";
  absl::Status s = UpdateCheckpointState(dir, [](CheckpointState*) {});
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr(CheckpointStateLockPath(dir)));
}

TEST(CheckpointFilesTest, DeleteStaleShardsKeepsTheCurrentOnesAndOtherSteps) {
  const std::string dir = TestDir();
  for (const char* name :
       {"m-1.index.json", "m-1.shard-00000-of-00001.safetensors",
        "m-1.shard-00000-of-00001.abcd.safetensors",
        "m-1.shard-00000-of-00001.ef01.safetensors.tmp-0123456789abcdef",
        "m-10.shard-00000-of-00001.safetensors"}) {
    ASSERT_TRUE(WriteFileAtomically(dir + "/" + name, "x").ok());
  }
  ASSERT_TRUE(DeleteStaleShards(dir, "m-1",
                                {"m-1.shard-00000-of-00001.abcd.safetensors"})
                  .ok());
  EXPECT_THAT(
      Entries(dir),
      ElementsAre(
          "m-1.index.json", "m-1.shard-00000-of-00001.abcd.safetensors",
          "m-1.shard-00000-of-00001.ef01.safetensors.tmp-0123456789abcdef",
          "m-10.shard-00000-of-00001.safetensors"));
}

}  // namespace
}  // namespace train
}  // namespace distflow
