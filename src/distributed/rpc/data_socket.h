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
//   sender -> receiver: a hello (below); then per call [uint32
//     little-endian n][n bytes: DataFrame][a push's raw bytes]
//   receiver -> sender: one byte (1: the token is this server's); then per
//     call [uint32 little-endian n][n bytes: DataAnswer][a RunGraph's
//     serialized RunGraphResponse, run_graph_bytes long]
//
// A connection may have stripes: more sockets between the same two tasks,
// each opened with a hello that names the connection. A large push's last
// bytes then go on the stripes, each written by a thread of its own and read
// by a thread of the receiver's straight into the same tensor, while the
// first socket carries the frame and the first part. One TCP stream between
// two processes of a 2-core virtual machine moved 4 MiB messages at about
// 3.5 GB/s, two streams at 5-12 GB/s (docs/benchmarks.md, "Large tensors
// on two sockets"); between hosts, several streams are how fast links are
// filled.
//
//   sender -> receiver, on each socket: "dfdata03", token, link id (each a
//     uint64 little-endian), stripe (uint32 little-endian; 0: the first
//     socket)
//   on a stripe, sender -> receiver: the stripe's part of each striped push,
//     in the order of their frames (DataFrame.stripe_bytes)
//
// This file: what both ends share. data_connection.h is the sender's end,
// data_listener.h the receiver's.
#ifndef DISTFLOW_DISTRIBUTED_RPC_DATA_SOCKET_H_
#define DISTFLOW_DISTRIBUTED_RPC_DATA_SOCKET_H_

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "google/protobuf/message_lite.h"

namespace distflow {

// False when the environment variable DISTFLOW_DATA_CONNECTION is "0": a
// task then neither offers nor uses data connections (every call goes over
// gRPC, for example to measure the difference).
bool DataConnectionAllowedByEnv();

// The first bytes a sender writes on each socket, before the rest of its
// hello.
inline constexpr char kDataHello[8] = {'d', 'f', 'd', 'a', 't', 'a', '0', '3'};

// What a socket's hello says: the listener's token, the connection the socket
// belongs to (a random link id that the sender draws), and its place in it.
struct DataHello {
  uint64_t token = 0;
  uint64_t link = 0;
  // 0: the connection's first socket, which carries the frames; 1 and on:
  // its stripes, opened in that order once the first has been accepted.
  uint32_t stripe = 0;
};
inline constexpr size_t kDataHelloBytes = 28;
std::string EncodeDataHello(const DataHello& hello);
// False when `bytes` (kDataHelloBytes of them) are not a hello of this
// version.
bool DecodeDataHello(const char* bytes, DataHello* hello);

// The most sockets a data connection has.
inline constexpr int kMaxDataSockets = 8;
// The sockets per data connection: `configured` (ServerOptions::data_sockets),
// unless the environment variable DISTFLOW_DATA_SOCKETS says otherwise; held
// to 1..kMaxDataSockets.
int DataSocketsFromEnv(int configured);
// Pushes of at least this many bytes are split across a connection's
// sockets. Below it, the hand-over to the stripes' threads costs more than
// it saves: split in two, 512 KiB moved at 3.0-4.2 GB/s against 4.1-5.0 on
// one socket, and 1 MiB at 4.3-4.8 against 3.3-3.5.
inline constexpr int64_t kStripeMinBytes = int64_t{1} << 20;
// How a push of `total` bytes is split across `sockets` sockets: each
// socket's part, the first socket's first. The parts but the last are
// multiples of 4 KiB (pages of the tensors' buffers).
std::vector<int64_t> StripeParts(int64_t total, int sockets);

// The longest frame header either end accepts (a push header names a key and
// a shape, a RunGraph call a graph and a step: far less).
inline constexpr uint32_t kMaxDataFrameHeader = uint32_t{1} << 20;

// How long a peer may leave a message half sent, or leave this end's bytes
// unread, before the connection is dropped: a sender writes each frame whole,
// so a pause this long mid-frame means a stopped, hung or hostile peer, which
// would otherwise pin a thread and the frame's buffer. 30 s by default; tests
// shorten it. Applies to sockets configured (ConfigureDataSocket) after it is
// set.
absl::Duration DataStallTimeout();
void SetDataStallTimeout(absl::Duration timeout);

// Writes every byte of `iov` (which it advances), retrying short writes.
// UNAVAILABLE with the system's reason when the connection fails;
// DEADLINE_EXCEEDED when the peer takes no bytes for DataStallTimeout() (on a
// socket configured by ConfigureDataSocket).
absl::Status SendAll(int fd, iovec* iov, int count);

// Reads exactly `n` bytes into `data`. UNAVAILABLE when the connection fails
// or the peer closes it ("closed by the peer"). Once part of a message has
// come (some of these bytes, or, with `rest_of_message`, bytes before them),
// it polls the socket briefly before it sleeps, as the rest is on its way
// (see the definition), and DEADLINE_EXCEEDED ends a wait of more than
// DataStallTimeout() for the next byte. A message's first byte is waited for
// without limit (calls come whenever steps run; keepalive probes notice a
// dead host).
absl::Status RecvAll(int fd, void* data, size_t n,
                     bool rest_of_message = false);
// Reads exactly `n` bytes that are due now (a stripe's part of a push whose
// frame has come): every wait for the next byte, the first included, is
// limited to DataStallTimeout(), and it does not poll.
absl::Status RecvDue(int fd, void* data, size_t n);
// Reads exactly `n` bytes that must all come within `within` (a hello).
absl::Status RecvWithin(int fd, void* data, size_t n, absl::Duration within);
// Reads `n` bytes into `out` (replacing what it held), growing it as the
// bytes arrive instead of allocating `n` up front: a peer that announces a
// large message and sends little of it holds little memory. Waits as
// RecvAll with `rest_of_message` does.
absl::Status RecvGrowing(int fd, size_t n, std::string* out);

// Whether this process may run on more than one core, so that a thread that
// polls a socket instead of sleeping leaves the sender a core. On a virtual
// machine a sleeping thread is woken only after tens of microseconds, which
// the thread that wakes it pays too (docs/benchmarks.md, "Readers that poll
// instead of sleeping").
bool PollingLeavesACore();

// Polls `fd` until it has something to read (or has ended) or `until_ns`
// has passed, without sleeping; between looks it
// yields the core to any thread waiting for it. (`until_ns`: SteadyNanos.)
void PollUntilReadable(int fd, int64_t until_ns);

// Sends [n][header] and then `n_data` bytes from `data`, as one write where
// the system allows.
absl::Status SendFrame(int fd, const google::protobuf::MessageLite& header,
                       const void* data = nullptr, size_t n_data = 0);

// Reads one [n][header] into `header`. INVALID_ARGUMENT for a header longer
// than kMaxDataFrameHeader or one that does not parse (data_frames.h);
// DEADLINE_EXCEEDED when the header, once begun, has not all come within
// DataStallTimeout().
absl::Status RecvFrameHeader(int fd, google::protobuf::MessageLite* header);

// TCP_NODELAY, close-on-exec, keepalive probes and a limit on unacknowledged
// bytes, so that a peer whose host died is noticed within about a minute,
// whether or not a push is in flight; and a send timeout of
// DataStallTimeout(), so that no write waits forever on a peer that reads
// nothing.
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
