// Same-host offers (same_host_offer.h) that a hostile or confused peer could
// send: wrapped sums, impossible pids, other hosts, unreadable addresses.
// Each is refused before a byte is read, and a refusal sent back names no
// host identity and no system error text.
#include "distributed/rpc/same_host_offer.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "distributed/rpc/data_listener.h"
#include "distributed/rpc/data_socket.h"
#include "distributed/rpc/same_host_test_util.h"
#include "distributed/rpc/tensor_wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr uint64_t k64MiB = uint64_t{64} << 20;

Tensor Ramp(int32_t n) {
  std::vector<int32_t> values(n);
  for (int32_t i = 0; i < n; ++i) values[i] = i * 3 + 1;
  return Tensor::Vector<int32_t>(values);
}

// Two ranges whose lengths add up to the tensor's bytes only modulo 2^64:
// the first alone is 64 MiB short of 2^64.
void WrapRanges(proto::PushTensorHeader* header, const Tensor& value) {
  const uint64_t address = reinterpret_cast<uint64_t>(value.raw_data());
  proto::SameHostTensor* where = header->mutable_same_host();
  where->clear_address();
  proto::SameHostRange* first = where->add_ranges();
  first->set_address(address);
  first->set_length(0 - k64MiB);
  proto::SameHostRange* second = where->add_ranges();
  second->set_address(address);
  second->set_length(k64MiB + value.TotalBytes());
}

// A data listener whose offers go to a PushAssembler, as a task's do.
class OfferListener {
 public:
  OfferListener() {
    DataListener::Handlers handlers;
    handlers.offer = [this](const proto::PushTensorHeader& header,
                            proto::PushTensorResponse* response,
                            StatusCallback done) {
      auto out = assembler_.AddOffer(header);
      if (out.ok()) response->set_same_host_refused(out->same_host_refused);
      done(out.status());
    };
    handlers.deliver = [](int64_t, const std::string&, const Tensor&,
                          StatusCallback done) { done(absl::OkStatus()); };
    auto listener = DataListener::Create("127.0.0.1", nullptr, handlers);
    EXPECT_TRUE(listener.ok()) << listener.status();
    listener_ = *std::move(listener);
  }

  // Sends `header` as an offer on a new connection; the answer.
  proto::DataAnswer Send(const proto::PushTensorHeader& header) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(listener_->port());
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    timeval timeout{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    std::string hello = EncodeDataHello({listener_->token(), 1, 0});
    iovec iov{hello.data(), hello.size()};
    EXPECT_EQ(SendAll(fd, &iov, 1), absl::OkStatus());
    char accepted = 0;
    EXPECT_EQ(RecvAll(fd, &accepted, 1), absl::OkStatus());
    proto::DataFrame frame;
    frame.set_call_id(9);
    *frame.mutable_push() = header;
    EXPECT_EQ(SendFrame(fd, frame), absl::OkStatus());
    proto::DataAnswer answer;
    EXPECT_EQ(RecvFrameHeader(fd, &answer), absl::OkStatus());
    close(fd);
    return answer;
  }

 private:
  PushAssembler assembler_;
  std::unique_ptr<DataListener> listener_;
};

