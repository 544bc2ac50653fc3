// The same-host path's pieces: reading another process's memory, the host
// identity, and the PushTensor messages that offer a tensor by address.
#include "distributed/rpc/same_host.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "base/shared_arena.h"
#include "base/thread_pool.h"
#include "core/gathered_tensor.h"
#include "distributed/rpc/same_host_test_util.h"
#include "distributed/rpc/tensor_wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/variable.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

// A forked child changes its copy of a buffer; the parent reads the child's
// bytes at the same address (fork keeps the layout).
TEST(SameHostTest, ReadsAnotherProcesssMemory) {
  std::vector<char> buffer(3 << 20, 'p');
  int ready[2], finish[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(finish), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::memset(buffer.data(), 'c', buffer.size());
    buffer.back() = 'z';
    close(finish[1]);  // so that the parent's close ends the read below
    char byte = 1;
    (void)!write(ready[1], &byte, 1);
    (void)!read(finish[0], &byte, 1);  // until the parent is done
    _exit(0);
  }
  char byte;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  std::vector<char> out(buffer.size(), 0);
  absl::Status s = ReadProcessMemory(
      child, reinterpret_cast<uint64_t>(buffer.data()), out.size(), out.data());
  close(finish[1]);
  waitpid(child, nullptr, 0);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out.front(), 'c');
  EXPECT_EQ(out[out.size() / 2], 'c');
  EXPECT_EQ(out.back(), 'z');
  EXPECT_EQ(buffer.front(), 'p');  // the parent's own copy is untouched
  for (int fd : {ready[0], ready[1], finish[0]}) close(fd);
}

// Bytes in more places than one system call takes (some empty) arrive end to
// end and in order.
TEST(SameHostTest, ManyRangesAreReadEndToEnd) {
  std::vector<std::vector<char>> pieces;
  std::vector<RemoteRange> ranges;
  std::string expected;
  for (int i = 0; i < 150; ++i) {
    pieces.emplace_back(i % 10 == 0 ? 0 : 1 + i * 37 % 5000,
                        static_cast<char>('a' + i % 26));
  }
  for (const std::vector<char>& p : pieces) {
    ranges.push_back({reinterpret_cast<uint64_t>(p.data()), p.size()});
    expected.append(p.data(), p.size());
  }
  std::string out(expected.size(), '\0');
  absl::Status s = ReadProcessMemory(getpid(), ranges, out.data());
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out, expected);
}

TEST(SameHostTest, SubRangesCutAcrossRangeBoundaries) {
  const std::vector<RemoteRange> ranges = {
      {1000, 10}, {2000, 0}, {3000, 5}, {4000, 20}};
  auto cut = [&](size_t begin, size_t end) {
    std::string out;
    for (const RemoteRange& r : SubRanges(ranges, begin, end)) {
      absl::StrAppend(&out, r.address, "+", r.length, " ");
    }
    return out;
  };
  EXPECT_EQ(cut(0, 35), "1000+10 3000+5 4000+20 ");
  EXPECT_EQ(cut(8, 17), "1008+2 3000+5 4000+2 ");
  EXPECT_EQ(cut(10, 15), "3000+5 ");
  EXPECT_EQ(cut(12, 13), "3002+1 ");
  EXPECT_EQ(cut(34, 35), "4019+1 ");
  EXPECT_EQ(cut(7, 7), "");
}

// Pieces of many sizes, laid end to end: several megabytes, so that the
// read is split into parts that cut through pieces.
struct ScatteredBytes {
  ScatteredBytes() {
    for (int i = 0; i < 60; ++i) {
      pieces.emplace_back(i % 7 == 0 ? 0 : 1 + i * 104729 % 150000,
                          static_cast<char>('a' + i % 26));
      if (!pieces.back().empty()) {
        pieces.back().back() = static_cast<char>('A' + i % 26);
      }
    }
    for (const std::vector<char>& p : pieces) {
      ranges.push_back({reinterpret_cast<uint64_t>(p.data()), p.size()});
      expected.append(p.data(), p.size());
    }
  }
  std::vector<std::vector<char>> pieces;
  std::vector<RemoteRange> ranges;
  std::string expected;
};

TEST(SameHostTest, ReadSplitAcrossHelperThreadsArrivesInOrder) {
  ScatteredBytes bytes;
  ASSERT_GT(bytes.expected.size(), size_t{2} << 20);
  ThreadPool helpers("helpers", 3);
  for (int round = 0; round < 20; ++round) {
    std::string out(bytes.expected.size(), '\0');
    absl::Status s =
        ReadProcessMemory(getpid(), bytes.ranges, out.data(), &helpers);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(out, bytes.expected) << "round " << round;
  }
}

