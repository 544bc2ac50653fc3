// Data connections (data_socket.h): the two ends against each other on
// 127.0.0.1, and tasks of a real cluster that push large tensors on them.
#include "distributed/rpc/data_connection.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/gathered_tensor.h"
#include "core/tensor_coding.h"
#include "distributed/rpc/data_listener.h"
#include "distributed/rpc/data_socket.h"
#include "distributed/rpc/local_socket.h"
#include "distributed/rpc/tensor_wire.h"
#include "distributed/rpc/test_cluster.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/worker.pb.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

constexpr char kTask[] = "/job:ps/replica:0/task:0";

// A tensor of `n` floats, each a function of its index and `seed`.
Tensor Pattern(int64_t n, float seed) {
  Tensor t(DataType::kFloat, TensorShape({n}));
  auto values = t.flat<float>();
  for (int64_t i = 0; i < n; ++i) values[i] = seed + static_cast<float>(i % 1000);
  return t;
}

bool SameValues(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

// The receiving end: keeps what arrives, and answers at once (with the
// error set for a key in `refuse`) or, for keys in `hold`, when the test
// says. Same-host offers are answered as refused (their header kept);
// RunGraph calls with a fetch of `fetch`, or held for the steps in `hold`.
class Receiver {
 public:
  Receiver() {
    DataListener::Handlers handlers;
    handlers.offer = [this](const proto::PushTensorHeader& header,
                            proto::PushTensorResponse* response,
                            StatusCallback done) {
      {
        absl::MutexLock lock(&mu_);
        offers_.push_back(header);
      }
      response->set_same_host_refused("not on this host");
      done(absl::OkStatus());
    };
    handlers.run_graph = [this](const proto::RunGraphRequest* request,
                                proto::RunGraphResponse* response,
                                StatusCallback done) {
      absl::Duration busy;
      {
        absl::MutexLock lock(&mu_);
        if (held_keys_.count(absl::StrCat("step ", request->step_id())) > 0) {
          held_.push_back(std::move(done));
          return;
        }
        auto it = busy_.find(request->step_id());
        if (it != busy_.end()) busy = it->second;
        TensorToProto(fetch_, response->add_fetch());
      }
      // A partition's first kernels, run on the thread that read the call.
      absl::SleepFor(busy);
      done(absl::OkStatus());
    };
    handlers.abandoned = [this](const proto::RunGraphRequest& request) {
      absl::MutexLock lock(&mu_);
      abandoned_.push_back(request.step_id());
    };
    handlers.deliver = [this](int64_t step_id, const std::string& key,
                              const Tensor& value, StatusCallback done) {
          absl::Status answer;
          {
            absl::MutexLock lock(&mu_);
            received_[key] = value;
            steps_[key] = step_id;
            if (held_keys_.count(key) > 0) {
              held_.push_back(std::move(done));
              return;
            }
            auto refused = refuse_.find(key);
            if (refused != refuse_.end()) answer = refused->second;
          }
          done(answer);
    };
    auto listener = DataListener::Create("127.0.0.1", nullptr, handlers);
    EXPECT_TRUE(listener.ok()) << listener.status();
    listener_ = *std::move(listener);
  }

  DataListener* listener() { return listener_.get(); }
  void Refuse(const std::string& key, absl::Status error) {
    absl::MutexLock lock(&mu_);
    refuse_[key] = std::move(error);
  }
  void Hold(const std::string& key) {
    absl::MutexLock lock(&mu_);
    held_keys_.insert(key);
  }
  // Waits (up to 10 s) for `n` held pushes.
  void AwaitHeld(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return held_.size() >= n;
    };
    EXPECT_TRUE(
        mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10)));
  }
  // Answers the held pushes OK.
  void AnswerHeld() {
    std::vector<StatusCallback> held;
    {
      absl::MutexLock lock(&mu_);
      held = std::move(held_);
      held_.clear();
    }
    for (auto& done : held) done(absl::OkStatus());
  }
  Tensor Received(const std::string& key) {
    absl::MutexLock lock(&mu_);
    auto it = received_.find(key);
    return it == received_.end() ? Tensor() : it->second;
  }
  int64_t StepOf(const std::string& key) {
    absl::MutexLock lock(&mu_);
    return steps_[key];
  }
  // RunGraph of `step_id` keeps the thread that read it for `busy` before
  // it answers.
  void Busy(int64_t step_id, absl::Duration busy) {
    absl::MutexLock lock(&mu_);
    busy_[step_id] = busy;
  }
  void SetFetch(Tensor fetch) {
    absl::MutexLock lock(&mu_);
    fetch_ = std::move(fetch);
  }
  std::vector<proto::PushTensorHeader> Offers() {
    absl::MutexLock lock(&mu_);
    return offers_;
  }
  // Waits (up to 10 s) for `n` abandoned steps; their ids.
  std::vector<int64_t> AwaitAbandoned(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return abandoned_.size() >= n;
    };
    EXPECT_TRUE(
        mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10)));
    return abandoned_;
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, Tensor> received_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> steps_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Status> refuse_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> held_keys_ ABSL_GUARDED_BY(mu_);
  std::vector<StatusCallback> held_ ABSL_GUARDED_BY(mu_);
  Tensor fetch_ ABSL_GUARDED_BY(mu_) = Tensor::Scalar(1.0f);
  std::vector<proto::PushTensorHeader> offers_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> abandoned_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, absl::Duration> busy_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<DataListener> listener_;
};

