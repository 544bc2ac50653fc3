// Data connections (data_socket.h) against peers that stall, lie about sizes
// or make a call throw, on real sockets on 127.0.0.1: each is dropped with an
// error naming its address, and nothing waits forever or ends the process.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "distributed/rpc/data_connection.h"
#include "distributed/rpc/data_frames.h"
#include "distributed/rpc/data_listener.h"
#include "distributed/rpc/data_socket.h"
#include "distributed/rpc/tensor_wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/worker.pb.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

constexpr char kTask[] = "/job:ps/replica:0/task:3";

// Shortens the stall timeout for one test.
class ShortStall {
 public:
  explicit ShortStall(absl::Duration timeout) : before_(DataStallTimeout()) {
    SetDataStallTimeout(timeout);
  }
  ~ShortStall() { SetDataStallTimeout(before_); }

 private:
  const absl::Duration before_;
};

Tensor Floats(int64_t n) {
  Tensor t(DataType::kFloat, TensorShape({n}));
  auto values = t.flat<float>();
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(i);
  return t;
}

// A listener whose pushes are kept, or make the handler throw for keys
// starting with "throw".
class Listener {
 public:
  explicit Listener(DataListenerLimits limits = DataListenerLimits()) {
    DataListener::Handlers handlers;
    handlers.deliver = [this](int64_t, const std::string& key,
                              const Tensor& value, StatusCallback done) {
      if (key.rfind("throw", 0) == 0) throw std::runtime_error("kaboom");
      {
        absl::MutexLock lock(&mu_);
        received_[key] = value;
      }
      done(absl::OkStatus());
    };
    auto listener =
        DataListener::Create("127.0.0.1", nullptr, handlers, limits);
    EXPECT_TRUE(listener.ok()) << listener.status();
    listener_ = *std::move(listener);
  }
  DataListener* get() { return listener_.get(); }
  bool Received(const std::string& key) {
    absl::MutexLock lock(&mu_);
    return received_.count(key) > 0;
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, Tensor> received_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<DataListener> listener_;
};

// A socket connected to `port` on 127.0.0.1 whose reads give up after 10 s
// (a listener that never answers fails the test instead of hanging it).
int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  return fd;
}

// The address that the listener sees for the peer `fd`.
std::string LocalName(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));
}

void Send(int fd, const std::string& bytes) {
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  ASSERT_EQ(SendAll(fd, &iov, 1), absl::OkStatus());
}

// A raw first socket of a connection, accepted by `listener`.
int Accepted(DataListener* listener) {
  const int fd = Connect(listener->port());
  Send(fd, EncodeDataHello({listener->token(), 1, 0}));
  char accepted = 0;
  EXPECT_EQ(RecvAll(fd, &accepted, 1), absl::OkStatus());
  EXPECT_EQ(accepted, 1);
  return fd;
}

// Whether the listener closes `fd` (rather than the 10 s read timeout
// passing), and how long it took.
bool ClosedByListener(int fd, absl::Duration* took) {
  const absl::Time start = absl::Now();
  char byte;
  const absl::Status s = RecvAll(fd, &byte, 1);
  *took = absl::Now() - start;
  return absl::StrContains(s.message(), "closed by the peer");
}

// Half a frame header, then nothing: the listener drops the peer after the
// stall timeout, and logs its address.
TEST(DataStallTest, HalfAFrameHeaderIsDroppedNamingThePeer) {
  ShortStall stall(absl::Milliseconds(300));
  Listener listener;
  const int fd = Accepted(listener.get());
  testing::internal::CaptureStderr();
  Send(fd, std::string("\x64\x00\x00\x00\x0a\x01", 6));  // 100 bytes; 2 came
  absl::Duration took;
  const bool closed = ClosedByListener(fd, &took);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(closed);
  EXPECT_LT(took, absl::Seconds(5));
  EXPECT_THAT(log,
              HasSubstr(absl::StrCat("data connection from ", LocalName(fd))));
  EXPECT_THAT(log, HasSubstr("nothing for"));
  close(fd);
}

// A header sent a byte at a time, each within the stall timeout, must still
// come whole within it.
TEST(DataStallTest, ATrickledFrameHeaderIsDropped) {
  ShortStall stall(absl::Milliseconds(500));
  Listener listener;
  const int fd = Accepted(listener.get());
  Send(fd, std::string("\x40\x00\x00\x00", 4));
  bool sent_all = true;
  for (int i = 0; i < 40 && sent_all; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const char byte = 0;
    sent_all = send(fd, &byte, 1, MSG_NOSIGNAL) == 1;
  }
  EXPECT_FALSE(sent_all) << "the listener still reads a trickled header";
  close(fd);
}