// Helpers that are busy with other work do not hold the read up: the
// calling thread reads the parts nobody has started.
TEST(SameHostTest, ReadDoesNotWaitForBusyHelpers) {
  ScatteredBytes bytes;
  ThreadPool helpers("helpers", 1);
  absl::Notification release;
  helpers.Schedule([&] { release.WaitForNotification(); });
  std::string out(bytes.expected.size(), '\0');
  auto read = std::async(std::launch::async, [&] {
    return ReadProcessMemory(getpid(), bytes.ranges, out.data(), &helpers);
  });
  const bool finished =
      read.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  release.Notify();  // (so that a failure does not hang the test)
  ASSERT_TRUE(finished) << "the read waited for a busy helper";
  absl::Status s = read.get();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out, bytes.expected);
}

TEST(SameHostTest, SplitReadOfAnUnreadableProcessNamesIt) {
  ScatteredBytes bytes;
  const pid_t gone = fork();
  ASSERT_GE(gone, 0);
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  ThreadPool helpers("helpers", 2);
  std::string out(bytes.expected.size(), '\0');
  absl::Status s = ReadProcessMemory(gone, bytes.ranges, out.data(), &helpers);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("process ", gone)));
}

TEST(SameHostTest, UnreadableMemoryIsFailedPreconditionNamingTheProcess) {
  const pid_t gone = fork();
  ASSERT_GE(gone, 0);
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  char out[16];
  absl::Status s = ReadProcessMemory(gone, 4096, sizeof(out), out);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("process ", gone)));
  // An address the process has not mapped.
  s = ReadProcessMemory(getpid(), 8, sizeof(out), out);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("Bad address"));
}

TEST(SameHostTest, IdentityNamesTheBootAndThePidNamespace) {
  const std::string& id = SameHostIdentity();
  EXPECT_THAT(id, HasSubstr("/pidns:"));
  EXPECT_GT(id.size(), 36u);  // a boot id is a 36-character UUID
}

TEST(SameHostTest, EnvironmentVariableZeroTurnsThePathOff) {
  const char* saved = std::getenv("DISTFLOW_SAME_HOST_TRANSPORT");
  const std::string before = saved != nullptr ? saved : "";
  unsetenv("DISTFLOW_SAME_HOST_TRANSPORT");
  EXPECT_TRUE(SameHostTransportAllowedByEnv());
  setenv("DISTFLOW_SAME_HOST_TRANSPORT", "0", 1);
  EXPECT_FALSE(SameHostTransportAllowedByEnv());
  setenv("DISTFLOW_SAME_HOST_TRANSPORT", "1", 1);
  EXPECT_TRUE(SameHostTransportAllowedByEnv());
  if (saved != nullptr) {
    setenv("DISTFLOW_SAME_HOST_TRANSPORT", before.c_str(), 1);
  } else {
    unsetenv("DISTFLOW_SAME_HOST_TRANSPORT");
  }
}

Tensor Ramp(int32_t n) {
  std::vector<int32_t> values(n);
  for (int32_t i = 0; i < n; ++i) values[i] = i * 3 + 1;
  return Tensor::Vector<int32_t>(values);
}

// The offer carries no bytes; the receiver's tensor is its own copy.
TEST(SameHostTest, OfferedTensorIsCopiedOutOfTheSender) {
  Tensor value = Ramp(100'000);
  grpc::ByteBuffer message =
      EncodeSameHostPush(OfferSameHost(7, "a;b;v:0", value));
  EXPECT_LT(message.Length(), 1000u);
  PushAssembler assembler(RecvBufferPool::Create(size_t{64} << 20));
  auto out = assembler.Add(message);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->same_host_refused, "");
  EXPECT_EQ(out->step_id, 7);
  EXPECT_EQ(out->key, "a;b;v:0");
  ASSERT_TRUE(out->value.IsInitialized());
  EXPECT_TRUE(out->value.Equals(value));
  EXPECT_NE(out->value.raw_data(), value.raw_data());
}

