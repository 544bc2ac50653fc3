#include "runtime/rendezvous.h"

#include "gtest/gtest.h"

namespace distflow {
namespace {

TEST(LocalRendezvousTest, SendBeforeOrAfterRecvDeliversTheValue) {
  LocalRendezvous r;
  Tensor got;
  r.SendAsync("k1", Tensor::Scalar<float>(1),
              [](const absl::Status& s) { EXPECT_TRUE(s.ok()); });
  r.RecvAsync("k1", [&](const absl::Status& s, const Tensor& v) {
    ASSERT_TRUE(s.ok());
    got = v;
  });
  EXPECT_EQ(got.scalar<float>(), 1.0f);
  bool received = false;
  r.RecvAsync("k2", [&](const absl::Status& s, const Tensor& v) {
    received = s.ok() && v.scalar<float>() == 2.0f;
  });
  EXPECT_FALSE(received);
  r.SendAsync("k2", Tensor::Scalar<float>(2), [](const absl::Status&) {});
  EXPECT_TRUE(received);
}

TEST(LocalRendezvousTest, AbortWakesWaitersAndFailsLaterCalls) {
  LocalRendezvous r;
  absl::Status waiter_status;
  r.RecvAsync("k",
              [&](const absl::Status& s, const Tensor&) { waiter_status = s; });
  r.StartAbort(absl::UnavailableError("task gone"));
  EXPECT_TRUE(absl::IsUnavailable(waiter_status));
  absl::Status send_status;
  r.SendAsync("k2", Tensor::Scalar<float>(1),
              [&](const absl::Status& s) { send_status = s; });
  EXPECT_TRUE(absl::IsUnavailable(send_status));
}

}  // namespace
}  // namespace distflow
