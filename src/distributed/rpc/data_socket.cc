#include "distributed/rpc/data_socket.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/thread_pool.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/tensor_wire.h"

namespace distflow {

bool DataConnectionAllowedByEnv() {
  return EnabledByEnv("DISTFLOW_DATA_CONNECTION");
}

absl::Status SendAll(int fd, iovec* iov, int count) {
  while (count > 0) {
    msghdr message{};
    message.msg_iov = iov;
    message.msg_iovlen = static_cast<size_t>(count);
    const ssize_t sent = sendmsg(fd, &message, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(std::strerror(errno));
    }
    size_t left = static_cast<size_t>(sent);
    while (count > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return absl::OkStatus();
}

std::string EncodeDataHello(const DataHello& hello) {
  std::string bytes(kDataHello, sizeof(kDataHello));
  auto append = [&bytes](uint64_t value, int n) {
    for (int i = 0; i < n; ++i)
      bytes.push_back(static_cast<char>(value >> (8 * i)));
  };
  append(hello.token, 8);
  append(hello.link, 8);
  append(hello.stripe, 4);
  return bytes;
}

bool DecodeDataHello(const char* bytes, DataHello* hello) {
  if (std::memcmp(bytes, kDataHello, sizeof(kDataHello)) != 0) return false;
  auto read = [bytes](size_t at, int n) {
    uint64_t value = 0;
    for (int i = 0; i < n; ++i) {
      value |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[at + i]))
               << (8 * i);
    }
    return value;
  };
  hello->token = read(8, 8);
  hello->link = read(16, 8);
  hello->stripe = static_cast<uint32_t>(read(24, 4));
  return true;
}

int DataSocketsFromEnv(int configured) {
  int sockets = configured;
  if (const char* env = std::getenv("DISTFLOW_DATA_SOCKETS")) {
    sockets = std::atoi(env);
  }
  return std::clamp(sockets, 1, kMaxDataSockets);
}

std::vector<int64_t> StripeParts(int64_t total, int sockets) {
  constexpr int64_t kPage = 4096;
  std::vector<int64_t> parts;
  int64_t start = 0;
  for (int i = 1; i < sockets; ++i) {
    const int64_t end = total / sockets * i / kPage * kPage;
    parts.push_back(std::max<int64_t>(end - start, 0));
    start = std::max(start, end);
  }
  parts.push_back(total - start);
  return parts;
}

bool PollingLeavesACore() { return ThreadPool::HardwareThreads() > 1; }

void PollUntilReadable(int fd, int64_t until_ns) {
  while (absl::GetCurrentTimeNanos() < until_ns) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 0) != 0) return;
    // (Lets a thread that waits for this core run first.)
    sched_yield();
  }
}

namespace {

// How long a reader that has part of a message polls its socket for the rest
// before it sleeps. The rest is on its way: a sender writes each frame whole.
// A reader that sleeps in recv is woken for each segment that comes while it
// waits, and having soon taken all there is, sleeps again: a 1 MiB tensor
// took about ten wake-ups, and moved 20-35% slower than with a reader that
// keeps up. A reader that polls finds each segment as it lands. Longer
// waits (a sender whose socket buffer is full, a slow network) end in a
// sleep.
constexpr int64_t kMidMessagePollNs = 50'000;

// recv of up to `n` bytes that first polls for up to kMidMessagePollNs when
// `poll_first`, then sleeps.
ssize_t RecvSome(int fd, char* p, size_t n, bool poll_first) {
  if (poll_first) {
    const int64_t until = absl::GetCurrentTimeNanos() + kMidMessagePollNs;
    do {
      const ssize_t got = recv(fd, p, n, MSG_DONTWAIT);
      if (got >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return got;
      sched_yield();  // (as in PollUntilReadable)
    } while (absl::GetCurrentTimeNanos() < until);
  }
  return recv(fd, p, n, 0);
}

}  // namespace

absl::Status RecvAll(int fd, void* data, size_t n, bool rest_of_message) {
  char* p = static_cast<char*>(data);
  // A message's first bytes may be long in coming (the next call of a
  // connection); once some have come, the rest follows at once.
  bool mid_message = rest_of_message;
  while (n > 0) {
    const ssize_t got = RecvSome(fd, p, n, mid_message && PollingLeavesACore());
    if (got == 0) return absl::UnavailableError("closed by the peer");
    if (got < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(std::strerror(errno));
    }
    p += got;
    n -= static_cast<size_t>(got);
    mid_message = true;
  }
  return absl::OkStatus();
}

absl::Status SendFrame(int fd, const google::protobuf::MessageLite& header,
                       const void* data, size_t n_data) {
  std::string framed = FramedHeader(header);
  iovec iov[2] = {{framed.data(), framed.size()},
                  {const_cast<void*>(data), n_data}};
  return SendAll(fd, iov, n_data > 0 ? 2 : 1);
}

absl::Status RecvFrameHeader(int fd, google::protobuf::MessageLite* header) {
  unsigned char length[4];
  absl::Status s = RecvAll(fd, length, sizeof(length));
  if (!s.ok()) return s;
  const uint32_t n = length[0] | (length[1] << 8) | (length[2] << 16) |
                     (static_cast<uint32_t>(length[3]) << 24);
  if (n > kMaxDataFrameHeader) {
    return absl::InvalidArgumentError(
        absl::StrCat("a frame header of ", n, " bytes (at most ",
                     kMaxDataFrameHeader, " are allowed)"));
  }
  std::string bytes(n, '\0');
  s = RecvAll(fd, bytes.data(), n, /*rest_of_message=*/true);
  if (!s.ok()) return s;
  if (!header->ParseFromString(bytes)) {
    return absl::InvalidArgumentError("a frame header that does not parse");
  }
  return absl::OkStatus();
}

void ConfigureDataSocket(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  int idle_s = 20, interval_s = 5, probes = 4;
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof(idle_s));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof(interval_s));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes));
  // Bytes the peer's host does not acknowledge for this long end the
  // connection (keepalive probes wait while data is in flight).
  unsigned int unacknowledged_ms = 60'000;
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &unacknowledged_ms,
             sizeof(unacknowledged_ms));
}

std::string BareHost(const std::string& host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    return host.substr(1, host.size() - 2);
  }
  return host;
}

std::string HostOfAddress(const std::string& address) {
  const size_t colon = address.rfind(':');
  return BareHost(colon == std::string::npos ? address
                                             : address.substr(0, colon));
}

uint64_t RandomDataToken() {
  std::random_device random;
  return (static_cast<uint64_t>(random()) << 32) ^ random();
}

void NameThisThread(const char* name) {
  pthread_setname_np(pthread_self(), std::string(name).substr(0, 15).c_str());
}

}  // namespace distflow
