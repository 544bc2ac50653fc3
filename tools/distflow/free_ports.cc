#include "tools/distflow/free_ports.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace distflow {
namespace tools {

absl::StatusOr<std::vector<int>> PickFreePorts(const std::string& host,
                                               int count) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", host, "' is not an IPv4 address: use one such as 127.0.0.1"));
  }
  // Every socket stays bound until all ports are chosen, so that the kernel
  // never hands out the same port twice.
  std::vector<int> sockets, ports;
  absl::Status status;
  for (int i = 0; i < count && status.ok(); ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      status = absl::ResourceExhaustedError(
          absl::StrCat("cannot create a socket: ", strerror(errno)));
      break;
    }
    sockets.push_back(fd);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      status = absl::UnavailableError(absl::StrCat(
          "cannot pick a free port on ", host, ": ", strerror(errno),
          " (is it an address of this machine?)"));
      break;
    }
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : sockets) close(fd);
  if (!status.ok()) return status;
  return ports;
}

}  // namespace tools
}  // namespace distflow
