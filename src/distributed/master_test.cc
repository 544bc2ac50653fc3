// The master's answers for sessions it does not have: one closed here, and
// one made by an earlier process of the task (another Master, as a restarted
// task has).
#include "distributed/master.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

MasterEnv Env() {
  MasterEnv env;
  env.task_name = "/job:worker/replica:0/task:0";
  env.job_name = "worker";
  env.jobs = {{"worker", 1}};
  return env;
}

TEST(MasterTest, ClosedSessionIsNotFoundAndSaysClosed) {
  Master master(Env());
  auto handle = master.CreateSession(proto::GraphDef());
  ASSERT_TRUE(handle.ok()) << handle.status();
  ASSERT_TRUE(master.CloseSession(*handle).ok());
  absl::Status s = master.ExtendSession(*handle, proto::GraphDef());
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(*handle));
  EXPECT_THAT(s.message(), HasSubstr("closed"));
  EXPECT_FALSE(IsSessionLost(s));
}

TEST(MasterTest, SessionOfAnEarlierProcessIsLostAndAborted) {
  std::string handle;
  {
    Master before_restart(Env());
    auto made = before_restart.CreateSession(proto::GraphDef());
    ASSERT_TRUE(made.ok()) << made.status();
    handle = *made;
  }
  Master after_restart(Env());
  // Its own first session has the same number, not the same handle.
  auto own = after_restart.CreateSession(proto::GraphDef());
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_NE(*own, handle);
  auto out = after_restart.RunStep(handle, {}, {}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(absl::IsAborted(out.status())) << out.status();
  EXPECT_TRUE(IsSessionLost(out.status())) << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr(handle));
  EXPECT_THAT(out.status().message(),
              HasSubstr("/job:worker/replica:0/task:0"));
  EXPECT_TRUE(IsSessionLost(after_restart.ExtendSession(handle, {})));
  // Closing what is already gone is fine.
  EXPECT_TRUE(after_restart.CloseSession(handle).ok());
}

TEST(MasterTest, OnlyAbortedWithTheMessageIsALostSession) {
  EXPECT_FALSE(IsSessionLost(absl::AbortedError("a ps task restarted")));
  EXPECT_FALSE(IsSessionLost(absl::OkStatus()));
}

}  // namespace
}  // namespace distflow