// A push's frame and part of its bytes, then nothing: the peer is dropped,
// and the tensor is not delivered.
TEST(DataStallTest, HalfATensorIsDropped) {
  ShortStall stall(absl::Milliseconds(300));
  Listener listener;
  const int fd = Accepted(listener.get());
  const Tensor value = Floats(30'000);
  proto::DataFrame frame;
  frame.set_call_id(1);
  *frame.mutable_push() = PushHeaderFor(1, "half", value);
  ASSERT_EQ(SendFrame(fd, frame, value.raw_data(), 1000), absl::OkStatus());
  absl::Duration took;
  EXPECT_TRUE(ClosedByListener(fd, &took));
  EXPECT_LT(took, absl::Seconds(5));
  EXPECT_FALSE(listener.Received("half"));
  close(fd);
}

// A tensor larger than kMaxTensorBytes is refused from its header alone,
// naming it: nothing is allocated, and its bytes are not waited for.
TEST(DataFramesTest, ATensorOverTheLimitIsRefusedFromItsHeader) {
  Listener listener;
  const int fd = Accepted(listener.get());
  proto::DataFrame frame;
  frame.set_call_id(2);
  *frame.mutable_push() = PushHeaderFor(1, "huge", Floats(1));
  frame.mutable_push()->mutable_shape()->set_dim(0, int64_t{1} << 35);
  frame.mutable_push()->set_total_bytes(int64_t{1} << 37);
  ASSERT_EQ(SendFrame(fd, frame), absl::OkStatus());
  proto::DataAnswer answer;
  ASSERT_EQ(RecvFrameHeader(fd, &answer), absl::OkStatus());
  EXPECT_EQ(answer.code(),
            static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(answer.message(), HasSubstr("'huge'"));
  close(fd);
}

// Pushes past the listener's budget for tensors being received are refused
// with RESOURCE_EXHAUSTED naming the tensor; the connection goes on.
TEST(DataFramesTest, APushOverTheReceivingBudgetIsRefusedAndTheRestGoOn) {
  DataListenerLimits limits;
  limits.receiving_bytes = 8000;
  Listener listener(limits);
  const int fd = Accepted(listener.get());
  const Tensor big = Floats(3000);  // 12,000 bytes
  proto::DataFrame frame;
  frame.set_call_id(3);
  *frame.mutable_push() = PushHeaderFor(1, "big", big);
  ASSERT_EQ(SendFrame(fd, frame, big.raw_data(), big.TotalBytes()),
            absl::OkStatus());
  proto::DataAnswer answer;
  ASSERT_EQ(RecvFrameHeader(fd, &answer), absl::OkStatus());
  EXPECT_EQ(answer.code(),
            static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(answer.message(), HasSubstr("'big'"));
  const Tensor small = Floats(100);
  frame.set_call_id(4);
  *frame.mutable_push() = PushHeaderFor(1, "small", small);
  ASSERT_EQ(SendFrame(fd, frame, small.raw_data(), small.TotalBytes()),
            absl::OkStatus());
  ASSERT_EQ(RecvFrameHeader(fd, &answer), absl::OkStatus());
  EXPECT_EQ(answer.call_id(), 4u);
  EXPECT_EQ(answer.code(), 0) << answer.message();
  EXPECT_TRUE(listener.Received("small"));
  EXPECT_FALSE(listener.Received("big"));
  close(fd);
}

// A call whose handler throws is answered INTERNAL and ends its connection;
// the process and the listener go on.
TEST(DataListenerTest, ACallThatThrowsIsAnsweredAndTheListenerGoesOn) {
  Listener listener;
  const int fd = Accepted(listener.get());
  const Tensor value = Floats(10);
  proto::DataFrame frame;
  frame.set_call_id(5);
  *frame.mutable_push() = PushHeaderFor(1, "throw_me", value);
  ASSERT_EQ(SendFrame(fd, frame, value.raw_data(), value.TotalBytes()),
            absl::OkStatus());
  proto::DataAnswer answer;
  ASSERT_EQ(RecvFrameHeader(fd, &answer), absl::OkStatus());
  EXPECT_EQ(answer.call_id(), 5u);
  EXPECT_EQ(answer.code(), static_cast<int>(absl::StatusCode::kInternal));
  EXPECT_THAT(answer.message(), HasSubstr("kaboom"));
  char byte;
  EXPECT_FALSE(RecvAll(fd, &byte, 1).ok());
  close(fd);

  const int again = Accepted(listener.get());
  frame.set_call_id(6);
  *frame.mutable_push() = PushHeaderFor(1, "fine", value);
  ASSERT_EQ(SendFrame(again, frame, value.raw_data(), value.TotalBytes()),
            absl::OkStatus());
  ASSERT_EQ(RecvFrameHeader(again, &answer), absl::OkStatus());
  EXPECT_EQ(answer.code(), 0) << answer.message();
  close(again);
}

// A task that says hello, takes a push and answers with half an answer frame:
// the sender's push fails within the stall timeout, naming the task and its
// address, instead of its reader waiting forever.
TEST(DataStallTest, HalfAnAnswerFailsTheSendersCallsNamingTheTask) {
  ShortStall stall(absl::Milliseconds(300));
  const int server = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(server, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(listen(server, 4), 0);
  ASSERT_EQ(getsockname(server, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);
  const std::string address = absl::StrCat("127.0.0.1:", port);
  absl::Notification finished;
  std::thread task([&] {
    const int fd = accept(server, nullptr, nullptr);
    char hello[kDataHelloBytes];
    if (RecvAll(fd, hello, sizeof(hello)).ok()) {
      Send(fd, std::string(1, '\1'));
      proto::DataFrame frame;
      if (RecvFrameHeader(fd, &frame).ok()) {
        Send(fd, std::string("\x20\x00\x00\x00\x09", 5));
      }
    }
    finished.WaitForNotification();
    close(fd);
  });
  DataConnection connection("127.0.0.1", port, 42, kTask, address);
  for (int i = 0; i < 500; ++i) {
    if (connection.state() != DataConnection::State::kConnecting) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(connection.state(), DataConnection::State::kReady);
  absl::Notification done;
  absl::Status status;
  const absl::Time start = absl::Now();
  ASSERT_TRUE(connection.Push(1, "k", Floats(4), absl::Minutes(10),
                              [&](const absl::Status& s) {
                                status = s;
                                done.Notify();
                              }));
  EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(4)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(4));
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr(kTask));
  EXPECT_THAT(status.message(), HasSubstr(address));
  EXPECT_THAT(status.message(), HasSubstr("nothing for"));
  finished.Notify();
  task.join();
  close(server);
}

// The frame decoders on their own: lengths over the limit, headers that do
// not parse, answers that announce impossible sizes or unknown codes.
TEST(DataFramesTest, DecodersRefuseWhatTheyCannotTrust) {
  const unsigned char too_long[4] = {0xff, 0xff, 0xff, 0x7f};
  EXPECT_TRUE(absl::IsInvalidArgument(DecodeFrameLength(too_long).status()));
  const unsigned char ok[4] = {0x10, 0, 0, 0};
  EXPECT_EQ(DecodeFrameLength(ok).value_or(0), 16u);
  proto::DataFrame frame;
  EXPECT_TRUE(
      absl::IsInvalidArgument(ParseFrameHeader("\xff\xff\xff", &frame)));
  proto::DataAnswer answer;
  absl::Status carried;
  answer.set_run_graph_bytes(-1);
  EXPECT_TRUE(absl::IsInvalidArgument(CheckDataAnswer(answer, &carried)));
  answer.set_run_graph_bytes(int64_t{1} << 40);
  EXPECT_TRUE(absl::IsInvalidArgument(CheckDataAnswer(answer, &carried)));
  answer.set_run_graph_bytes(0);
  answer.set_code(1234);
  answer.set_message("odd");
  ASSERT_TRUE(CheckDataAnswer(answer, &carried).ok());
  EXPECT_EQ(carried.code(), absl::StatusCode::kUnknown);
  EXPECT_THAT(carried.message(), HasSubstr("odd"));
  // Stripe parts that overflow when summed.
  *frame.mutable_push() = PushHeaderFor(1, "parts", Floats(3000));
  frame.add_stripe_bytes(int64_t{1} << 62);
  frame.add_stripe_bytes(int64_t{1} << 62);
  absl::StatusOr<DataPush> push = CheckDataPush(frame, 2);
  EXPECT_TRUE(absl::IsInvalidArgument(push.status())) << push.status();
  EXPECT_THAT(push.status().message(), HasSubstr("'parts'"));
  frame.clear_stripe_bytes();
  frame.add_stripe_bytes(4000);
  push = CheckDataPush(frame, 1);
  ASSERT_TRUE(push.ok()) << push.status();
  EXPECT_EQ(push->first, 8000);
  EXPECT_EQ(push->total, 12000);
}

}  // namespace
}  // namespace distflow
