#include "distributed/rpc/data_listener.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <system_error>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/step_trace.h"
#include "distributed/rpc/data_socket.h"
#include "distributed/rpc/tensor_wire.h"
#include "proto/worker.pb.h"

namespace distflow {
namespace {

// How long a new connection may take to say hello.
constexpr absl::Duration kHelloTimeout = absl::Seconds(10);
// Connections served at once (each has a thread): far more than a cluster's
// tasks, far fewer than a process may start.
constexpr size_t kMaxConnections = 512;

// Reads and drops `n` bytes.
absl::Status SkipBytes(int fd, int64_t n) {
  std::vector<char> scratch(std::min<int64_t>(n, int64_t{1} << 20));
  for (int64_t left = n; left > 0;) {
    const size_t chunk = std::min<int64_t>(left, scratch.size());
    absl::Status s = RecvDue(fd, scratch.data(), chunk);
    if (!s.ok()) return s;
    left -= static_cast<int64_t>(chunk);
  }
  return absl::OkStatus();
}

std::string PeerName(int fd) {
  sockaddr_storage peer{};
  socklen_t len = sizeof(peer);
  char host[NI_MAXHOST] = "?";
  char port[NI_MAXSERV] = "?";
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0) {
    getnameinfo(reinterpret_cast<sockaddr*>(&peer), len, host, sizeof(host),
                port, sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV);
  }
  return absl::StrCat(host, ":", port);
}

}  // namespace

// One accepted connection. Answers may be written from any thread (a call's
// callback), so writes are serialized; the socket is closed once nothing
// refers to it.
struct DataListener::Connection {
  explicit Connection(int fd) : fd(fd), peer(PeerName(fd)) {}
  ~Connection() { close(fd); }

  // Writes the answer to call `call_id`: its status, a push's `response`,
  // and the bytes of a RunGraph's `payload` after the frame.
  void Answer(uint64_t call_id, const absl::Status& status,
              const proto::PushTensorResponse* response = nullptr,
              const std::string& payload = std::string()) {
    proto::DataAnswer answer;
    answer.set_call_id(call_id);
    answer.set_code(static_cast<int>(status.code()));
    answer.set_message(std::string(status.message()));
    if (response != nullptr) *answer.mutable_push() = *response;
    answer.set_run_graph_bytes(static_cast<int64_t>(payload.size()));
    absl::MutexLock lock(&write_mu);
    // A failed write means the sender is gone or stuck: the connection ends
    // (the sender fails its calls itself).
    if (!SendFrame(fd, answer, payload.data(), payload.size()).ok()) {
      shutdown(fd, SHUT_RDWR);
    }
  }

  // Whether this thread's `turn` of reading is still on.
  bool Reads(uint64_t turn) {
    absl::MutexLock lock(&turn_mu);
    return turn == this->turn;
  }
  // Ends the reading turn of a reader that has been busy with a call's work
  // since before `cutoff`: true, with the new turn, if it did.
  bool TakeReading(SteadyTime cutoff, uint64_t* new_turn) {
    absl::MutexLock lock(&turn_mu);
    if (working_since == SteadyTime::max() || working_since > cutoff) {
      return false;
    }
    working_since = SteadyTime::max();
    *new_turn = ++turn;
    return true;
  }

  const int fd;
  const std::string peer;
  absl::Mutex write_mu;
  // Which reader's turn it is (each new reader takes the next), and since
  // when that reader has been busy with a call's work (SteadyTime::max() while
  // it reads).
  absl::Mutex turn_mu;
  uint64_t turn ABSL_GUARDED_BY(turn_mu) = 0;
  SteadyTime working_since ABSL_GUARDED_BY(turn_mu) = SteadyTime::max();
  // The RunGraph calls running, by call id, and whether the connection has
  // ended (then the calls still running were abandoned).
  absl::Mutex calls_mu;
  absl::flat_hash_map<uint64_t, std::shared_ptr<proto::RunGraphRequest>> running
      ABSL_GUARDED_BY(calls_mu);
  bool ended ABSL_GUARDED_BY(calls_mu) = false;
  // Until when (SteadyNanos) a reader polls for the next frame (see
  // kNextStepPoll and kNextPushPoll).
  std::atomic<int64_t> poll_next_until_ns{0};
  // Has readers poll for the next frame until at least `delay` from now.
  void PollForNextFrame(absl::Duration delay) {
    const int64_t until = SteadyNanos() + absl::ToInt64Nanoseconds(delay);
    int64_t was = poll_next_until_ns.load(std::memory_order_relaxed);
    while (was < until && !poll_next_until_ns.compare_exchange_weak(
                              was, until, std::memory_order_relaxed)) {
    }
  }
  // A first socket's stripes, in order, and the link id that names it in
  // their hellos (0 for a stripe's own socket).
  absl::Mutex stripes_mu;
  std::vector<std::shared_ptr<Stripe>> stripes ABSL_GUARDED_BY(stripes_mu);
  uint64_t link ABSL_GUARDED_BY(stripes_mu) = 0;
  bool stripes_ended ABSL_GUARDED_BY(stripes_mu) = false;
};