// Waits up to 5 s for the connection to leave kConnecting.
DataConnection::State Settled(const DataConnection& connection) {
  for (int i = 0; i < 500; ++i) {
    if (connection.state() != DataConnection::State::kConnecting) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return connection.state();
}

// A push's outcome, for waiting on.
struct Outcome {
  absl::Notification done;
  absl::Status status;
  StatusCallback Callback() {
    return [this](const absl::Status& s) {
      status = s;
      done.Notify();
    };
  }
  absl::Status Wait() {
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
    return status;
  }
};

// Starts a RunGraph of step `step_id` (no graph, no feeds) on `connection`:
// its answer goes to `response` and `outcome`. Whether the connection took it.
bool StartStep(DataConnection& connection, int64_t step_id,
               absl::Duration deadline, proto::RunGraphResponse* response,
               Outcome* outcome) {
  proto::RunGraphRequest request;
  request.set_step_id(step_id);
  return connection.RunGraph(request, response, deadline, outcome->Callback());
}

std::unique_ptr<DataConnection> ConnectTo(DataListener* listener,
                                          uint64_t token, int sockets = 1) {
  return std::make_unique<DataConnection>(
      "127.0.0.1", listener->port(), token, kTask,
      absl::StrCat("127.0.0.1:", listener->port()), sockets);
}
// With the listener's own token, as a sender that was offered it.
std::unique_ptr<DataConnection> ConnectTo(DataListener* listener,
                                          int sockets = 1) {
  return ConnectTo(listener, listener->token(), sockets);
}

// Connections of one socket, and of two and three (large pushes split across
// them: data_socket.h).
class DataConnectionSocketsTest : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Sockets, DataConnectionSocketsTest,
                         ::testing::Values(1, 2, 3));

TEST_P(DataConnectionSocketsTest, OverlappingPushesArriveWithTheirBytes) {
  Receiver receiver;
  auto connection = ConnectTo(receiver.listener(), GetParam());
  ASSERT_EQ(Settled(*connection), DataConnection::State::kReady)
      << connection->failure();
  EXPECT_EQ(connection->sockets(), GetParam());
  std::vector<Tensor> sent;
  std::vector<std::unique_ptr<Outcome>> outcomes;
  for (int i = 0; i < 8; ++i) {
    // 1 MiB and more (several writes and reads per tensor; sizes that are no
    // multiple of a page), the smallest size that is split across the
    // sockets, and a tensor just below it.
    const int64_t n = i == 6   ? kStripeMinBytes / 4
                      : i == 7 ? kStripeMinBytes / 4 - 1
                               : (int64_t{1} << 18) + i * 1001;
    sent.push_back(Pattern(n, 10.0f * i));
    outcomes.push_back(std::make_unique<Outcome>());
    ASSERT_TRUE(connection->Push(100 + i, absl::StrCat("t", i), sent.back(),
                                 absl::Seconds(10), outcomes.back()->Callback()));
  }
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(outcomes[i]->Wait(), absl::OkStatus()) << i;
    const std::string key = absl::StrCat("t", i);
    EXPECT_TRUE(SameValues(receiver.Received(key), sent[i])) << key;
    EXPECT_EQ(receiver.StepOf(key), 100 + i);
  }
  EXPECT_EQ(connection->answered(), 8);
  // All but the last went partly on the stripes, if there are any.
  EXPECT_EQ(receiver.listener()->striped(), GetParam() > 1 ? 7 : 0);
}

// A gathered tensor goes from its parts, more of them than one write takes,
// and arrives as their elements end to end (split across the sockets at
// places that fall inside parts).
TEST_P(DataConnectionSocketsTest, GatheredTensorIsWrittenFromItsParts) {
  Receiver receiver;
  auto connection = ConnectTo(receiver.listener(), GetParam());
  ASSERT_EQ(Settled(*connection), DataConnection::State::kReady)
      << connection->failure();
  std::vector<Tensor> parts;
  for (int i = 0; i < 150; ++i) {
    parts.push_back(Pattern(i % 10 == 0 ? 0 : 1000 + 313 * i, 1.0f * i));
  }
  absl::StatusOr<Tensor> gathered = GatherTensors(DataType::kFloat, parts);
  ASSERT_TRUE(gathered.ok()) << gathered.status();
  Outcome outcome;
  ASSERT_TRUE(connection->Push(7, "gathered", *gathered, absl::Seconds(10),
                               outcome.Callback()));
  EXPECT_EQ(outcome.Wait(), absl::OkStatus());
  EXPECT_TRUE(SameValues(receiver.Received("gathered"), *gathered));
  EXPECT_EQ(receiver.listener()->striped(), GetParam() > 1 ? 1 : 0);
}

TEST(DataConnectionTest, ARefusedPushFailsAloneAndTheConnectionGoesOn) {
  Receiver receiver;
  receiver.Refuse("bad", absl::AbortedError("step 7 was aborted"));
  auto connection = ConnectTo(receiver.listener());
  ASSERT_EQ(Settled(*connection), DataConnection::State::kReady);
  Outcome bad, good;
  ASSERT_TRUE(connection->Push(7, "bad", Pattern(1 << 16, 1), absl::Seconds(10),
                               bad.Callback()));
  ASSERT_TRUE(connection->Push(8, "good", Pattern(1 << 16, 2),
                               absl::Seconds(10), good.Callback()));
  EXPECT_EQ(bad.Wait(), absl::AbortedError("step 7 was aborted"));
  EXPECT_EQ(good.Wait(), absl::OkStatus());
  EXPECT_EQ(connection->state(), DataConnection::State::kReady);
}

TEST(DataConnectionTest, AnotherServersTokenIsRefused) {
  Receiver receiver;
  auto connection =
      ConnectTo(receiver.listener(), receiver.listener()->token() + 1);
  ASSERT_EQ(Settled(*connection), DataConnection::State::kRefused);
  EXPECT_THAT(connection->failure(), HasSubstr("not the server"));
  Outcome outcome;
  StatusCallback done = outcome.Callback();
  EXPECT_FALSE(connection->Push(1, "t", Pattern(16, 0), absl::Seconds(1),
                                std::move(done)));
  EXPECT_TRUE(done != nullptr);  // left to the caller
}

