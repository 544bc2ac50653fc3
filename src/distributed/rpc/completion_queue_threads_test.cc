// CompletionQueueThreads and ClientUnaryCall: a shutdown ends the calls in
// flight (their callbacks run, with CANCELLED) instead of waiting for their
// deadlines, a call made after it fails at once without the queue, and a
// handler that blocks does not stop the queue's other events.
#include "distributed/rpc/completion_queue_threads.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "distributed/rpc/client_unary_call.h"
#include "distributed/rpc/grpc_util.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

// A TCP port on 127.0.0.1 that accepts connections (the kernel completes the
// handshake) but never speaks HTTP/2: calls to it wait for their deadline.
class SilentPort {
 public:
  SilentPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot listen on 127.0.0.1";
    }
    address_ = absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));
  }
  ~SilentPort() { close(fd_); }
  const std::string& address() const { return address_; }

 private:
  int fd_ = -1;
  std::string address_;
};

// Starts a unary call to `stub` on `threads` with a one-hour deadline.
void StartHourLongCall(CompletionQueueThreads* threads, grpc::GenericStub* stub,
                       grpc::ByteBuffer* request, grpc::ByteBuffer* response,
                       ClientUnaryCall::DoneFn done) {
  auto ctx = std::make_shared<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::hours(1));
  ClientUnaryCall::Start(
      threads, std::move(ctx),
      [&](grpc::ClientContext* ctx, grpc::CompletionQueue* cq,
          grpc::Status* status, void* tag) {
        auto reader =
            stub->PrepareUnaryCall(ctx, "/test.Silent/Call", *request, cq);
        reader->StartCall();
        reader->Finish(response, status, tag);
        return std::shared_ptr<void>(std::move(reader));
      },
      std::move(done));
}

TEST(CompletionQueueThreadsTest, ShutdownCancelsCallsInFlight) {
  SilentPort port;
  grpc::GenericStub stub(NewChannel(port.address()));
  CompletionQueueThreads threads("test_rpc", nullptr, 2);
  grpc::Slice bytes(std::string("hello"));
  grpc::ByteBuffer request(&bytes, 1);
  grpc::ByteBuffer responses[3];
  std::atomic<int> cancelled{0};
  for (grpc::ByteBuffer& response : responses) {
    StartHourLongCall(&threads, &stub, &request, &response,
                      [&cancelled](const grpc::Status& s) {
                        if (s.error_code() == grpc::StatusCode::CANCELLED) {
                          ++cancelled;
                        }
                      });
  }
  const auto start = std::chrono::steady_clock::now();
  threads.Shutdown();
  EXPECT_EQ(cancelled.load(), 3);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// While the only polling thread is stuck in one call's callback, the
// standby thread delivers the other call's.
TEST(CompletionQueueThreadsTest, BlockedHandlerDoesNotStopTheQueue) {
  // A port nothing listens on: calls fail at once with UNAVAILABLE.
  std::string closed_address;
  {
    SilentPort port;
    closed_address = port.address();
  }
  grpc::GenericStub stub(NewChannel(closed_address));
  CompletionQueueThreads threads("test_rpc", nullptr, 1);
  grpc::Slice bytes(std::string("hello"));
  grpc::ByteBuffer request(&bytes, 1);
  grpc::ByteBuffer responses[2];
  absl::Notification other_done;
  std::atomic<bool> first{true};
  std::atomic<bool> delivered_while_blocked{false};
  for (grpc::ByteBuffer& response : responses) {
    StartHourLongCall(
        &threads, &stub, &request, &response, [&](const grpc::Status&) {
          if (first.exchange(false)) {
            // (A bound for a failure only: on a loaded machine the standby
            // thread may wait seconds for a core.)
            delivered_while_blocked =
                other_done.WaitForNotificationWithTimeout(absl::Seconds(30));
          } else {
            other_done.Notify();
          }
        });
  }
  threads.Shutdown();
  EXPECT_TRUE(delivered_while_blocked.load());
}

TEST(CompletionQueueThreadsTest, CallAfterShutdownFailsAtOnce) {
  CompletionQueueThreads threads("test_rpc", nullptr, 1);
  threads.Shutdown();
  EXPECT_TRUE(threads.closing());
  bool started = false;
  grpc::Status status;
  ClientUnaryCall::Start(
      &threads, std::make_shared<grpc::ClientContext>(),
      [&started](grpc::ClientContext*, grpc::CompletionQueue*, grpc::Status*,
                 void*) {
        started = true;
        return std::shared_ptr<void>();
      },
      [&status](const grpc::Status& s) { status = s; });
  EXPECT_FALSE(started);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_NE(status.error_message().find("shutting down"), std::string::npos)
      << status.error_message();
}

}  // namespace
}  // namespace distflow