// A stripe of a connection (data_socket.h) and the part of a push that its
// thread reads next.
struct DataListener::Stripe {
  explicit Stripe(std::shared_ptr<Connection> socket)
      : socket(std::move(socket)) {}

  // Has the stripe's thread read the next `n` bytes into `into` (or drop
  // them, if null); false if the stripe has ended.
  bool Post(char* into, int64_t n) {
    absl::MutexLock lock(&mu);
    if (ended) return false;
    this->into = into;
    this->n = n;
    posted = true;
    return true;
  }
  // Waits for the part posted last to be read; its outcome.
  absl::Status Wait() {
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(
        +[](bool* posted) { return !*posted; }, &posted));
    return status;
  }
  // Ends the stripe: its thread returns once it has read what was posted.
  void End() {
    shutdown(socket->fd, SHUT_RDWR);
    absl::MutexLock lock(&mu);
    ended = true;
  }

  // The accepted socket.
  const std::shared_ptr<Connection> socket;
  absl::Mutex mu;
  char* into ABSL_GUARDED_BY(mu) = nullptr;
  int64_t n ABSL_GUARDED_BY(mu) = 0;
  bool posted ABSL_GUARDED_BY(mu) = false;
  // The outcome of the last part read.
  absl::Status status ABSL_GUARDED_BY(mu);
  bool ended ABSL_GUARDED_BY(mu) = false;
};

// Marks the reader of a connection, for its turn, as busy with a call's work
// while it lives.
class DataListener::Working {
 public:
  Working(Connection* connection, uint64_t turn)
      : connection_(connection), turn_(turn) {
    absl::MutexLock lock(&connection_->turn_mu);
    if (connection_->turn == turn_) connection_->working_since = SteadyNow();
  }
  ~Working() {
    absl::MutexLock lock(&connection_->turn_mu);
    if (connection_->turn == turn_) {
      connection_->working_since = SteadyTime::max();
    }
  }
  Working(const Working&) = delete;
  Working& operator=(const Working&) = delete;

 private:
  Connection* const connection_;
  const uint64_t turn_;
};

// Counts a push's bytes as being received while it lives, if they fit the
// listener's limit.
class DataListener::Receiving {
 public:
  Receiving(DataListener* listener, int64_t bytes)
      : listener_(listener), bytes_(listener->Reserve(bytes) ? bytes : -1) {}
  ~Receiving() {
    if (bytes_ > 0) listener_->receiving_.fetch_sub(bytes_);
  }
  Receiving(const Receiving&) = delete;
  Receiving& operator=(const Receiving&) = delete;
  bool fits() const { return bytes_ >= 0; }

 private:
  DataListener* const listener_;
  const int64_t bytes_;
};

bool DataListener::Reserve(int64_t bytes) {
  int64_t was = receiving_.load();
  do {
    if (bytes > limits_.receiving_bytes - was) return false;
  } while (!receiving_.compare_exchange_weak(was, was + bytes));
  return true;
}

absl::StatusOr<std::unique_ptr<DataListener>> DataListener::Create(
    const std::string& host, std::shared_ptr<RecvBufferPool> pool,
    Handlers handlers, DataListenerLimits limits) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const int resolved = getaddrinfo(BareHost(host).c_str(), "0", &hints, &found);
  if (resolved != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen for data connections on ", host, ": ",
                     gai_strerror(resolved)));
  }
  std::string error = "no address";
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 64) != 0) {
      error = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  if (fd >= 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
    error = std::strerror(errno);
    close(fd);
    fd = -1;
  }
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen for data connections on ", host, ": ", error));
  }
  const int port =
      ntohs(bound.ss_family == AF_INET6
                ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return std::unique_ptr<DataListener>(
      new DataListener(fd, port, std::move(pool), std::move(handlers), limits));
}

