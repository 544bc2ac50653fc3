#include "base/cancellation.h"

#include "gtest/gtest.h"

namespace distflow {
namespace {

TEST(CancellationManagerTest, CallbacksRunOnceOnCancel) {
  CancellationManager cm;
  int runs = 0;
  CancellationManager::Token token;
  ASSERT_TRUE(cm.RegisterCallback([&] { ++runs; }, &token));
  EXPECT_FALSE(cm.IsCancelled());
  cm.StartCancel();
  cm.StartCancel();
  EXPECT_TRUE(cm.IsCancelled());
  EXPECT_EQ(runs, 1);
  EXPECT_FALSE(cm.DeregisterCallback(token));
}

TEST(CancellationManagerTest, RegisterAfterCancelIsRefused) {
  CancellationManager cm;
  cm.StartCancel();
  CancellationManager::Token token;
  EXPECT_FALSE(cm.RegisterCallback([] {}, &token));
}

TEST(CancellationManagerTest, DeregisteredCallbackDoesNotRun) {
  CancellationManager cm;
  bool ran = false;
  CancellationManager::Token token;
  ASSERT_TRUE(cm.RegisterCallback([&] { ran = true; }, &token));
  EXPECT_TRUE(cm.DeregisterCallback(token));
  cm.StartCancel();
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace distflow
