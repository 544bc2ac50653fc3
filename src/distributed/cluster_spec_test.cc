#include <cstdio>
#include <fstream>
#include <string>

#include "distflow/cluster.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/cluster.pb.h"

namespace distflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The error of `result`, which must have failed with INVALID_ARGUMENT.
template <typename T>
std::string InvalidArgument(const absl::StatusOr<T>& result) {
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument)
      << result.status();
  return std::string(result.status().message());
}

TEST(ClusterSpecTest, CreateKeepsJobsAndTaskOrder) {
  auto spec = ClusterSpec::Create(
      {{"worker", {"w0:2222", "w1:2222", "w2:2222"}}, {"ps", {"p0:2222"}}});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_FALSE(spec->empty());
  EXPECT_THAT(spec->jobs(), ElementsAre("ps", "worker"));
  EXPECT_TRUE(spec->HasJob("ps"));
  EXPECT_FALSE(spec->HasJob("chief"));
  EXPECT_EQ(spec->num_tasks("worker"), 3);
  EXPECT_EQ(spec->num_tasks("chief"), 0);
  EXPECT_THAT(spec->tasks("worker"),
              ElementsAre("w0:2222", "w1:2222", "w2:2222"));
  EXPECT_TRUE(spec->tasks("evaluator").empty());
  EXPECT_EQ(*spec->TaskAddress("worker", 2), "w2:2222");
  EXPECT_THAT(
      spec->TaskDeviceNames(),
      ElementsAre("/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0",
                  "/job:worker/replica:0/task:1",
                  "/job:worker/replica:0/task:2"));
  EXPECT_EQ(spec->DebugString(),
            "ps: [p0:2222], worker: [w0:2222, w1:2222, w2:2222]");
  EXPECT_EQ(spec->JobSummary(), "ps (1 task), worker (3 tasks)");
}

TEST(ClusterSpecTest, AcceptsIpv4Ipv6AndPortBounds) {
  EXPECT_TRUE(ClusterSpec::Create({{"worker",
                                    {"10.0.0.1:0", "[::1]:65535",
                                     "localhost:2222", "a-b.example.com:1"}}})
                  .ok());
}

TEST(ClusterSpecTest, EmptyClusterHasNoJobs) {
  ClusterSpec spec;
  EXPECT_TRUE(spec.empty());
  EXPECT_TRUE(spec.jobs().empty());
  EXPECT_EQ(spec.JobSummary(), "no jobs");
  auto created = ClusterSpec::Create({});
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(*created, spec);
}

TEST(ClusterSpecTest, RejectsEmptyJob) {
  std::string msg = InvalidArgument(ClusterSpec::Create({{"ps", {}}}));
  EXPECT_THAT(msg, HasSubstr("job 'ps' has no tasks"));
}

TEST(ClusterSpecTest, RejectsMalformedJobNames) {
  for (const char* job : {"", "1worker", "my-job", "ps/1", "job:x"}) {
    std::string msg = InvalidArgument(ClusterSpec::Create({{job, {"h:1"}}}));
    EXPECT_THAT(msg, HasSubstr(std::string("job name '") + job + "'")) << job;
  }
}

TEST(ClusterSpecTest, RejectsDuplicateAddressNamingBothTasks) {
  std::string msg = InvalidArgument(
      ClusterSpec::Create({{"ps", {"h:2222"}}, {"worker", {"w:1", "h:2222"}}}));
  EXPECT_THAT(msg, HasSubstr("'h:2222' is used twice"));
  EXPECT_THAT(msg, HasSubstr("job 'ps' task 0"));
  EXPECT_THAT(msg, HasSubstr("job 'worker' task 1"));
}

TEST(ClusterSpecTest, RejectsBadAddresses) {
  struct Case {
    const char* address;
    const char* why;
  };
  for (const Case& c :
       {Case{"host", "no ':port'"}, Case{":2222", "the host is empty"},
        Case{"host:", "the port is empty"},
        Case{"host:http", "'http' is not a number"},
        Case{"host:-1", "'-1' is not a number"},
        Case{"host:65536", "out of range"},
        Case{"host:99999999999", "out of range"}, Case{"::1:22", "brackets"},
        Case{"[::1]", "no ':port'"}, Case{"[::1:22", "no ']'"},
        Case{"a b:1", "contains ' '"}, Case{"h/x:1", "contains '/'"}}) {
    std::string msg =
        InvalidArgument(ClusterSpec::Create({{"worker", {"ok:1", c.address}}}));
    EXPECT_THAT(msg, HasSubstr(std::string("'") + c.address + "'"))
        << c.address;
    EXPECT_THAT(msg, HasSubstr("job 'worker' task 1")) << c.address;
    EXPECT_THAT(msg, HasSubstr(c.why)) << c.address << ": " << msg;
  }
}