// Range lengths whose sum wraps to the tensor's size would have sized a
// 64 MiB copy into the tensor's 400 KB: refused, naming the tensor.
TEST(SameHostOfferTest, RangesWhoseSumWrapsAreRefusedOnADataConnection) {
  const Tensor value = Ramp(100'000);
  proto::PushTensorHeader header = Offer(value);
  WrapRanges(&header, value);
  OfferListener listener;
  const proto::DataAnswer answer = listener.Send(header);
  EXPECT_EQ(answer.code(),
            static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(answer.message(), HasSubstr("'k'"));
  EXPECT_THAT(answer.message(), HasSubstr("ranges"));
}

// The reads themselves refuse ranges whose sum wraps, whoever calls them.
TEST(SameHostOfferTest, ReadProcessMemoryRefusesAWrappedSum) {
  const Tensor value = Ramp(100'000);
  const uint64_t address = reinterpret_cast<uint64_t>(value.raw_data());
  const std::vector<RemoteRange> ranges = {
      {address, static_cast<size_t>(0 - k64MiB)},
      {address, static_cast<size_t>(k64MiB + value.TotalBytes())}};
  std::vector<char> out(value.TotalBytes());
  absl::Status s = ReadProcessMemory(getpid(), ranges, out.data());
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  ThreadPool helpers("helpers", 2);
  s = ReadProcessMemory(getpid(), ranges, out.data(), &helpers);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
}

// A pid that a pid_t cannot hold (it would be truncated to another
// process, here this one), zero or negative: refused.
TEST(SameHostOfferTest, PidsThatNameNoProcessAreRefused) {
  const Tensor value = Ramp(100'000);
  PushAssembler assembler;
  for (const int64_t pid :
       {(int64_t{1} << 32) + getpid(), int64_t{0}, int64_t{-1}}) {
    proto::PushTensorHeader header = Offer(value);
    header.mutable_same_host()->set_pid(pid);
    auto out = assembler.AddOffer(header);
    EXPECT_TRUE(absl::IsInvalidArgument(out.status()))
        << pid << ": " << out.status();
    EXPECT_THAT(out.status().message(), HasSubstr(absl::StrCat(pid)));
  }
}

// Refusals sent back name neither host's identity nor the system's error
// text; they say what was wrong.
TEST(SameHostOfferTest, RefusalsEchoNoIdentityOrErrno) {
  const Tensor value = Ramp(100'000);
  OfferListener listener;
  proto::PushTensorHeader header = Offer(value);
  header.mutable_same_host()->set_host_id("another-boot/pidns:1:2");
  proto::DataAnswer answer = listener.Send(header);
  EXPECT_EQ(answer.code(), 0) << answer.message();
  const std::string& refused = answer.push().same_host_refused();
  EXPECT_THAT(refused, HasSubstr("another host"));
  EXPECT_THAT(refused, Not(HasSubstr("another-boot")));
  ASSERT_FALSE(SameHostIdentity().empty());
  EXPECT_THAT(refused, Not(HasSubstr(SameHostIdentity())));

  header = Offer(value);
  header.mutable_same_host()->set_address(8);  // nothing mapped there
  answer = listener.Send(header);
  EXPECT_EQ(answer.code(), 0) << answer.message();
  EXPECT_THAT(answer.push().same_host_refused(),
              HasSubstr(absl::StrCat("process ", getpid())));
  EXPECT_THAT(answer.push().same_host_refused(), Not(HasSubstr("Bad address")));
}

// An offer's checks on their own: ranges past the tensor, too many of them,
// a range that wraps the address space, an arena without runs.
TEST(SameHostOfferTest, CheckRefusesRangesThatDoNotFit) {
  const Tensor value = Ramp(1000);
  const TensorShape shape({1000});
  proto::PushTensorHeader header = Offer(value);
  auto plan = CheckSameHostOffer(header, DataType::kInt32, shape);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->total, 4000u);
  ASSERT_EQ(plan->ranges.size(), 1u);

  header.mutable_same_host()->set_address(std::numeric_limits<uint64_t>::max() -
                                          10);
  EXPECT_TRUE(absl::IsInvalidArgument(
      CheckSameHostOffer(header, DataType::kInt32, shape).status()));

  header = Offer(value);
  for (int i = 0; i < kMaxSameHostRanges + 1; ++i) {
    header.mutable_same_host()->add_ranges()->set_length(0);
  }
  EXPECT_TRUE(absl::IsInvalidArgument(
      CheckSameHostOffer(header, DataType::kInt32, shape).status()));

  header = Offer(value);
  header.mutable_same_host()->set_arena_token(5);
  EXPECT_TRUE(absl::IsInvalidArgument(
      CheckSameHostOffer(header, DataType::kInt32, shape).status()));

  // Arena runs whose sum wraps never reach a copy.
  const uint64_t address = reinterpret_cast<uint64_t>(value.raw_data());
  const std::vector<OfferedRange> runs = {
      {{address, static_cast<size_t>(0 - k64MiB)}, -1, 0},
      {{address, static_cast<size_t>(k64MiB + 4000)}, -1, 0}};
  auto mapped = MapOfferedTensor(getpid(), 0, 1, runs, DataType::kInt32, shape);
  EXPECT_TRUE(absl::IsInvalidArgument(mapped.status())) << mapped.status();
}

}  // namespace
}  // namespace distflow
