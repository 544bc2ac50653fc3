// The Unix domain socket beside a task's TCP address. Every server also
// listens on an abstract Unix socket named after its TCP address; a task on
// the same host reaches it there instead of over loopback TCP, whose receive
// path (run inside the sender's write) costs more CPU and latency per
// message. Abstract names belong to a network namespace and vanish with the
// process that holds them, like TCP ports: tasks in another namespace or on
// another host never find the socket and use TCP.
#ifndef DISTFLOW_DISTRIBUTED_RPC_LOCAL_SOCKET_H_
#define DISTFLOW_DISTRIBUTED_RPC_LOCAL_SOCKET_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"

namespace distflow {

// False when the environment variable DISTFLOW_LOCAL_SOCKET is "0" (every
// task is reached over TCP, for example to measure the difference).
bool LocalSocketAllowedByEnv();

// The gRPC address of the Unix socket of the task at `address` ("host:port"
// as the cluster names it): "unix-abstract:distflow/host:port".
std::string LocalSocketTarget(const std::string& address);

// Whether the host of `address` is this machine: a loopback name or address,
// this machine's host name, or an address of one of its interfaces.
bool IsLocalAddress(const std::string& address);

// Whether a process of this network namespace listens on the Unix socket of
// the task at `address` (a connection to it is made and closed at once).
bool LocalSocketListening(const std::string& address);

// A channel to the Unix socket of the task at `address`, if the task is on
// this host, listens there and answers a status call on it within 2 s as
// `task` (as any task when `task` is empty); null otherwise. Made once per
// peer: the status call is a round trip.
std::shared_ptr<grpc::Channel> NewLocalSocketChannel(const std::string& address,
                                                     const std::string& task);

// Whether something on this host accepts TCP connections at `address`.
bool TcpListening(const std::string& address);

// A free TCP port on the IPv4 address `host` ("127.0.0.1", "0.0.0.0"), held
// until destroyed by a bound socket that does not listen. A server that binds
// the port with SO_REUSEADDR (as gRPC does) may listen on it meanwhile;
// nothing else is given it. Lets a server started on port 0 know its port
// before it listens, to name its Unix socket.
class PortReservation {
 public:
  // UNAVAILABLE naming the host when no port can be had; INVALID_ARGUMENT
  // when `host` is not a numeric IPv4 address.
  static absl::StatusOr<std::unique_ptr<PortReservation>> Create(
      const std::string& host);
  ~PortReservation();
  PortReservation(const PortReservation&) = delete;
  PortReservation& operator=(const PortReservation&) = delete;

  int port() const { return port_; }

 private:
  PortReservation(int fd, int port) : fd_(fd), port_(port) {}
  const int fd_;
  const int port_;
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_LOCAL_SOCKET_H_
