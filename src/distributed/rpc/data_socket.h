// Data connections: a plain TCP connection from one task to another, beside
// their gRPC connection, that carries the messages of steps: pushed tensors
// and RunGraph calls, and their answers. gRPC's cost per message (HTTP/2
// framing, its polling threads and their hand-overs: about 45 us each way
// between two processes of one host, against 7 us for a socket's read) is
// paid several times in every step; and over gRPC every byte of a tensor is
// copied from the socket into gRPC's buffers and again into the tensor. Here
// the sender writes from the tensor's buffer, one thread of the receiver
// waits on the socket and reads straight into the tensor's buffer, and
// answers wake the caller's thread directly (docs/benchmarks.md, "Data
// connections", "Steps on data connections"). gRPC stays in charge: it
// tells the sender where to connect (DataConnectionOffer), and takes every
// call while there is no data connection. The bytes on the wire
// (docs/formats.md, "Data connections"):
//
//   sender -> receiver: "dfdata02", token (uint64 little-endian); then per
//     call [uint32 little-endian n][n bytes: DataFrame][a push's raw bytes]
//   receiver -> sender: one byte (1: the token is this server's); then per
//     call [uint32 little-endian n][n bytes: DataAnswer][a RunGraph's
//     serialized RunGraphResponse, run_graph_bytes long]
//
// This file: what both ends share. data_connection.h is the sender's end,
// data_listener.h the receiver's.
#ifndef DISTFLOW_DISTRIBUTED_RPC_DATA_SOCKET_H_
#define DISTFLOW_DISTRIBUTED_RPC_DATA_SOCKET_H_

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "google/protobuf/message_lite.h"

namespace distflow {

// False when the environment variable DISTFLOW_DATA_CONNECTION is "0": a
// task then neither offers nor uses data connections (every call goes over
// gRPC, for example to measure the difference).
bool DataConnectionAllowedByEnv();

// The first bytes a sender writes, before the token.
inline constexpr char kDataHello[8] = {'d', 'f', 'd', 'a', 't', 'a', '0', '2'};

// The longest frame header either end accepts (a push header names a key and
// a shape, a RunGraph call a graph and a step: far less).
inline constexpr uint32_t kMaxDataFrameHeader = uint32_t{1} << 20;

// Writes every byte of `iov` (which it advances), retrying short writes.
// UNAVAILABLE with the system's reason when the connection fails.
absl::Status SendAll(int fd, iovec* iov, int count);

// Reads exactly `n` bytes into `data`. UNAVAILABLE when the connection fails
// or the peer closes it ("closed by the peer"). Once part of a message has
// come (some of these bytes, or, with `rest_of_message`, bytes before them),
// it polls the socket briefly before it sleeps, as the rest is on its way
// (see the definition).
absl::Status RecvAll(int fd, void* data, size_t n,
                     bool rest_of_message = false);

// Whether this process may run on more than one core, so that a thread that
// polls a socket instead of sleeping leaves the sender a core. On a virtual
// machine a sleeping thread is woken only after tens of microseconds, which
// the thread that wakes it pays too (docs/benchmarks.md, "Readers that poll
// instead of sleeping").
bool PollingLeavesACore();

// Polls `fd` until it has something to read (or has ended) or `until_ns`
// (absl::GetCurrentTimeNanos) has passed, without sleeping; between looks it
// yields the core to any thread waiting for it.
void PollUntilReadable(int fd, int64_t until_ns);

// Sends [n][header] and then `n_data` bytes from `data`, as one write where
// the system allows.
absl::Status SendFrame(int fd, const google::protobuf::MessageLite& header,
                       const void* data = nullptr, size_t n_data = 0);

// Reads one [n][header] into `header`. INVALID_ARGUMENT for a header longer
// than kMaxDataFrameHeader or one that does not parse.
absl::Status RecvFrameHeader(int fd, google::protobuf::MessageLite* header);

// TCP_NODELAY, close-on-exec, keepalive probes and a limit on unacknowledged
// bytes, so that a peer whose host died is noticed within about a minute,
// whether or not a push is in flight.
void ConfigureDataSocket(int fd);

// The host of "host:port" (or of "[v6 address]:port") as getaddrinfo takes
// it; a bare host as it is, without brackets.
std::string HostOfAddress(const std::string& address);
std::string BareHost(const std::string& host);

// Names the calling thread for profiles and scheduler traces (the kernel
// keeps 15 characters).
void NameThisThread(const char* name);

// A random token (from the system's entropy source).
uint64_t RandomDataToken();

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_DATA_SOCKET_H_
