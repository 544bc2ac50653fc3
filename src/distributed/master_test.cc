// The master's answers for sessions it does not have: one closed here, and
// one made by an earlier process of the task (another Master, as a restarted
// task has).
#include "distributed/master.h"

#include "absl/time/clock.h"

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

// A master whose kept-alive sessions expire after 2 s of silence (the
// clients below speak every 100 ms).
MasterEnv ExpiringEnv() {
  MasterEnv env = Env();
  env.remote_session_timeout = absl::Seconds(2);
  return env;
}

// Waits up to 10 s (a loaded machine) for `master` to hold `n` sessions.
bool AwaitSessions(Master* master, int n) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (master->NumSessions() != n) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return true;
}

TEST(MasterTest, SilentKeptAliveSessionIsClosedAndItsClientToldWhy) {
  Master master(ExpiringEnv());
  auto handle = master.CreateSession(proto::GraphDef(), /*kept_alive=*/true);
  ASSERT_TRUE(handle.ok()) << handle.status();
  EXPECT_EQ(master.NumSessions(), 1);
  ASSERT_TRUE(AwaitSessions(&master, 0));
  auto out = master.RunStep(*handle, {}, {}, {});
  ASSERT_FALSE(out.ok());
  // ABORTED: a client that was only paused creates a new session, as a
  // monitored session does by itself.
  EXPECT_TRUE(absl::IsAborted(out.status())) << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr(*handle));
  EXPECT_THAT(out.status().message(), HasSubstr("said nothing for 2s"));
  EXPECT_THAT(out.status().message(), HasSubstr("create a new session"));
  EXPECT_FALSE(IsSessionLost(out.status()));
  EXPECT_TRUE(absl::IsAborted(master.KeepSession(*handle)));
}

TEST(MasterTest, KeptAliveSessionStaysWhileItsClientSpeaks) {
  Master master(ExpiringEnv());
  auto kept = master.CreateSession(proto::GraphDef(), /*kept_alive=*/true);
  // Sessions of this process, and of clients that do not keep them alive,
  // stay until closed.
  auto local = master.CreateSession(proto::GraphDef());
  ASSERT_TRUE(kept.ok() && local.ok());
  // Well past the timeout, by keep-alives and then by steps.
  for (int i = 0; i < 30; ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    ASSERT_EQ(master.KeepSession(*kept), absl::OkStatus()) << i;
  }
  for (int i = 0; i < 25; ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    ASSERT_TRUE(master.RunStep(*kept, {}, {}, {}).ok()) << i;
  }
  EXPECT_EQ(master.NumSessions(), 2);
  ASSERT_TRUE(AwaitSessions(&master, 1));  // the client fell silent
  EXPECT_TRUE(master.RunStep(*local, {}, {}, {}).ok());
  // A closed session is NOT_FOUND as before, not told it went silent.
  ASSERT_TRUE(master.CloseSession(*local).ok());
  EXPECT_TRUE(absl::IsNotFound(master.KeepSession(*local)));
}

}  // namespace
}  // namespace distflow