TEST(DataConnectionTest, APortWithoutListenerIsRefused) {
  // A port held by a socket that does not listen: nobody else gets it.
  auto reserved = PortReservation::Create("127.0.0.1");
  ASSERT_TRUE(reserved.ok()) << reserved.status();
  DataConnection connection("127.0.0.1", (*reserved)->port(), 1, kTask,
                            "127.0.0.1:1");
  ASSERT_EQ(Settled(connection), DataConnection::State::kRefused);
  EXPECT_THAT(connection.failure(), HasSubstr("refused"));
}

// A task that says hello back, then neither reads nor answers (stopped or
// hung); `connection` is connected to it.
struct SilentTask {
  explicit SilentTask(int sockets = 1) {
    listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)),
              0);
    EXPECT_EQ(listen(listener, sockets), 0);
    EXPECT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len),
              0);
    connection = std::make_unique<DataConnection>(
        "127.0.0.1", ntohs(addr.sin_port), 42, kTask, "127.0.0.1:1", sockets);
    // Each socket's hello is taken, and then nothing more.
    for (int i = 0; i < sockets; ++i) {
      const int peer = accept(listener, nullptr, nullptr);
      EXPECT_GE(peer, 0);
      char hello[kDataHelloBytes];
      EXPECT_EQ(RecvAll(peer, hello, sizeof(hello)), absl::OkStatus());
      char accepted = 1;
      iovec iov{&accepted, 1};
      EXPECT_EQ(SendAll(peer, &iov, 1), absl::OkStatus());
      peers.push_back(peer);
    }
    EXPECT_EQ(Settled(*connection), DataConnection::State::kReady);
    EXPECT_EQ(connection->sockets(), sockets);
  }
  ~SilentTask() {
    connection.reset();
    for (const int peer : peers) close(peer);
    close(listener);
  }
  int listener = -1;
  std::vector<int> peers;
  std::unique_ptr<DataConnection> connection;
};

// A task that stops reading (stopped, or hung): a push that cannot be
// written by its deadline ends the connection, so that later pushes go over
// gRPC instead of queueing behind it (and the stripes' writers, stuck in
// their writes too, end with it).
TEST_P(DataConnectionSocketsTest, APushThatCannotBeWrittenByItsDeadlineEndsIt) {
  SilentTask task(GetParam());
  DataConnection& connection = *task.connection;
  // Far more than the sockets' buffers hold.
  Outcome stuck;
  ASSERT_TRUE(connection.Push(1, "stuck", Pattern(int64_t{16} << 20, 0),
                              absl::Milliseconds(300), stuck.Callback()));
  EXPECT_TRUE(absl::IsDeadlineExceeded(stuck.Wait())) << stuck.status;
  for (int i = 0; i < 300 && connection.state() == DataConnection::State::kReady;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(connection.state(), DataConnection::State::kBroken);
  EXPECT_THAT(connection.failure(), HasSubstr("deadline"));
}

// A task that is stopped or hung keeps its socket open (its kernel still
// acknowledges): its calls fail within seconds by the pings, not by their
// hour-long deadline.
TEST(DataConnectionTest, ATaskThatStopsAnsweringIsFoundByPings) {
  SilentTask task;
  DataConnection& connection = *task.connection;
  proto::RunGraphResponse response;
  Outcome outcome;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(StartStep(connection, 3, absl::Hours(1), &response, &outcome));
  ASSERT_TRUE(outcome.done.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(12));
  EXPECT_TRUE(absl::IsUnavailable(outcome.status)) << outcome.status;
  EXPECT_THAT(outcome.status.message(), HasSubstr("RunGraph of step 3"));
  EXPECT_THAT(outcome.status.message(), HasSubstr(kTask));
  EXPECT_THAT(outcome.status.message(), HasSubstr("keepalive"));
  EXPECT_EQ(connection.state(), DataConnection::State::kBroken);
}

TEST(DataConnectionTest, APushPastItsDeadlineFailsAlone) {
  Receiver receiver;
  receiver.Hold("slow");
  auto connection = ConnectTo(receiver.listener());
  ASSERT_EQ(Settled(*connection), DataConnection::State::kReady);
  Outcome slow;
  ASSERT_TRUE(connection->Push(1, "slow", Pattern(1 << 16, 1),
                               absl::Milliseconds(200), slow.Callback()));
  const absl::Status s = slow.Wait();
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(kTask));
  EXPECT_THAT(s.message(), HasSubstr("'slow'"));
  // Its late answer is dropped; the connection goes on.
  receiver.AwaitHeld(1);
  receiver.AnswerHeld();
  Outcome next;
  ASSERT_TRUE(connection->Push(2, "next", Pattern(1 << 16, 2),
                               absl::Seconds(10), next.Callback()));
  EXPECT_EQ(next.Wait(), absl::OkStatus());
}

// A ready connection to `receiver` with one push, "held", that the receiver
// has taken and not answered; `held` gets its outcome.
// The push is of 1 MiB, split across the connection's `sockets` sockets.
std::unique_ptr<DataConnection> ConnectedWithHeldPush(Receiver* receiver,
                                                      Outcome* held,
                                                      int sockets = 1) {
  receiver->Hold("held");
  auto connection = ConnectTo(receiver->listener(), sockets);
  EXPECT_EQ(Settled(*connection), DataConnection::State::kReady);
  EXPECT_TRUE(connection->Push(1, "held", Pattern(1 << 18, 1),
                               absl::Seconds(30), held->Callback()));
  receiver->AwaitHeld(1);
  return connection;
}

TEST_P(DataConnectionSocketsTest,
       AClosedListenerFailsWaitingPushesNamingTheTask) {
  Receiver receiver;
  Outcome held;
  auto connection = ConnectedWithHeldPush(&receiver, &held, GetParam());
  receiver.listener()->Close();
  const absl::Status s = held.Wait();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(kTask));
  EXPECT_THAT(s.message(), HasSubstr("data connection"));
  EXPECT_EQ(connection->state(), DataConnection::State::kBroken);
  Outcome later;
  StatusCallback done = later.Callback();
  EXPECT_FALSE(connection->Push(2, "later", Pattern(16, 0), absl::Seconds(1),
                                std::move(done)));
  receiver.AnswerHeld();  // the answer has nowhere to go: dropped
}