DataListener::DataListener(int fd, int port,
                           std::shared_ptr<RecvBufferPool> pool,
                           Handlers handlers, DataListenerLimits limits)
    : fd_(fd),
      port_(port),
      token_(RandomDataToken()),
      pool_(std::move(pool)),
      handlers_(std::move(handlers)),
      limits_(limits) {
  acceptor_ = std::thread(&DataListener::AcceptLoop, this);
  watcher_ = std::thread(&DataListener::WatchLoop, this);
}

DataListener::~DataListener() {
  Close();
  close(fd_);
}

void DataListener::Close() {
  std::vector<Served> served;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
    served = std::move(served_);
    // Wakes the acceptor out of accept(), and each reader out of recv().
    shutdown(fd_, SHUT_RDWR);
    for (const Served& s : served) shutdown(s.connection->fd, SHUT_RDWR);
  }
  acceptor_.join();
  watcher_.join();
  for (Served& s : served) {
    for (Reader& reader : s.readers) reader.thread.join();
  }
}

bool DataListener::StartReader(const std::shared_ptr<Connection>& connection,
                               uint64_t turn) {
  auto ended = std::make_shared<std::atomic<bool>>(false);
  std::thread thread;
  try {
    thread = std::thread([this, connection, turn, ended] {
      NameThisThread("df_serve");
      // (The last resort: what a call throws is caught in ServeOne; this
      // catches the rest, so that no peer can end the process.)
      try {
        if (turn == 0) {
          Serve(connection);
        } else {
          ReadCalls(connection, turn);
        }
      } catch (const std::exception& e) {
        DF_LOG(Warning) << "data connection from " << connection->peer << ": "
                        << e.what() << "; closing it";
        EndConnection(connection);
      } catch (...) {
        DF_LOG(Warning) << "data connection from " << connection->peer
                        << ": an unknown exception; closing it";
        EndConnection(connection);
      }
      ended->store(true);
    });
  } catch (const std::system_error& e) {
    DF_LOG(Warning) << "data connections: cannot serve " << connection->peer
                    << ": " << e.what();
    // (A reader handed off to nobody would leave its steps running.)
    EndConnection(connection);
    return false;
  }
  for (Served& s : served_) {
    if (s.connection == connection) {
      s.readers.push_back({std::move(thread), std::move(ended)});
      return true;
    }
  }
  Served served{connection, {}};
  served.readers.push_back({std::move(thread), std::move(ended)});
  served_.push_back(std::move(served));
  return true;
}

void DataListener::ReapReaders() {
  for (auto it = served_.begin(); it != served_.end();) {
    std::vector<Reader>& readers = it->readers;
    for (auto r = readers.begin(); r != readers.end();) {
      if (r->ended->load()) {
        r->thread.join();
        r = readers.erase(r);
      } else {
        ++r;
      }
    }
    it = readers.empty() ? served_.erase(it) : it + 1;
  }
}

void DataListener::WatchLoop() {
  NameThisThread("df_watch");
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&closed_), kReadingHandOff)) {
    const SteadyTime cutoff =
        SteadyNow() - absl::ToChronoNanoseconds(kReadingHandOff);
    // (By index: StartReader may add to served_.)
    const size_t count = served_.size();
    for (size_t i = 0; i < count; ++i) {
      const std::shared_ptr<Connection> connection = served_[i].connection;
      uint64_t turn = 0;
      if (connection->TakeReading(cutoff, &turn)) {
        handoffs_.fetch_add(1, std::memory_order_relaxed);
        StartReader(connection, turn);
      }
    }
    ReapReaders();
  }
}

