#include "runtime/rendezvous.h"

#include <string>
#include <utility>
#include <vector>

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

// A value another task pushed is answered before its receiver's work runs
// on the delivering thread; a local send completes after it.
TEST(LocalRendezvousTest, AnswerFirstRunsTheSendersCallbackBeforeTheWaiters) {
  for (const bool answer_first : {false, true}) {
    LocalRendezvous rendezvous;
    std::vector<std::string> order;
    rendezvous.RecvAsync("k", [&](const absl::Status& s, const Tensor& v) {
      EXPECT_TRUE(s.ok()) << s;
      EXPECT_EQ(v.scalar<float>(), 2.0f);
      order.push_back("receiver");
    });
    auto done = [&](const absl::Status& s) {
      EXPECT_TRUE(s.ok()) << s;
      order.push_back("sender");
    };
    if (answer_first) {
      rendezvous.SendAsyncAnswerFirst("k", Tensor::Scalar(2.0f), done);
    } else {
      rendezvous.SendAsync("k", Tensor::Scalar(2.0f), done);
    }
    const std::vector<std::string> want =
        answer_first ? std::vector<std::string>{"sender", "receiver"}
                     : std::vector<std::string>{"receiver", "sender"};
    EXPECT_EQ(order, want) << answer_first;
  }
}

// A value moved in is the receiver's alone while its callback runs (which
// may run the rest of a step): neither the rendezvous nor the sender keeps a
// reference, so the buffer is freed as soon as the receiver lets it go.
TEST(LocalRendezvousTest, TheReceiverHoldsTheOnlyReference) {
  for (const int order :
       {0, 1, 2}) {  // send first, receive first, answer first
    SCOPED_TRACE(order);
    LocalRendezvous rendezvous;
    long holders = 0;
    auto receive = [&] {
      rendezvous.RecvAsync("k", [&](const absl::Status& s, Tensor v) {
        ASSERT_TRUE(s.ok()) << s;
        holders = v.buffer().use_count();
      });
    };
    auto send = [&] {
      Tensor value = Tensor::Vector<float>({1, 2, 3});
      if (order == 2) {
        rendezvous.SendAsyncAnswerFirst("k", std::move(value),
                                        [](const absl::Status&) {});
      } else {
        rendezvous.SendAsync("k", std::move(value), [](const absl::Status&) {});
      }
    };
    if (order == 0) {
      send();
      receive();
    } else {
      receive();
      send();
    }
    EXPECT_EQ(holders, 1);
  }
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