TEST(ClusterSpecTest, TaskAddressOutOfRangeListsJobs) {
  auto spec =
      ClusterSpec::Create({{"ps", {"p:1"}}, {"worker", {"w:1", "w:2"}}});
  ASSERT_TRUE(spec.ok());
  for (auto [job, index] : {std::pair<const char*, int>{"worker", 2},
                            {"worker", -1},
                            {"chief", 0}}) {
    std::string msg = InvalidArgument(spec->TaskAddress(job, index));
    EXPECT_THAT(msg, HasSubstr(std::string("task ") + std::to_string(index) +
                               " of job '" + job + "'"));
    EXPECT_THAT(msg, HasSubstr("ps (1 task), worker (2 tasks)"));
  }
}

TEST(ClusterSpecTest, FromHostListsSplitsCommasAndSkipsEmptyLists) {
  auto spec = ClusterSpec::FromHostLists("p0:1, p1:1", "w0:1");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->tasks("ps"), ElementsAre("p0:1", "p1:1"));
  EXPECT_THAT(spec->tasks("worker"), ElementsAre("w0:1"));

  auto only_workers = ClusterSpec::FromHostLists("", "w0:1,w1:1");
  ASSERT_TRUE(only_workers.ok());
  EXPECT_THAT(only_workers->jobs(), ElementsAre("worker"));

  std::string msg = InvalidArgument(ClusterSpec::FromHostLists("p:1,,p:2", ""));
  EXPECT_THAT(msg, HasSubstr("ps_hosts 'p:1,,p:2' has an empty entry"));
  msg = InvalidArgument(ClusterSpec::FromHostLists("p:1", "w:x"));
  EXPECT_THAT(msg, HasSubstr("'w:x'"));
}

TEST(ClusterSpecTest, FromJson) {
  auto spec = ClusterSpec::FromJson(
      R"({"chief": ["c:2222"], "worker": ["w0:2222", "w1:2222"], "ps": ["p:2222"]})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto expected = ClusterSpec::Create({{"chief", {"c:2222"}},
                                       {"worker", {"w0:2222", "w1:2222"}},
                                       {"ps", {"p:2222"}}});
  EXPECT_EQ(*spec, *expected);
}

TEST(ClusterSpecTest, FromJsonErrors) {
  EXPECT_THAT(InvalidArgument(ClusterSpec::FromJson(R"({"ps": ["p:1")")),
              HasSubstr("is malformed"));
  EXPECT_THAT(InvalidArgument(ClusterSpec::FromJson(R"(["p:1"])")),
              HasSubstr("must be a JSON object"));
  EXPECT_THAT(InvalidArgument(ClusterSpec::FromJson(R"({"ps": "p:1"})")),
              HasSubstr("job 'ps' must be a list"));
  EXPECT_THAT(InvalidArgument(ClusterSpec::FromJson(R"({"ps": ["p:1", 7]})")),
              HasSubstr("job 'ps' task 1 must be a \"host:port\" string"));
  EXPECT_THAT(InvalidArgument(ClusterSpec::FromJson(R"({"ps": []})")),
              HasSubstr("job 'ps' has no tasks"));
}

TEST(ClusterSpecTest, FromJsonFile) {
  const std::string path =
      ::testing::TempDir() + "/cluster_spec_test_cluster.json";
  {
    std::ofstream out(path);
    out << R"({"ps": ["p:1"], "worker": ["w:1"]})";
  }
  auto spec = ClusterSpec::FromJsonFile(path);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->DebugString(), "ps: [p:1], worker: [w:1]");
  {
    std::ofstream out(path);
    out << "{not json";
  }
  EXPECT_THAT(InvalidArgument(ClusterSpec::FromJsonFile(path)),
              HasSubstr(path));
  std::remove(path.c_str());
  auto missing = ClusterSpec::FromJsonFile(path);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr(path));
}

TEST(ClusterSpecTest, ProtoRoundTrip) {
  auto spec = ClusterSpec::Create(
      {{"ps", {"p0:1", "p1:1"}}, {"worker", {"w0:1", "w1:1", "w2:1"}}});
  ASSERT_TRUE(spec.ok());
  proto::ClusterDef def;
  spec->ToProto(&def);
  ASSERT_EQ(def.job_size(), 2);
  EXPECT_EQ(def.job(1).name(), "worker");
  EXPECT_EQ(def.job(1).tasks().at(2), "w2:1");
  auto back = ClusterSpec::FromProto(def);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *spec);
}

TEST(ClusterSpecTest, FromProtoRejectsGapsAndDuplicateJobs) {
  proto::ClusterDef def;
  proto::JobDef* job = def.add_job();
  job->set_name("worker");
  (*job->mutable_tasks())[0] = "w0:1";
  (*job->mutable_tasks())[2] = "w2:1";
  EXPECT_THAT(InvalidArgument(ClusterSpec::FromProto(def)),
              HasSubstr("job 'worker' has task index 2"));

  proto::ClusterDef twice;
  for (int i = 0; i < 2; ++i) {
    proto::JobDef* j = twice.add_job();
    j->set_name("ps");
    (*j->mutable_tasks())[0] = i == 0 ? "a:1" : "b:1";
  }
  EXPECT_THAT(InvalidArgument(ClusterSpec::FromProto(twice)),
              HasSubstr("job 'ps' twice"));
}

}  // namespace
}  // namespace distflow
