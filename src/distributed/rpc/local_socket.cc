#include "distributed/rpc/local_socket.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "distributed/rpc/data_socket.h"
#include "distributed/rpc/grpc_util.h"
#include "graph/device_name.h"
#include "proto/worker.grpc.pb.h"

namespace distflow {
namespace {

constexpr char kNamePrefix[] = "distflow/";
// How long the task on a Unix socket has to say who it is.
constexpr int kIdentifyTimeoutMs = 2000;

std::string PortOf(const std::string& address) {
  const size_t colon = address.rfind(':');
  return colon == std::string::npos ? "" : address.substr(colon + 1);
}

bool IsInterfaceAddress(const std::string& host) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* i = list; i != nullptr && !found; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const int family = i->ifa_addr->sa_family;
    const void* raw = nullptr;
    if (family == AF_INET) {
      raw = &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr;
    } else if (family == AF_INET6) {
      raw = &reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr;
    } else {
      continue;
    }
    found =
        inet_ntop(family, raw, text, sizeof(text)) != nullptr && host == text;
  }
  freeifaddrs(list);
  return found;
}

// Closes the descriptor when it goes out of scope.
struct ScopedFd {
  explicit ScopedFd(int fd) : fd(fd) {}
  ~ScopedFd() {
    if (fd >= 0) close(fd);
  }
  const int fd;
};

// connect(2) that gives up after a second (Linux applies the send timeout to
// connect), so that a probe never hangs on a full backlog or a filtered port.
bool ConnectWithin1s(int fd, const sockaddr* addr, socklen_t length) {
  const timeval timeout{1, 0};
  return fd >= 0 &&
         setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout)) ==
             0 &&
         connect(fd, addr, length) == 0;
}

// Whether the server on `channel` answers a status call, as `task` if that
// is not empty (the same job and index, however the names are spelled).
bool AnswersAs(const std::shared_ptr<grpc::Channel>& channel,
               const std::string& task) {
  auto stub = proto::WorkerService::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(kIdentifyTimeoutMs));
  proto::GetStatusRequest request;
  proto::GetStatusResponse response;
  if (!stub->GetStatus(&ctx, request, &response).ok()) return false;
  if (task.empty()) return true;
  auto wanted = DeviceName::Parse(task);
  auto found = DeviceName::Parse(response.task());
  return wanted.ok() && found.ok() && wanted->job == found->job &&
         wanted->task == found->task;
}

}  // namespace

std::shared_ptr<grpc::Channel> NewLocalSocketChannel(const std::string& address,
                                                     const std::string& task) {
  if (!IsLocalAddress(address) || !LocalSocketListening(address)) {
    return nullptr;
  }
  auto channel = NewChannel(LocalSocketTarget(address));
  return AnswersAs(channel, task) ? channel : nullptr;
}

bool LocalSocketAllowedByEnv() { return EnabledByEnv("DISTFLOW_LOCAL_SOCKET"); }

std::string LocalSocketTarget(const std::string& address) {
  return absl::StrCat("unix-abstract:", kNamePrefix, address);
}

bool IsLocalAddress(const std::string& address) {
  const std::string host = HostOfAddress(address);
  if (host == "localhost" || absl::StartsWith(host, "127.") || host == "::1") {
    return true;
  }
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) == 0 && host == name) return true;
  return IsInterfaceAddress(host);
}

bool LocalSocketListening(const std::string& address) {
  const std::string name = absl::StrCat(kNamePrefix, address);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // An abstract name starts with a NUL byte and is not NUL-terminated.
  if (name.size() + 1 > sizeof(addr.sun_path)) return false;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  const socklen_t length =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  ScopedFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  return ConnectWithin1s(fd.fd, reinterpret_cast<sockaddr*>(&addr), length);
}

bool TcpListening(const std::string& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (getaddrinfo(HostOfAddress(address).c_str(), PortOf(address).c_str(), &hints,
                  &list) != 0) {
    return false;
  }
  bool listening = false;
  for (addrinfo* a = list; a != nullptr && !listening; a = a->ai_next) {
    ScopedFd fd(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0));
    listening = ConnectWithin1s(fd.fd, a->ai_addr, a->ai_addrlen);
  }
  freeaddrinfo(list);
  return listening;
}

absl::StatusOr<std::unique_ptr<PortReservation>> PortReservation::Create(
    const std::string& host) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot reserve a port on '", host, "': not a numeric IPv4 address"));
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  socklen_t length = sizeof(addr);
  if (fd < 0 ||
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
      bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    const int error = errno;
    if (fd >= 0) close(fd);
    return absl::UnavailableError(absl::StrCat(
        "cannot reserve a port on ", host, ": ", std::strerror(error)));
  }
  return std::unique_ptr<PortReservation>(
      new PortReservation(fd, ntohs(addr.sin_port)));
}

PortReservation::~PortReservation() { close(fd_); }

}  // namespace distflow