void DataListener::AcceptLoop() {
  NameThisThread("df_accept");
  while (true) {
    const int fd = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    absl::MutexLock lock(&mu_);
    if (closed_) {
      if (fd >= 0) close(fd);
      return;
    }
    if (fd < 0) {
      if (errno != EINTR && errno != ECONNABORTED) {
        // Out of descriptors or memory: try again shortly.
        if (!accept_failing_) {
          DF_LOG(Warning) << "data connections: accept failed: "
                          << std::strerror(errno) << "; retrying";
          accept_failing_ = true;
        }
        mu_.AwaitWithTimeout(absl::Condition(&closed_),
                             absl::Milliseconds(100));
      }
      continue;
    }
    accept_failing_ = false;
    ReapReaders();
    std::shared_ptr<Connection> connection;
    try {
      connection = std::make_shared<Connection>(fd);
    } catch (const std::exception& e) {
      DF_LOG(Warning) << "data connections: cannot serve a new one: "
                      << e.what();
      close(fd);
      continue;
    }
    if (served_.size() >= kMaxConnections) {
      DF_LOG(Warning) << "data connections: refusing " << connection->peer
                      << ": " << served_.size() << " are open already";
      continue;  // (closed with `connection`)
    }
    StartReader(connection, /*turn=*/0);
  }
}

void DataListener::Serve(const std::shared_ptr<Connection>& connection) {
  const int fd = connection->fd;
  ConfigureDataSocket(fd);
  // (ConfigureDataSocket limits each write to DataStallTimeout().)
  char bytes[kDataHelloBytes];
  DataHello hello;
  bool ours = false;
  // For a stripe: the connection it belongs to, and the stripe.
  std::shared_ptr<Connection> first;
  std::shared_ptr<Stripe> stripe;
  if (RecvWithin(fd, bytes, sizeof(bytes), kHelloTimeout).ok() &&
      DecodeDataHello(bytes, &hello) && hello.token == token_) {
    if (hello.stripe == 0) {
      {
        absl::MutexLock lock(&connection->stripes_mu);
        connection->link = hello.link;
      }
      absl::MutexLock lock(&links_mu_);
      links_[hello.link] = connection;
      ours = true;
    } else {
      stripe = AttachStripe(hello, connection, &first);
      ours = stripe != nullptr;
    }
  }
  char answer = ours ? 1 : 0;
  iovec iov{&answer, 1};
  const bool answered = SendAll(fd, &iov, 1).ok();
  if (answered && ours) {
    if (stripe == nullptr) {
      ReadCalls(connection, /*turn=*/0);
    } else {
      ReadStripe(first, *stripe);
    }
    return;
  }
  // (A stripe whose sender missed the answer goes unused.)
  if (stripe != nullptr) stripe->End();
  EndConnection(connection);
}

std::shared_ptr<DataListener::Stripe> DataListener::AttachStripe(
    const DataHello& hello, const std::shared_ptr<Connection>& socket,
    std::shared_ptr<Connection>* first) {
  {
    absl::MutexLock lock(&links_mu_);
    auto it = links_.find(hello.link);
    if (it != links_.end()) *first = it->second.lock();
  }
  if (*first == nullptr) return nullptr;
  absl::MutexLock lock(&(*first)->stripes_mu);
  // Stripes come in order, once their connection has been accepted.
  if ((*first)->stripes_ended || hello.stripe != (*first)->stripes.size() + 1 ||
      hello.stripe >= static_cast<uint32_t>(kMaxDataSockets)) {
    return nullptr;
  }
  auto stripe = std::make_shared<Stripe>(socket);
  (*first)->stripes.push_back(stripe);
  return stripe;
}

void DataListener::ReadStripe(const std::shared_ptr<Connection>& first,
                              Stripe& stripe) {
  const int fd = stripe.socket->fd;
  while (true) {
    char* into = nullptr;
    int64_t n = 0;
    {
      absl::MutexLock lock(&stripe.mu);
      auto ready = [&stripe]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(stripe.mu) {
        return stripe.posted || stripe.ended;
      };
      stripe.mu.Await(absl::Condition(&ready));
      if (!stripe.posted) return;  // ended
      into = stripe.into;
      n = stripe.n;
    }
    // (The part is due: its frame has come on the first socket.)
    absl::Status s = into != nullptr ? RecvDue(fd, into, static_cast<size_t>(n))
                                     : SkipBytes(fd, n);
    {
      absl::MutexLock lock(&stripe.mu);
      stripe.status = s;
      stripe.posted = false;
      if (!s.ok()) stripe.ended = true;
    }
    if (!s.ok()) {
      if (absl::IsDeadlineExceeded(s)) {
        DF_LOG(Warning) << "data connection from " << stripe.socket->peer
                        << " (a stripe): " << s.message() << "; closing it";
      }
      EndConnection(first);
      return;
    }
  }
}

