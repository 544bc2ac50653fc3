#include "distributed/rpc/data_socket.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/thread_pool.h"
#include "distributed/rpc/data_frames.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/tensor_wire.h"

namespace distflow {

bool DataConnectionAllowedByEnv() {
  return EnabledByEnv("DISTFLOW_DATA_CONNECTION");
}

namespace {
std::atomic<int64_t> stall_timeout_ns{int64_t{30} * 1'000'000'000};
}  // namespace

absl::Duration DataStallTimeout() {
  return absl::Nanoseconds(stall_timeout_ns.load(std::memory_order_relaxed));
}

void SetDataStallTimeout(absl::Duration timeout) {
  stall_timeout_ns.store(
      std::max<int64_t>(absl::ToInt64Nanoseconds(timeout), 1'000'000),
      std::memory_order_relaxed);
}

absl::Status SendAll(int fd, iovec* iov, int count) {
  while (count > 0) {
    msghdr message{};
    message.msg_iov = iov;
    message.msg_iovlen = static_cast<size_t>(count);
    const ssize_t sent = sendmsg(fd, &message, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      // (The send timeout: see ConfigureDataSocket.)
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return absl::DeadlineExceededError(
            absl::StrCat("the peer took no bytes for ",
                         absl::FormatDuration(DataStallTimeout())));
      }
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
  while (SteadyNanos() < until_ns) {
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

// Waits until `fd` has something to read or `until_ns` (SteadyNanos) has
// passed, then reads what there is, up to `n` bytes; -1 with errno ETIMEDOUT
// when nothing came in time.
ssize_t RecvBy(int fd, char* p, size_t n, int64_t until_ns) {
  while (true) {
    const ssize_t got = recv(fd, p, n, MSG_DONTWAIT);
    if (got >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return got;
    const int64_t left_ns = until_ns - SteadyNanos();
    if (left_ns <= 0) {
      errno = ETIMEDOUT;
      return -1;
    }
    pollfd p_fd{fd, POLLIN, 0};
    const int64_t left_ms = std::min<int64_t>(left_ns / 1'000'000 + 1, INT_MAX);
    if (poll(&p_fd, 1, static_cast<int>(left_ms)) < 0 && errno != EINTR) {
      return -1;
    }
  }
}

// recv of up to `n` bytes that first polls for up to kMidMessagePollNs when
// `poll_first`, then sleeps, until `until_ns` (SteadyNanos; none when 0).
ssize_t RecvSome(int fd, char* p, size_t n, bool poll_first, int64_t until_ns) {
  if (poll_first) {
    const int64_t until = SteadyNanos() + kMidMessagePollNs;
    do {
      const ssize_t got = recv(fd, p, n, MSG_DONTWAIT);
      if (got >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return got;
      sched_yield();  // (as in PollUntilReadable)
    } while (SteadyNanos() < until);
  }
  if (until_ns != 0) return RecvBy(fd, p, n, until_ns);
  return recv(fd, p, n, 0);
}

// Reads exactly `n` bytes. Each wait for the next byte once `bounded` (from
// the start when set, else from the first byte) ends after the stall
// timeout; `whole_ns`, if not 0, is when all the bytes must have come.
absl::Status RecvBytes(int fd, char* p, size_t n, bool mid_message, bool poll,
                       bool bounded, int64_t whole_ns = 0) {
  const int64_t stall_ns = absl::ToInt64Nanoseconds(DataStallTimeout());
  while (n > 0) {
    int64_t until_ns = 0;
    if (bounded || mid_message) {
      until_ns = SteadyNanos() + stall_ns;
      if (whole_ns != 0) until_ns = std::min(until_ns, whole_ns);
    }
    const ssize_t got = RecvSome(
        fd, p, n, poll && mid_message && PollingLeavesACore(), until_ns);
    if (got == 0) return absl::UnavailableError("closed by the peer");
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == ETIMEDOUT && until_ns != 0) {
        return absl::DeadlineExceededError(absl::StrCat(
            "the peer sent part of a message and then nothing for ",
            absl::FormatDuration(DataStallTimeout())));
      }
      return absl::UnavailableError(std::strerror(errno));
    }
    p += got;
    n -= static_cast<size_t>(got);
    mid_message = true;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RecvAll(int fd, void* data, size_t n, bool rest_of_message) {
  // A message's first bytes may be long in coming (the next call of a
  // connection); once some have come, the rest follows at once.
  return RecvBytes(fd, static_cast<char*>(data), n, rest_of_message,
                   /*poll=*/true, /*bounded=*/false);
}

absl::Status RecvDue(int fd, void* data, size_t n) {
  return RecvBytes(fd, static_cast<char*>(data), n, /*mid_message=*/false,
                   /*poll=*/false, /*bounded=*/true);
}

absl::Status RecvWithin(int fd, void* data, size_t n, absl::Duration within) {
  return RecvBytes(fd, static_cast<char*>(data), n, /*mid_message=*/false,
                   /*poll=*/false, /*bounded=*/true,
                   SteadyNanos() + absl::ToInt64Nanoseconds(within));
}

absl::Status RecvGrowing(int fd, size_t n, std::string* out) {
  // The buffer at most doubles ahead of the bytes that came.
  constexpr size_t kFirstChunk = size_t{1} << 20;
  out->clear();
  while (out->size() < n) {
    const size_t have = out->size();
    const size_t grow = std::min(n - have, std::max(kFirstChunk, have));
    out->resize(have + grow);
    absl::Status s = RecvAll(fd, out->data() + have, grow,
                             /*rest_of_message=*/true);
    if (!s.ok()) return s;
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
  absl::Status s = RecvAll(fd, length, 1);
  // The rest of the header, once begun, must come whole within the stall
  // timeout: a peer that trickles it cannot hold the reader.
  const int64_t whole_ns =
      SteadyNanos() + absl::ToInt64Nanoseconds(DataStallTimeout());
  if (s.ok()) {
    s = RecvBytes(fd, reinterpret_cast<char*>(length) + 1, 3,
                  /*mid_message=*/true, /*poll=*/true, /*bounded=*/true,
                  whole_ns);
  }
  if (!s.ok()) return s;
  absl::StatusOr<uint32_t> n = DecodeFrameLength(length);
  if (!n.ok()) return n.status();
  // (Grown as the bytes come, in chunks: see RecvGrowing.)
  std::string bytes;
  constexpr size_t kChunk = size_t{64} << 10;
  while (s.ok() && bytes.size() < *n) {
    const size_t have = bytes.size();
    const size_t grow = std::min<size_t>(*n - have, std::max(kChunk, have));
    bytes.resize(have + grow);
    s = RecvBytes(fd, bytes.data() + have, grow, /*mid_message=*/true,
                  /*poll=*/true, /*bounded=*/true, whole_ns);
  }
  if (!s.ok()) return s;
  return ParseFrameHeader(bytes, header);
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
  // A blocking write that the peer leaves without room this long fails
  // (SendAll's DEADLINE_EXCEEDED); the kernel measures it on its monotonic
  // clock.
  const int64_t stall_us = absl::ToInt64Microseconds(DataStallTimeout());
  timeval send_timeout{static_cast<time_t>(stall_us / 1'000'000),
                       static_cast<suseconds_t>(stall_us % 1'000'000)};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof(send_timeout));
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