TEST_P(DataConnectionSocketsTest, DestroyingTheConnectionCancelsWaitingPushes) {
  Receiver receiver;
  Outcome held;
  auto connection = ConnectedWithHeldPush(&receiver, &held, GetParam());
  connection.reset();
  const absl::Status s = held.Wait();
  EXPECT_TRUE(absl::IsCancelled(s)) << s;
  receiver.AnswerHeld();
}

// A raw socket that says `hello` to `listener` (with the listener's token);
// the listener's answer goes to `accepted`.
int RawSocket(DataListener* listener, DataHello hello, char* accepted) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(listener->port());
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  // (A listener that never answers fails the test instead of hanging it.)
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  hello.token = listener->token();
  std::string bytes = EncodeDataHello(hello);
  iovec iov{bytes.data(), bytes.size()};
  EXPECT_EQ(SendAll(fd, &iov, 1), absl::OkStatus());
  *accepted = 0;
  EXPECT_EQ(RecvAll(fd, accepted, 1), absl::OkStatus());
  return fd;
}

// A raw connection's first socket, accepted by `listener`.
int RawConnection(DataListener* listener, uint64_t link = 1) {
  char accepted = 0;
  const int fd = RawSocket(listener, {0, link, 0}, &accepted);
  EXPECT_EQ(accepted, 1);
  return fd;
}

// A raw connection to `listener` under `link` with `stripes` stripes, each
// accepted: its sockets, the first socket first.
std::vector<int> RawStripedConnection(DataListener* listener, uint64_t link,
                                      uint32_t stripes) {
  std::vector<int> fds = {RawConnection(listener, link)};
  for (uint32_t stripe = 1; stripe <= stripes; ++stripe) {
    char accepted = 0;
    fds.push_back(RawSocket(listener, {0, link, stripe}, &accepted));
    EXPECT_EQ(accepted, 1) << "stripe " << stripe;
  }
  return fds;
}

// The bytes of a push on a raw connection: the frame of `value` under `key`
// with `stripe_bytes`, and the first part of the bytes.
void SendStripedFrame(int fd, uint64_t call_id, const std::string& key,
                      const Tensor& value,
                      const std::vector<int64_t>& stripe_bytes) {
  proto::DataFrame frame;
  frame.set_call_id(call_id);
  *frame.mutable_push() = PushHeaderFor(1, key, value);
  int64_t first = value.TotalBytes();
  for (const int64_t n : stripe_bytes) {
    frame.add_stripe_bytes(n);
    first -= n;
  }
  ASSERT_EQ(SendFrame(fd, frame, value.raw_data(), static_cast<size_t>(first)),
            absl::OkStatus());
}

// The documented bytes of a striped push, written by hand, arrive whole.
TEST(DataConnectionTest, AStripedPushFromRawSocketsArrivesWhole) {
  Receiver receiver;
  const std::vector<int> fds =
      RawStripedConnection(receiver.listener(), /*link=*/77, /*stripes=*/1);
  const int first = fds[0];
  const int stripe = fds[1];
  const Tensor value = Pattern(3000, 2.0f);  // 12,000 bytes
  // The stripe's part first: the reader of the first socket waits for it.
  iovec iov{
      const_cast<char*>(static_cast<const char*>(value.raw_data())) + 8000,
      4000};
  ASSERT_EQ(SendAll(stripe, &iov, 1), absl::OkStatus());
  SendStripedFrame(first, 9, "raw", value, {4000});
  proto::DataAnswer answer;
  ASSERT_EQ(RecvFrameHeader(first, &answer), absl::OkStatus());
  EXPECT_EQ(answer.call_id(), 9u);
  EXPECT_EQ(answer.code(), 0) << answer.message();
  EXPECT_TRUE(SameValues(receiver.Received("raw"), value));
  EXPECT_EQ(receiver.listener()->striped(), 1);
  close(stripe);
  close(first);
}

// A stripe whose hello names no connection, or skips a place, is refused.
TEST(DataConnectionTest, AStripeWithoutItsConnectionIsRefused) {
  Receiver receiver;
  char accepted = 1;
  close(RawSocket(receiver.listener(), {0, 5, 1}, &accepted));
  EXPECT_EQ(accepted, 0);
  const int first = RawConnection(receiver.listener(), /*link=*/5);
  close(RawSocket(receiver.listener(), {0, 5, 2}, &accepted));
  EXPECT_EQ(accepted, 0);
  close(first);
}