void DataListener::ReadCalls(const std::shared_ptr<Connection>& connection,
                             uint64_t turn) {
  while (true) {
    const bool more = ServeOne(connection, turn);
    // A call's work that ran long here: another thread reads on.
    if (!connection->Reads(turn)) return;
    if (!more) break;
  }
  EndConnection(connection);
}

void DataListener::EndConnection(
    const std::shared_ptr<Connection>& connection) {
  shutdown(connection->fd, SHUT_RDWR);
  std::vector<std::shared_ptr<Stripe>> stripes;
  uint64_t link = 0;
  {
    absl::MutexLock lock(&connection->stripes_mu);
    connection->stripes_ended = true;
    stripes = connection->stripes;
    link = connection->link;
  }
  for (const auto& stripe : stripes) stripe->End();
  if (link != 0) {
    absl::MutexLock lock(&links_mu_);
    auto it = links_.find(link);
    if (it != links_.end() && it->second.lock() == connection) links_.erase(it);
  }
  // The caller of the steps still running here is gone: nobody would abort
  // them, and their ops may wait for its tensors.
  std::vector<std::shared_ptr<proto::RunGraphRequest>> abandoned;
  {
    absl::MutexLock lock(&connection->calls_mu);
    if (connection->ended) return;  // (ended before, by a stripe)
    connection->ended = true;
    for (auto& [id, request] : connection->running) {
      abandoned.push_back(request);
    }
  }
  if (handlers_.abandoned) {
    for (const auto& request : abandoned) handlers_.abandoned(*request);
  }
}

absl::StatusOr<Tensor> DataListener::Allocate(DataType dtype,
                                              const TensorShape& shape,
                                              int64_t bytes) {
  try {
    if (pool_ != nullptr) return pool_->Allocate(dtype, shape);
    return Tensor::Create(dtype, shape, /*zero=*/false);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("out of memory for a tensor of ", bytes, " bytes"));
  }
}

void DataListener::AwaitNextFrame(Connection& connection) {
  if (!PollingLeavesACore()) return;
  const int64_t now = SteadyNanos();
  int64_t until = connection.poll_next_until_ns.load(std::memory_order_relaxed);
  // (The lock only where some step runs: this is on every frame's path.)
  if (running_calls_->load(std::memory_order_relaxed) > 0) {
    absl::MutexLock lock(&connection.calls_mu);
    if (!connection.running.empty()) {
      // Its step waits for the caller's next push.
      if (running_calls_->load(std::memory_order_relaxed) > 1) return;
      until = now + absl::ToInt64Nanoseconds(kRunningStepPoll);
    }
  }
  if (now >= until) return;
  bool idle = false;
  if (!polling_.compare_exchange_strong(idle, true)) return;
  PollUntilReadable(connection.fd, until);
  polling_.store(false);
}

bool DataListener::ServeOne(const std::shared_ptr<Connection>& connection,
                            uint64_t turn) {
  AwaitNextFrame(*connection);
  proto::DataFrame frame;
  absl::Status s = RecvFrameHeader(connection->fd, &frame);
  if (!s.ok()) {
    if (absl::IsInvalidArgument(s)) {
      DF_LOG(Warning) << "data connection from " << connection->peer
                      << ": malformed frame (" << s.message()
                      << "); closing it";
    } else if (absl::IsDeadlineExceeded(s)) {
      DF_LOG(Warning) << "data connection from " << connection->peer << ": "
                      << s.message() << "; closing it";
    }
    return false;
  }
  try {
    return ServeFrame(connection, turn, frame);
  } catch (const std::exception& e) {
    // The call's work threw (an allocation refused, a bug): the call fails,
    // and the connection ends, as what follows its frame is unknown.
    DF_LOG(Warning) << "data connection from " << connection->peer << ": call "
                    << frame.call_id() << " threw (" << e.what()
                    << "); closing it";
    connection->Answer(
        frame.call_id(),
        absl::InternalError(
            absl::StrCat("the call failed on the receiving task: ", e.what())));
    return false;
  }
}