TEST(SameHostTest, ReceiverWithThePathOffRefusesTheOffer) {
  Tensor value = Ramp(100'000);
  PushAssembler assembler(nullptr, /*same_host_reads=*/false);
  auto out = assembler.Add(EncodeSameHostPush(OfferSameHost(7, "k", value)));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(out->value.IsInitialized());
  EXPECT_THAT(out->same_host_refused, HasSubstr("off on the receiving task"));
}

// A message as the wire carries it: length-prefixed header, no bytes.
grpc::ByteBuffer Framed(const proto::PushTensorHeader& header) {
  const std::string bytes = header.SerializeAsString();
  std::string framed(4, '\0');
  for (int i = 0; i < 4; ++i)
    framed[i] = static_cast<char>(bytes.size() >> (8 * i));
  framed += bytes;
  grpc::Slice slice(framed);
  return grpc::ByteBuffer(&slice, 1);
}

TEST(SameHostTest, OfferFromAnotherHostOrAnUnreadableSenderIsRefused) {
  Tensor value = Ramp(100'000);
  PushAssembler assembler;
  proto::PushTensorHeader header = Offer(value);
  header.mutable_same_host()->set_host_id("another-boot/pidns:1:2");
  auto out = assembler.Add(Framed(header));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->same_host_refused, HasSubstr("another host"));

  header = Offer(value);
  header.mutable_same_host()->set_address(8);  // nothing mapped there
  out = assembler.Add(Framed(header));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(out->value.IsInitialized());
  EXPECT_THAT(out->same_host_refused,
              HasSubstr(absl::StrCat("process ", getpid())));
}

TEST(SameHostTest, OfferWhoseSizeDisagreesWithItsShapeIsInvalidArgument) {
  Tensor value = Ramp(100'000);
  proto::PushTensorHeader header = Offer(value);
  header.set_total_bytes(header.total_bytes() * 2);
  PushAssembler assembler;
  auto out = assembler.Add(Framed(header));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("'k'"));
}

// With a tensor arena (a task's server makes one), a large tensor is offered
// by its block, and the receiver views the sender's memory instead of
// copying it, holding the block while it does.
TEST(SameHostTest, OfferedTensorInTheArenaIsMappedNotCopied) {
  ASSERT_TRUE(SharedArena::Enable().ok());
  Tensor value = Ramp(100'000);
  ASSERT_FALSE(value.buffer()->SharedWithOtherProcesses());
  PushAssembler assembler(RecvBufferPool::Create(size_t{64} << 20));
  auto out = assembler.Add(EncodeSameHostPush(OfferSameHost(7, "k", value)));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(out->same_host);
  ASSERT_TRUE(out->value.IsInitialized());
  EXPECT_TRUE(out->value.Equals(value));
  EXPECT_EQ(out->value.shape(), value.shape());
  // Both sides now treat the bytes as not to be written in place.
  EXPECT_TRUE(out->value.buffer()->SharedWithOtherProcesses());
  EXPECT_TRUE(value.buffer()->SharedWithOtherProcesses());
  // No copy: the sender's later bytes show through the receiver's view.
  value.flat<int32_t>()[99'999] = -5;
  EXPECT_EQ(out->value.flat<int32_t>()[99'999], -5);
  out->value = Tensor();
  EXPECT_FALSE(value.buffer()->SharedWithOtherProcesses());
}

// A pack of arena tensors and small heap ones: the arena members are viewed
// where they lie, the small ones are copied by the sender into one arena
// buffer and viewed there, and each member comes back out of the received
// pack without a copy.
TEST(SameHostTest, PackedOfferMapsEveryMember) {
  ASSERT_TRUE(SharedArena::Enable().ok());
  Tensor small1 = Ramp(10);
  const Tensor big1 = Ramp(50'000), big2 = Ramp(70'000), small2 = Ramp(3);
  const Tensor small1_before = small1.Copy();
  auto packed = GatherTensors(DataType::kInt32, {big1, small1, big2, small2});
  ASSERT_TRUE(packed.ok()) << packed.status();
  const SameHostOffer offer = OfferSameHost(3, "pack", *packed);
  ASSERT_EQ(offer.header.same_host().ranges_size(), 4);
  for (const proto::SameHostRange& r : offer.header.same_host().ranges()) {
    EXPECT_TRUE(r.has_arena_block()) << r.length() << " bytes";
  }
  // The small members were copied when offered: later writes do not show.
  small1.flat<int32_t>()[0] = -7;
  PushAssembler assembler;
  auto out = assembler.Add(EncodeSameHostPush(offer));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(out->value.IsInitialized());
  EXPECT_EQ(out->value.NumElements(), 120'013);
  int64_t at = 0;
  for (const Tensor* member : {&big1, &small1_before, &big2, &small2}) {
    const int64_t n = member->NumElements();
    std::optional<Tensor> got = GatheredElements(out->value, at, at + n);
    ASSERT_TRUE(got.has_value()) << "member at " << at;
    EXPECT_TRUE(got->Equals(*member)) << "member at " << at;
    EXPECT_TRUE(got->buffer()->SharedWithOtherProcesses())
        << "member at " << at;
    at += n;
  }
  // Elements across two members are not one part's view.
  EXPECT_FALSE(GatheredElements(out->value, 49'999, 50'001).has_value());
  EXPECT_TRUE(big1.buffer()->SharedWithOtherProcesses());
  out->value = Tensor();
  EXPECT_FALSE(big1.buffer()->SharedWithOtherProcesses());
}

// An offer whose header a data connection already parsed is taken without
// framing it again, with the same result and the same checks.
TEST(SameHostTest, ParsedOfferGivesWhatTheFramedOneGives) {
  const Tensor value = Ramp(100'000);
  const SameHostOffer offer = OfferSameHost(5, "parsed", value);
  PushAssembler assembler;
  auto out = assembler.AddOffer(offer.header);
  ASSERT_TRUE(out.ok()) << out.status();
  if (!out->same_host_refused.empty()) {
    GTEST_SKIP() << "this process cannot read itself: "
                 << out->same_host_refused;
  }
  EXPECT_EQ(out->step_id, 5);
  EXPECT_EQ(out->key, "parsed");
  EXPECT_TRUE(out->value.Equals(value));
  proto::PushTensorHeader wrong = offer.header;
  wrong.set_total_bytes(wrong.total_bytes() - 4);
  auto refused = assembler.AddOffer(wrong);
  EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("parsed"));
}

// An offer naming bytes outside the block it names is refused as malformed;
// one naming an arena that is not the sender's is copied instead.
TEST(SameHostTest, ArenaOfferOutsideItsBlockIsInvalidAndAWrongArenaIsCopied) {
  ASSERT_TRUE(SharedArena::Enable().ok());
  Tensor value = Ramp(100'000);
  proto::PushTensorHeader header;
  {
    grpc::ByteBuffer message = EncodeSameHostPush(OfferSameHost(1, "k", value));
    ASSERT_TRUE(ParseFramedMessage(message, &header, "PushTensor").ok());
  }
  ASSERT_NE(header.same_host().arena_token(), 0u);
  ASSERT_EQ(header.same_host().ranges_size(), 1);
  PushAssembler assembler;

  proto::PushTensorHeader outside = header;
  outside.mutable_same_host()->mutable_ranges(0)->set_arena_offset(
      header.same_host().ranges(0).arena_offset() + (1 << 20));
  auto refused = assembler.Add(Framed(outside));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("'k'"));
  EXPECT_THAT(refused.status().message(), HasSubstr("block"));

  proto::PushTensorHeader other = header;
  other.mutable_same_host()->set_arena_token(header.same_host().arena_token() ^
                                             1);
  auto copied = assembler.Add(Framed(other));
  ASSERT_TRUE(copied.ok()) << copied.status();
  ASSERT_TRUE(copied->value.IsInitialized());
  EXPECT_TRUE(copied->value.Equals(value));
  EXPECT_FALSE(copied->value.buffer()->SharedWithOtherProcesses());
  EXPECT_FALSE(value.buffer()->SharedWithOtherProcesses());
}

// A variable whose value another process reads is copied before an update
// writes it, so that the reader's view does not change under it.
TEST(SameHostTest, VariableReadElsewhereIsCopiedBeforeAnUpdate) {
  ASSERT_TRUE(SharedArena::Enable().ok());
  Var var(DataType::kInt32);
  Tensor received;
  {
    absl::MutexLock lock(var.mu());
    var.set_value(Ramp(100'000));
    PushAssembler assembler;
    auto out =
        assembler.Add(EncodeSameHostPush(OfferSameHost(1, "k", var.value())));
    ASSERT_TRUE(out.ok()) << out.status();
    received = out->value;
  }
  absl::MutexLock lock(var.mu());
  const void* before = var.value().raw_data();
  const int32_t first = var.value().flat<int32_t>()[0];
  Tensor* value = var.mutable_value();
  EXPECT_NE(value->raw_data(), before);
  value->flat<int32_t>()[0] = first + 77;
  EXPECT_EQ(received.flat<int32_t>()[0], first);
  // Once the reader lets go, updates are in place again.
  received = Tensor();
  const void* now = var.value().raw_data();
  EXPECT_EQ(var.mutable_value()->raw_data(), now);
}

}  // namespace
}  // namespace distflow
