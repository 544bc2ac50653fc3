// What both ends of a data connection share (data_socket.h), on a real TCP
// connection on 127.0.0.1: reading the rest of a message that comes in parts.
#include "distributed/rpc/data_socket.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

// Two ends of a TCP connection on 127.0.0.1, closed when it goes.
struct TcpPair {
  TcpPair() {
    const int listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), len), 0);
    EXPECT_EQ(listen(listener, 1), 0);
    EXPECT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len),
              0);
    sender = socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(connect(sender, reinterpret_cast<sockaddr*>(&addr), len), 0);
    receiver = accept(listener, nullptr, nullptr);
    close(listener);
    ConfigureDataSocket(sender);
    ConfigureDataSocket(receiver);
  }
  ~TcpPair() {
    if (sender >= 0) close(sender);
    close(receiver);
  }
  void Send(const char* data, size_t n) {
    iovec iov{const_cast<char*>(data), n};
    EXPECT_TRUE(SendAll(sender, &iov, 1).ok());
  }
  int sender = -1;
  int receiver = -1;
};

// Bytes that differ from one offset to the next.
std::vector<char> Pattern(size_t n) {
  std::vector<char> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>(i * 7 + i / 251);
  return bytes;
}

// A reader that has part of a message polls for the rest only briefly: a
// rest that comes long after is still waited for, and read whole.
TEST(RecvAllTest, TheRestOfAMessageThatComesLateIsReadWhole) {
  for (bool rest_of_message : {false, true}) {
    TcpPair pair;
    const std::vector<char> sent = Pattern(3 << 20);
    const size_t first = 100'000;
    std::thread sender([&] {
      pair.Send(sent.data(), first);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      pair.Send(sent.data() + first, sent.size() - first);
    });
    std::vector<char> got(sent.size());
    const auto start = std::chrono::steady_clock::now();
    const absl::Status s =
        RecvAll(pair.receiver, got.data(), got.size(), rest_of_message);
    const auto took = std::chrono::steady_clock::now() - start;
    sender.join();
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(got, sent);
    EXPECT_GE(took, std::chrono::milliseconds(45));
  }
}

// Parts that each fill the socket's buffer several times over, with pauses
// between them: every byte lands where it belongs.
TEST(RecvAllTest, ManyPartsWithPausesArriveInOrder) {
  TcpPair pair;
  const std::vector<char> sent = Pattern(16 << 20);
  const size_t part = 1 << 20;
  std::thread sender([&] {
    for (size_t at = 0; at < sent.size(); at += part) {
      pair.Send(sent.data() + at, part);
      if (at % (4 * part) == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
  });
  std::vector<char> got(sent.size());
  const absl::Status s = RecvAll(pair.receiver, got.data(), got.size());
  sender.join();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(got, sent);
}

// A peer that closes mid-message is reported, whether the reader is still
// polling for the rest or has gone to sleep waiting for it.
TEST(RecvAllTest, APeerThatClosesMidMessageIsReported) {
  for (int pause_ms : {0, 50}) {
    TcpPair pair;
    const std::vector<char> sent = Pattern(1000);
    std::thread sender([&] {
      pair.Send(sent.data(), 400);
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      close(pair.sender);
      pair.sender = -1;
    });
    std::vector<char> got(sent.size());
    const absl::Status s = RecvAll(pair.receiver, got.data(), got.size());
    sender.join();
    EXPECT_TRUE(absl::IsUnavailable(s)) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("closed by the peer"));
  }
}

}  // namespace
}  // namespace distflow