// A push that names more stripes than the connection has is answered with
// INVALID_ARGUMENT naming the tensor, and the connection ends.
TEST(DataConnectionTest, AStripedPushWithoutStripesEndsTheConnection) {
  Receiver receiver;
  const int fd = RawConnection(receiver.listener());
  SendStripedFrame(fd, 3, "too_many", Pattern(3000, 1.0f), {4000});
  proto::DataAnswer answer;
  ASSERT_EQ(RecvFrameHeader(fd, &answer), absl::OkStatus());
  EXPECT_EQ(answer.code(),
            static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(answer.message(), HasSubstr("'too_many'"));
  EXPECT_THAT(answer.message(), HasSubstr("0 stripe(s)"));
  char byte;
  EXPECT_FALSE(RecvAll(fd, &byte, 1).ok());
  close(fd);
}

// A listener closed while a large push's parts are still in flight on every
// socket: the push ends, OK if its bytes all came in time and UNAVAILABLE
// otherwise, and nothing waits on.
TEST_P(DataConnectionSocketsTest, AListenerClosedMidPushEndsItCleanly) {
  Receiver receiver;
  auto connection = ConnectTo(receiver.listener(), GetParam());
  ASSERT_EQ(Settled(*connection), DataConnection::State::kReady);
  Outcome outcome;
  ASSERT_TRUE(connection->Push(1, "big", Pattern(int64_t{16} << 20, 3),
                               absl::Seconds(30), outcome.Callback()));
  receiver.listener()->Close();
  const absl::Status s = outcome.Wait();
  EXPECT_TRUE(s.ok() || absl::IsUnavailable(s)) << s;
  connection.reset();
}

// Stripe parts that overflow when added up, or are negative, are refused
// before any byte is read into the tensor.
TEST(DataConnectionTest, StripePartsThatDoNotFitAreRefused) {
  for (const std::vector<int64_t>& parts :
       {std::vector<int64_t>{int64_t{1} << 62, int64_t{1} << 62},
        std::vector<int64_t>{-4000, 4000}, std::vector<int64_t>{8000, 8000}}) {
    Receiver receiver;
    const std::vector<int> fds =
        RawStripedConnection(receiver.listener(), /*link=*/3, /*stripes=*/2);
    const int first = fds[0];
    const Tensor value = Pattern(3000, 1.0f);  // 12,000 bytes
    proto::DataFrame frame;
    frame.set_call_id(2);
    *frame.mutable_push() = PushHeaderFor(1, "misfit", value);
    for (const int64_t n : parts) frame.add_stripe_bytes(n);
    ASSERT_EQ(SendFrame(first, frame), absl::OkStatus());
    proto::DataAnswer answer;
    ASSERT_EQ(RecvFrameHeader(first, &answer), absl::OkStatus());
    EXPECT_EQ(answer.code(),
              static_cast<int>(absl::StatusCode::kInvalidArgument));
    EXPECT_THAT(answer.message(), HasSubstr("'misfit'"));
    char byte;
    EXPECT_FALSE(RecvAll(first, &byte, 1).ok());
    for (const int fd : fds) close(fd);
  }
}

// A stripe that closes before its part has come ends its connection: the
// push is not delivered, and the first socket's reader does not wait on.
TEST(DataConnectionTest, AStripeThatBreaksEndsItsConnection) {
  Receiver receiver;
  const std::vector<int> fds =
      RawStripedConnection(receiver.listener(), /*link=*/8, /*stripes=*/1);
  const int first = fds[0];
  const int stripe = fds[1];
  SendStripedFrame(first, 4, "halved", Pattern(3000, 1.0f), {4000});
  close(stripe);
  char byte;
  EXPECT_THAT(std::string(RecvAll(first, &byte, 1).message()),
              HasSubstr("closed by the peer"));
  EXPECT_FALSE(receiver.Received("halved").IsInitialized());
  close(first);
}

TEST(DataConnectionTest, AMalformedPushIsAnsweredAndEndsTheConnection) {
  Receiver receiver;
  const int fd = RawConnection(receiver.listener());
  // A header whose byte count does not fit its shape.
  proto::DataFrame frame;
  frame.set_call_id(5);
  *frame.mutable_push() = PushHeaderFor(3, "misfit", Pattern(4, 0));
  frame.mutable_push()->set_total_bytes(999);
  ASSERT_EQ(SendFrame(fd, frame), absl::OkStatus());
  proto::DataAnswer answer;
  ASSERT_EQ(RecvFrameHeader(fd, &answer), absl::OkStatus());
  EXPECT_EQ(answer.call_id(), 5u);
  EXPECT_EQ(answer.code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(answer.message(), HasSubstr("'misfit'"));
  char byte;
  EXPECT_THAT(std::string(RecvAll(fd, &byte, 1).message()),
              HasSubstr("closed by the peer"));
  close(fd);

  // A shape whose byte count overflows int64 describes no tensor.
  const int fd3 = RawConnection(receiver.listener());
  proto::DataFrame hostile;
  hostile.set_call_id(6);
  *hostile.mutable_push() = PushHeaderFor(4, "hostile", Pattern(4, 0));
  hostile.mutable_push()->mutable_shape()->clear_dim();
  hostile.mutable_push()->mutable_shape()->add_dim(int64_t{1} << 62);
  hostile.mutable_push()->set_total_bytes(0);
  ASSERT_EQ(SendFrame(fd3, hostile), absl::OkStatus());
  ASSERT_EQ(RecvFrameHeader(fd3, &answer), absl::OkStatus());
  EXPECT_EQ(answer.call_id(), 6u);
  EXPECT_EQ(answer.code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(answer.message(), HasSubstr("'hostile'"));
  close(fd3);

  // A frame that is no call.
  const int fd4 = RawConnection(receiver.listener());
  proto::DataFrame empty;
  empty.set_call_id(7);
  ASSERT_EQ(SendFrame(fd4, empty), absl::OkStatus());
  ASSERT_EQ(RecvFrameHeader(fd4, &answer), absl::OkStatus());
  EXPECT_EQ(answer.call_id(), 7u);
  EXPECT_EQ(answer.code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_FALSE(RecvAll(fd4, &byte, 1).ok());
  close(fd4);

  // A frame header too long to be a call's: the connection just ends.
  const int fd2 = RawConnection(receiver.listener());
  const unsigned char huge[4] = {0xff, 0xff, 0xff, 0x7f};
  iovec iov{const_cast<unsigned char*>(huge), 4};
  ASSERT_EQ(SendAll(fd2, &iov, 1), absl::OkStatus());
  EXPECT_FALSE(RecvAll(fd2, &byte, 1).ok());
  close(fd2);
}

// RunGraph calls and their answers, whose fetches may be far larger than a
// frame header.
TEST(DataConnectionTest, RunGraphCallsGetTheirResponses) {
  Receiver receiver;
  auto connection = ConnectTo(receiver.listener());
  ASSERT_EQ(Settled(*connection), DataConnection::State::kReady);
  for (const int64_t n : {int64_t{1}, int64_t{1} << 20}) {  // 4 B, 4 MiB
    receiver.SetFetch(Pattern(n, 3.0f));
    proto::RunGraphRequest request;
    request.set_graph_handle("g");
    request.set_step_id(40 + n);
    proto::RunGraphResponse response;
    Outcome outcome;
    ASSERT_TRUE(connection->RunGraph(request, &response, absl::Seconds(10),
                                     outcome.Callback()));
    ASSERT_EQ(outcome.Wait(), absl::OkStatus());
    ASSERT_EQ(response.fetch_size(), 1);
    absl::StatusOr<Tensor> fetched = TensorFromProto(response.fetch(0));
    ASSERT_TRUE(fetched.ok()) << fetched.status();
    EXPECT_TRUE(SameValues(*fetched, Pattern(n, 3.0f))) << n;
  }
  EXPECT_EQ(receiver.listener()->run_graphs(), 2);
}

// Offers of the same-host path and small pushes travel on the connection
// too; the task's answer to an offer comes back whole.
TEST(DataConnectionTest, OffersAndSmallPushesTravelOnIt) {
  Receiver receiver;
  auto connection = ConnectTo(receiver.listener());
  ASSERT_EQ(Settled(*connection), DataConnection::State::kReady);
  const Tensor offered = Pattern(1 << 16, 4.0f);
  absl::Notification answered;
  absl::Status status;
  std::string refused;
  const SameHostOffer offer = OfferSameHost(9, "offered", offered);
  ASSERT_TRUE(connection->Offer(
      offer.header, offer.keepalive, absl::Seconds(10),
      [&](const absl::Status& s, const proto::PushTensorResponse& response) {
        status = s;
        refused = response.same_host_refused();
        answered.Notify();
      }));
  ASSERT_TRUE(answered.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(status, absl::OkStatus());
  EXPECT_EQ(refused, "not on this host");
  ASSERT_EQ(receiver.Offers().size(), 1u);
  EXPECT_EQ(receiver.Offers()[0].key(), "offered");
  EXPECT_TRUE(receiver.Offers()[0].has_same_host());
  Outcome small;
  ASSERT_TRUE(connection->Push(9, "small", Pattern(3, 5.0f), absl::Seconds(10),
                               small.Callback()));
  EXPECT_EQ(small.Wait(), absl::OkStatus());
  EXPECT_TRUE(SameValues(receiver.Received("small"), Pattern(3, 5.0f)));
}

// The CPU time that this process's data-connection threads (named "df_...")
// have had, from the scheduler's count in /proc.
absl::Duration DataConnectionThreadsCpu() {
  absl::Duration total;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind("df_", 0) != 0) continue;
    std::ifstream schedstat(task.path() / "schedstat");
    int64_t on_cpu_ns = 0;
    if (schedstat >> on_cpu_ns) total += absl::Nanoseconds(on_cpu_ns);
  }
  return total;
}

// After it serves an offer, the listener's reader polls for the next frame
// (in a training loop the peer offers again within its step) only for
// kNextPushPoll, then sleeps: a task that was offered one tensor does not go
// on taking a core.
TEST(DataConnectionTest, AfterAnOfferTheReaderPollsOnlyBriefly) {
  Receiver receiver;
  auto connection = ConnectTo(receiver.listener());
  ASSERT_EQ(Settled(*connection), DataConnection::State::kReady);
  const Tensor offered = Pattern(1 << 10, 4.0f);
  const SameHostOffer offer = OfferSameHost(9, "offered", offered);
  absl::Notification answered;
  ASSERT_TRUE(connection->Offer(
      offer.header, offer.keepalive, absl::Seconds(10),
      [&](const absl::Status&, const proto::PushTensorResponse&) {
        answered.Notify();
      }));
  ASSERT_TRUE(answered.WaitForNotificationWithTimeout(absl::Seconds(10)));
  const absl::Duration before = DataConnectionThreadsCpu();
  absl::SleepFor(absl::Milliseconds(200));
  const absl::Duration used = DataConnectionThreadsCpu() - before;
  // A reader that kept polling would take most of the 200 ms.
  EXPECT_LT(used, absl::Milliseconds(20))
      << "the data-connection threads used " << used << " of CPU time while "
      << "idle after an offer (the reader's poll lasts " << kNextPushPoll
      << ")";
  EXPECT_EQ(connection->state(), DataConnection::State::kReady);
}

// A call whose work runs long on the thread that read it (a partition's
// first kernels, or the consumers of a pushed tensor) leaves the connection
// served: later calls are answered meanwhile, and so are the caller's
// keepalive pings, which would otherwise end the connection after seconds.
TEST(DataConnectionTest, ACallThatKeepsItsReadingThreadLeavesTheRestServed) {
  Receiver receiver;
  receiver.Busy(8, absl::Seconds(9));
  auto connection = ConnectTo(receiver.listener());
  ASSERT_EQ(Settled(*connection), DataConnection::State::kReady);
  proto::RunGraphResponse response;
  Outcome long_step;
  ASSERT_TRUE(
      StartStep(*connection, 8, absl::Minutes(1), &response, &long_step));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  Outcome push;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(connection->Push(8, "meanwhile", Pattern(3, 1.0f),
                               absl::Seconds(10), push.Callback()));
  EXPECT_EQ(push.Wait(), absl::OkStatus());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_TRUE(SameValues(receiver.Received("meanwhile"), Pattern(3, 1.0f)));
  ASSERT_TRUE(long_step.done.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_EQ(long_step.status, absl::OkStatus());
  EXPECT_EQ(response.fetch_size(), 1);
  EXPECT_EQ(connection->state(), DataConnection::State::kReady);
}

// Sends a RunGraph of step `step_id` that the receiver holds (its answer
// goes to `response` and `outcome`); the connection, once ready.
std::unique_ptr<DataConnection> ConnectedWithHeldStep(
    Receiver* receiver, int64_t step_id, absl::Duration deadline,
    proto::RunGraphResponse* response, Outcome* outcome) {
  receiver->Hold(absl::StrCat("step ", step_id));
  auto connection = ConnectTo(receiver->listener());
  EXPECT_EQ(Settled(*connection), DataConnection::State::kReady);
  EXPECT_TRUE(StartStep(*connection, step_id, deadline, response, outcome));
  return connection;
}

// After a push of a step is answered, the caller's reader polls briefly for
// the step's RunGraph answer; one that comes much later (the ps's updates
// ran long) is still read, after the reader went back to sleep, and the
// connection carries the next step as before.
TEST(DataConnectionTest, AStepAnsweredLongAfterItsPushIsStillRead) {
  Receiver receiver;
  proto::RunGraphResponse response;
  Outcome step;
  auto connection = ConnectedWithHeldStep(&receiver, 12, absl::Seconds(30),
                                          &response, &step);
  receiver.AwaitHeld(1);
  Outcome push;
  ASSERT_TRUE(connection->Push(12, "gradient", Pattern(1 << 10, 2.0f),
                               absl::Seconds(10), push.Callback()));
  EXPECT_EQ(push.Wait(), absl::OkStatus());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(step.done.HasBeenNotified());
  receiver.AnswerHeld();
  EXPECT_EQ(step.Wait(), absl::OkStatus());
  proto::RunGraphResponse next_response;
  Outcome next_step;
  ASSERT_TRUE(StartStep(*connection, 13, absl::Seconds(10), &next_response,
                        &next_step));
  EXPECT_EQ(next_step.Wait(), absl::OkStatus());
  EXPECT_EQ(next_response.fetch_size(), 1);
  EXPECT_EQ(connection->answered(), 3);
  EXPECT_EQ(connection->state(), DataConnection::State::kReady);
}

// A caller that goes away while its step runs: the task abandons the step
// (so that its ops stop waiting for the caller's tensors), and the caller's
// call fails naming the task.
TEST(DataConnectionTest, AStepWhoseCallerLeavesIsAbandoned) {
  Receiver receiver;
  proto::RunGraphResponse response;
  Outcome outcome;
  auto connection = ConnectedWithHeldStep(&receiver, 77, absl::Seconds(30),
                                          &response, &outcome);
  receiver.AwaitHeld(1);
  connection.reset();
  EXPECT_TRUE(absl::IsCancelled(outcome.Wait())) << outcome.status;
  EXPECT_EQ(receiver.AwaitAbandoned(1), std::vector<int64_t>{77});
  receiver.AnswerHeld();  // the answer has nowhere to go: dropped
}

TEST(DataConnectionTest, ARunGraphPastItsDeadlineFailsNamingTheStep) {
  Receiver receiver;
  proto::RunGraphResponse response;
  Outcome outcome;
  auto connection = ConnectedWithHeldStep(
      &receiver, 5, absl::Milliseconds(200), &response, &outcome);
  const absl::Status s = outcome.Wait();
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("RunGraph of step 5"));
  EXPECT_THAT(s.message(), HasSubstr(kTask));
  receiver.AwaitHeld(1);
  receiver.AnswerHeld();
  EXPECT_EQ(connection->state(), DataConnection::State::kReady);
}

// A ps holds a 1 MiB variable; the worker's step reads it whole (the ps
// pushes it to the worker) and writes a new value fed on the worker (which
// the worker pushes to the ps). Between two hosts, as here with the
// same-host path off, both go on data connections after the first step.
class DataConnectionClusterTest : public ::testing::Test {
 protected:
  static ServerOptions BetweenHosts(bool data_connection) {
    ServerOptions options;
    options.same_host_transport = false;
    options.data_connection = data_connection;
    return options;
  }

  // Runs `steps` steps that each read the variable back and write the next
  // pattern; checks every value read.
  void RunSteps(TestCluster* cluster, int steps) {
    Scope root = Scope::NewRootScope();
    Scope ps = root.WithDevice("/job:ps/task:0");
    Scope worker = root.WithDevice("/job:worker/task:0");
    ops::Variable v(ps.WithOpName("v"), ops::Const(ps, Pattern(kN, 0)));
    Output read = ops::Identity(worker, v);
    Output next = ops::Placeholder(worker, DataType::kFloat);
    Output write = ops::Assign(ps, v, next);
    Operation init = ops::GlobalVariablesInitializer(root);
    auto session = ClientSession::Create(
        root, SessionTarget(cluster->server("worker", 0)));
    ASSERT_TRUE(session.ok()) << session.status();
    ASSERT_EQ((*session)->RunTargets({init}), absl::OkStatus());
    for (int step = 0; step < steps; ++step) {
      auto got = (*session)->Run({read});
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_TRUE(SameValues((*got)[0], Pattern(kN, static_cast<float>(step))))
          << "step " << step;
      auto wrote =
          (*session)->Run({{next, Pattern(kN, static_cast<float>(step + 1))}},
                          {write});
      ASSERT_TRUE(wrote.ok()) << wrote.status();
    }
  }

  static constexpr int64_t kN = int64_t{1} << 18;  // 1 MiB of floats
  const int kSockets = DataSocketsPerConnection();
};

TEST_F(DataConnectionClusterTest, LargeTensorsCrossOnDataConnections) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}},
                                     BetweenHosts(/*data_connection=*/true));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  GrpcServer* ps = (*cluster)->server("ps", 0);
  GrpcServer* worker = (*cluster)->server("worker", 0);
  // No task listens before a call comes (see LazyDataListener).
  EXPECT_EQ(ps->data_port(), 0);
  EXPECT_EQ(worker->data_port(), 0);
  // The first tensor each way goes over gRPC, whose answer offers the
  // connection, which opens in the background; the steps until it is ready
  // (its hello answered, which may take a while on a busy machine) go over
  // gRPC too.
  RunSteps(cluster->get(), 1);
  ASSERT_GT(ps->data_port(), 0);
  ASSERT_GT(worker->data_port(), 0);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while ((ps->data_tensors_received() == 0 ||
          worker->data_tensors_received() == 0) &&
         std::chrono::steady_clock::now() < deadline) {
    RunSteps(cluster->get(), 1);
  }
  ASSERT_GT(ps->data_tensors_received(), 0);
  ASSERT_GT(worker->data_tensors_received(), 0);
  const int64_t to_ps = ps->data_tensors_received();
  const int64_t to_worker = worker->data_tensors_received();
  // From then on every tensor goes on them (the 1 MiB ones, and small ones
  // such as a control edge's), and so do the steps' RunGraph calls to the
  // ps; they stay open between steps: one each way.
  const int64_t run_graphs = ps->data_run_graphs();
  RunSteps(cluster->get(), 3);
  EXPECT_GE(ps->data_tensors_received() - to_ps, 3);
  EXPECT_GE(worker->data_tensors_received() - to_worker, 3);
  EXPECT_EQ(ps->data_run_graphs() - run_graphs, 7);  // the init, 3 x 2 steps
  // The 1 MiB tensors went partly on the connections' other sockets.
  if (kSockets > 1) {
    EXPECT_GE(ps->data_tensors_striped(), 3);
    EXPECT_GE(worker->data_tensors_striped(), 3);
  }
  EXPECT_EQ(EstablishedTo(ps->data_port()), kSockets);
  EXPECT_EQ(EstablishedTo(worker->data_port()), kSockets);
}