bool DataListener::ServeFrame(const std::shared_ptr<Connection>& connection,
                              uint64_t turn, proto::DataFrame& frame) {
  switch (frame.kind_case()) {
    case proto::DataFrame::kPush:
      return ServePush(connection, turn, frame);
    case proto::DataFrame::kRunGraph:
      ServeRunGraph(connection, turn, frame.call_id(),
                    std::move(*frame.mutable_run_graph()));
      return true;
    case proto::DataFrame::kPing:
      connection->Answer(frame.call_id(), absl::OkStatus());
      return true;
    default:
      DF_LOG(Warning) << "data connection from " << connection->peer
                      << ": a frame that is no push, RunGraph call or ping; "
                         "closing it";
      connection->Answer(frame.call_id(),
                         absl::InvalidArgumentError(
                             "a data connection frame must be a push, a "
                             "RunGraph call or a ping"));
      return false;
  }
}

bool DataListener::ServePush(const std::shared_ptr<Connection>& connection,
                             uint64_t turn, const proto::DataFrame& frame) {
  const uint64_t id = frame.call_id();
  const proto::PushTensorHeader& header = frame.push();
  if (IsDataOffer(frame) && handlers_.offer) {
    // (The offer's handler checks the header, as for an offer over gRPC.)
    auto response = std::make_shared<proto::PushTensorResponse>();
    Working working(connection.get(), turn);
    handlers_.offer(header, response.get(),
                    [connection, id, response](const absl::Status& status) {
                      connection->Answer(id, status, response.get());
                    });
    connection->PollForNextFrame(kNextPushPoll);
    return true;
  }
  std::vector<std::shared_ptr<Stripe>> stripes;
  {
    absl::MutexLock lock(&connection->stripes_mu);
    stripes = connection->stripes;
  }
  absl::StatusOr<DataPush> push = CheckDataPush(frame, stripes.size());
  if (!push.ok()) {
    DF_LOG(Warning) << "data connection from " << connection->peer << ": "
                    << push.status().message() << "; closing it";
    connection->Answer(id, push.status());
    return false;
  }
  stripes.resize(push->stripe_parts.size());
  const int64_t total = push->total;
  absl::StatusOr<Tensor> value;
  Receiving receiving(this, total);
  if (receiving.fits()) {
    value = Allocate(push->dtype, push->shape, total);
  } else {
    value = absl::ResourceExhaustedError(
        absl::StrCat("its ", total,
                     " bytes would take the tensors this task receives at "
                     "once past ",
                     limits_.receiving_bytes, " bytes"));
  }
  const int64_t start_ns = trace::SpanStart();
  // (Without a tensor the bytes are read past, so that the next call is
  // found.)
  if (!ReceiveBytes(
          *connection, *push, stripes,
          value.ok() ? static_cast<char*>(value->raw_data()) : nullptr)) {
    return false;
  }
  if (!value.ok()) {
    connection->Answer(
        id, absl::Status(value.status().code(),
                         absl::StrCat("PushTensor '", header.key(),
                                      "': ", value.status().message())));
    return true;
  }
  if (start_ns >= 0) {  // (the name is built only when recording)
    trace::EndSpan("transfer",
                   absl::StrCat("data connection receive of ", total, " bytes"),
                   start_ns);
  }
  received_.fetch_add(1, std::memory_order_relaxed);
  Working working(connection.get(), turn);
  handlers_.deliver(header.step_id(), header.key(), *std::move(value),
                    [connection, id](const absl::Status& status) {
                      connection->Answer(id, status);
                    });
  return true;
}