// A pushed tensor whose consumers run long on the ps (a product of two
// 3072x3072 matrices on one thread, a quarter of a second or more on any
// core, on the thread that read the push): the reading passes to a new
// thread while the old one computes, and every step's result comes back
// right, on the one connection.
TEST_F(DataConnectionClusterTest, LongConsumersOfAPushHandTheReadingOn) {
  ServerOptions options = BetweenHosts(/*data_connection=*/true);
  options.intra_op_threads = 1;
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}}, options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  GrpcServer* ps = (*cluster)->server("ps", 0);
  constexpr int32_t kSide = 3072;
  Scope root = Scope::NewRootScope();
  Scope on_ps = root.WithDevice("/job:ps/task:0");
  Scope on_worker = root.WithDevice("/job:worker/task:0");
  ops::Variable w(on_ps.WithOpName("w"),
                  ops::Fill(on_ps, Tensor::Vector<int32_t>({kSide, kSide}),
                            1.0f));
  Output scale = ops::Placeholder(on_worker, DataType::kFloat);
  Output pushed = ops::Identity(on_worker, scale);
  // Every entry of the product is kSide * scale.
  Output product = ops::MatMul(on_ps, ops::Mul(on_ps, w, pushed), w);
  Output corner = ops::Slice(on_ps, product, Tensor::Vector<int32_t>({0, 0}),
                             Tensor::Vector<int32_t>({1, 1}));
  Operation init = ops::GlobalVariablesInitializer(root);
  auto session =
      ClientSession::Create(root, SessionTarget(cluster->get()->server(
                                      "worker", 0)));
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_EQ((*session)->RunTargets({init}), absl::OkStatus());
  auto step = [&](float value) {
    auto got = (*session)->Run({{scale, Tensor::Scalar(value)}}, {corner});
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ((*got)[0].flat<float>()[0], kSide * value);
  };
  // The first steps go over gRPC, until the connection has opened.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (ps->data_run_graphs() == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    step(1.0f);
  }
  ASSERT_GT(ps->data_run_graphs(), 0);
  const int64_t handoffs = ps->data_reader_handoffs();
  for (int i = 2; i <= 4; ++i) step(static_cast<float>(i));
  EXPECT_GE(ps->data_reader_handoffs() - handoffs, 3);
  EXPECT_EQ(EstablishedTo(ps->data_port()), kSockets);
}

TEST_F(DataConnectionClusterTest, WithoutThemTensorsCrossOverGrpc) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}},
                                     BetweenHosts(/*data_connection=*/false));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  RunSteps(cluster->get(), 3);
  EXPECT_EQ((*cluster)->server("ps", 0)->data_port(), 0);
  EXPECT_EQ((*cluster)->server("worker", 0)->data_port(), 0);
}

TEST_F(DataConnectionClusterTest, ARestartedPsGetsANewConnection) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}},
                                     BetweenHosts(/*data_connection=*/true));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  RunSteps(cluster->get(), 2);
  const int old_port = (*cluster)->server("ps", 0)->data_port();
  ASSERT_EQ((*cluster)->Restart("ps", 0, BetweenHosts(true)), absl::OkStatus());
  // The worker's session finds the new ps (its graph registered again) and
  // its pushes reach it: the broken connection is replaced. Steps that race
  // the restart (the channel still reconnecting) fail, as over gRPC.
  Scope root = Scope::NewRootScope();
  Scope ps = root.WithDevice("/job:ps/task:0");
  ops::Variable v(ps.WithOpName("v"), ops::Const(ps, Pattern(kN, 0)));
  Output next =
      ops::Placeholder(root.WithDevice("/job:worker/task:0"), DataType::kFloat);
  Output write = ops::Assign(ps, v, next);
  auto session = ClientSession::Create(
      root, SessionTarget((*cluster)->server("worker", 0)));
  ASSERT_TRUE(session.ok()) << session.status();
  auto step = [&] {
    return (*session)->Run({{next, Pattern(kN, 5.0f)}}, {write}).status();
  };
  // The channel to the new ps may wait out a reconnect backoff first.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(15);
  absl::Status s = step();
  while (!s.ok() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    s = step();
  }
  ASSERT_EQ(s, absl::OkStatus());
  const int new_port = (*cluster)->server("ps", 0)->data_port();
  ASSERT_GT(new_port, 0);
  // Pushes go over gRPC until the new connection's hello is answered.
  const auto ready_by =
      std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while ((*cluster)->server("ps", 0)->data_tensors_received() == 0 &&
         std::chrono::steady_clock::now() < ready_by) {
    ASSERT_EQ(step(), absl::OkStatus());
  }
  EXPECT_GT((*cluster)->server("ps", 0)->data_tensors_received(), 0);
  EXPECT_EQ(EstablishedTo(new_port), kSockets);
  // The old connection broke with the old process (unless the new listener
  // happens to have the old port).
  if (new_port != old_port) {
    EXPECT_EQ(EstablishedTo(old_port), 0);
  }
}

}  // namespace
}  // namespace distflow