bool DataListener::ReceiveBytes(
    Connection& connection, const DataPush& push,
    const std::vector<std::shared_ptr<Stripe>>& stripes, char* into) {
  // The stripes read the last parts while this thread reads the first.
  const int64_t first = push.first;
  int64_t at = first;
  size_t posted = 0;
  for (; posted < stripes.size(); ++posted) {
    const int64_t n = push.stripe_parts[posted];
    if (!stripes[posted]->Post(into != nullptr ? into + at : nullptr, n)) break;
    at += n;
  }
  absl::Status s =
      posted < stripes.size()
          ? absl::UnavailableError("a stripe of the connection has ended")
      : into != nullptr
          ? RecvAll(connection.fd, into, static_cast<size_t>(first),
                    /*rest_of_message=*/true)
          : SkipBytes(connection.fd, first);
  if (!s.ok()) {
    // (Wakes the stripes out of their reads: `into` must outlive them.)
    for (const auto& stripe : stripes) stripe->End();
  }
  for (size_t i = 0; i < posted; ++i) {
    absl::Status read = stripes[i]->Wait();
    if (s.ok()) s = read;
  }
  if (s.ok() && !stripes.empty() && into != nullptr) {
    striped_.fetch_add(1, std::memory_order_relaxed);
  }
  if (absl::IsDeadlineExceeded(s)) {
    DF_LOG(Warning) << "data connection from " << connection.peer << ": "
                    << s.message() << " (a tensor's bytes); closing it";
  }
  return s.ok();
}

void DataListener::ServeRunGraph(const std::shared_ptr<Connection>& connection,
                                 uint64_t turn, uint64_t id,
                                 proto::RunGraphRequest&& request) {
  if (!handlers_.run_graph) {
    connection->Answer(id, absl::UnimplementedError(
                               "this task takes no RunGraph calls on data "
                               "connections"));
    return;
  }
  if (request.feed_size() != 0) {
    connection->Answer(
        id, absl::InvalidArgumentError(absl::StrCat(
                "RunGraph of step ", request.step_id(),
                ": a data connection carries RunGraph calls without feeds")));
    return;
  }
  auto call = std::make_shared<proto::RunGraphRequest>(std::move(request));
  {
    absl::MutexLock lock(&connection->calls_mu);
    connection->running.emplace(id, call);
    running_calls_->fetch_add(1, std::memory_order_relaxed);
  }
  run_graphs_.fetch_add(1, std::memory_order_relaxed);
  auto response = std::make_shared<proto::RunGraphResponse>();
  // (The partition's first ops may run on this thread: see
  // Worker::RunGraphAsync.)
  Working working(connection.get(), turn);
  handlers_.run_graph(
      call.get(), response.get(),
      [connection, id, call, response,
       running_calls = running_calls_](const absl::Status& status) {
        {
          absl::MutexLock lock(&connection->calls_mu);
          connection->running.erase(id);
          running_calls->fetch_sub(1, std::memory_order_relaxed);
          if (connection->ended) return;  // nobody to answer
        }
        connection->Answer(
            id, status, nullptr,
            status.ok() ? response->SerializeAsString() : std::string());
        connection->PollForNextFrame(kNextStepPoll);
      });
}

DataListener* LazyDataListener::Get() {
  absl::MutexLock lock(&mu_);
  if (closed_) return nullptr;
  if (listener_ == nullptr && (!failed_at_.has_value() ||
                               SteadySince(*failed_at_) >= absl::Minutes(1))) {
    auto listener = DataListener::Create(host_, pool_, handlers_);
    if (listener.ok()) {
      listener_ = *std::move(listener);
    } else {
      failed_at_ = SteadyNow();
      DF_LOG(Warning) << "task " << task_ << ": " << listener.status().message()
                      << "; calls will come over gRPC (trying again in a "
                         "minute)";
    }
  }
  return listener_.get();
}

void LazyDataListener::Close() {
  DataListener* listener = nullptr;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    listener = listener_.get();
  }
  // (Closing waits for the listener's threads: not under the lock, which
  // the RPC threads take to offer the listener. The listener itself stays
  // until this object goes: a thread that got it just before may still read
  // its port.)
  if (listener != nullptr) listener->Close();
}

int LazyDataListener::port() {
  absl::MutexLock lock(&mu_);
  return listener_ != nullptr ? listener_->port() : 0;
}

int64_t LazyDataListener::received() {
  absl::MutexLock lock(&mu_);
  return listener_ != nullptr ? listener_->received() : 0;
}

int64_t LazyDataListener::run_graphs() {
  absl::MutexLock lock(&mu_);
  return listener_ != nullptr ? listener_->run_graphs() : 0;
}

int64_t LazyDataListener::handoffs() {
  absl::MutexLock lock(&mu_);
  return listener_ != nullptr ? listener_->handoffs() : 0;
}

int64_t LazyDataListener::striped() {
  absl::MutexLock lock(&mu_);
  return listener_ != nullptr ? listener_->striped() : 0;
}

}  // namespace distflow
