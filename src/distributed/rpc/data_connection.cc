#include "distributed/rpc/data_connection.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/clock.h"
#include "base/logging.h"
#include "core/gathered_tensor.h"
#include "distributed/rpc/data_frames.h"
#include "distributed/rpc/data_socket.h"
#include "distributed/rpc/tensor_wire.h"
#include "proto/worker.pb.h"

namespace distflow {
namespace {

// How long connecting and the hello's answer may take.
constexpr absl::Duration kConnectTimeout = absl::Seconds(5);
// The longest the reader sleeps between looks at the calls' deadlines.
constexpr int64_t kDeadlineCheckMs = 1000;
// While calls wait, a task that has sent nothing for kPingAfter is sent a
// ping, which its reading thread answers at once; one unanswered within
// kPingTimeout ends the connection. A process that is stopped or hung keeps
// its sockets open (its kernel still acknowledges), so without this its
// calls would wait for their deadlines (an hour for a step); gRPC's own
// keepalive pings do the same for calls over gRPC.
constexpr absl::Duration kPingAfter = absl::Seconds(2);
constexpr absl::Duration kPingTimeout = absl::Seconds(5);
// After the task answers a push while a RunGraph call waits, the reader
// polls for up to this long before it sleeps. A task answers a push from
// the step's master as soon as the tensor is there, before the work it
// starts (Worker::PushTensorAsync): in a training step the ps has then got
// the step's last gradients, and the RunGraph answer follows once the
// updates have run (a few hundred microseconds for the MLP). Woken instead,
// this thread would first wait for a halted core, or on the waker's core
// behind the updates (docs/benchmarks.md, "A caller that polls for its
// step's answer").
constexpr absl::Duration kAnswerPoll = absl::Milliseconds(1);
// When a call of `timeout` from now ends, on the steady clock (a call without
// a real limit, such as InfiniteDuration, waits a century).
SteadyTime DeadlineAfter(absl::Duration timeout) {
  return SteadyAfter(SteadyNow(),
                     std::min(timeout, absl::Hours(24 * 365 * 100)));
}

// Pieces per sendmsg: the frame's header and the tensor's ranges (more than
// this many go in later calls).
constexpr int kMaxIovecs = 64;

// Waits up to `timeout` (in slices, so that `stop` is seen) for `events` on
// `fd`; the error when it fails or times out.
template <typename Stop>
absl::Status WaitFor(int fd, short events, absl::Duration timeout,
                     const Stop& stop) {
  const SteadyTime until = SteadyAfter(SteadyNow(), timeout);
  while (true) {
    if (stop()) return absl::CancelledError("the connection was closed");
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, 100);
    if (n > 0) return absl::OkStatus();
    if (n < 0 && errno != EINTR) {
      return absl::UnavailableError(std::strerror(errno));
    }
    if (SteadyNow() >= until) {
      return absl::DeadlineExceededError(
          absl::StrCat("no answer within ", absl::FormatDuration(timeout)));
    }
  }
}

// Runs `body`; if it throws (a call's callback, an allocation refused),
// `fail` ends the connection instead of the exception ending the process.
template <typename Body, typename Fail>
void CatchAll(const Body& body, const Fail& fail) {
  std::string what;
  try {
    body();
    return;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "an unknown exception";
  }
  try {
    fail(absl::InternalError(
        absl::StrCat("a thread of the data connection threw: ", what)));
  } catch (...) {
    DF_LOG(Error) << "a data connection's failure threw as well: " << what;
  }
}

}  // namespace

// What one socket writes of a call: on the first socket, its header
// (framed) and a push's first tensor bytes; on a stripe, its part of a
// push's bytes (no header). Bytes [begin, end) of `value` follow the header;
// `sent` bytes of the whole have been written.
struct DataConnection::Queued {
  uint64_t id = 0;
  std::string head;
  Tensor value;  // uninitialized: no bytes follow the header
  size_t begin = 0;
  size_t end = 0;
  // Whether the call's other bytes go on the stripes.
  bool striped = false;
  size_t sent = 0;
  size_t size() const { return head.size() + (end - begin); }
};

// A call waiting for its answer.
struct DataConnection::Waiting {
  // Names the call in errors: "push of 'key'", "RunGraph of step 7".
  std::string what;
  SteadyTime deadline;
  // Gets the answer's status, the answer, and what followed it (a RunGraph's
  // response); or the failure, with an empty answer.
  std::function<void(const absl::Status&, const proto::DataAnswer&,
                     const std::string&)>
      done;
  std::shared_ptr<const void> pinned;
  // How many of its sockets' parts are not yet all on their socket.
  int unwritten = 1;
  // Whether it is a keepalive ping.
  bool ping = false;
  // Whether it runs a step's partition (RunGraph).
  bool run_graph = false;
};

struct DataConnection::Core {
  Core(std::string host, int port, uint64_t token, std::string task,
       std::string address, int sockets)
      : host(std::move(host)),
        port(port),
        token(token),
        task(std::move(task)),
        address(std::move(address)),
        sockets(sockets) {}
  ~Core() {
    if (fd >= 0) close(fd);
    for (const int stripe : stripe_fds) close(stripe);
  }

  // A connected socket that said hello as socket `stripe` of this
  // connection, or the reason there is none.
  absl::StatusOr<int> Connect(uint32_t stripe);
  // Connects the stripes (after the first socket), as many as the listener
  // takes; their sockets.
  std::vector<int> ConnectStripes();
  // Writes the rest of `call`'s frame; with `dont_wait`, only what the
  // socket takes without blocking.
  static absl::Status WriteFrame(int fd, Queued* call, bool dont_wait);
  // Ends the connection with `reason`: waiting calls fail.
  void Fail(const absl::Status& reason);
  // The error of a call that the connection's end failed.
  absl::Status Failed(const std::string& what,
                      const absl::Status& reason) const;
  // Reads one answer and hands it to its call; false when the connection
  // failed (and Fail was called).
  bool ReadAnswer(int fd);
  // See DataConnection::Send.
  bool Send(proto::DataFrame& frame, const Tensor& bytes,
            absl::FunctionRef<Waiting()> make_waiting);
  // Sends a ping if calls wait and the task has been silent for a while.
  void PingIfSilent();

  const std::string host;
  const int port;
  const uint64_t token;
  const std::string task;
  const std::string address;
  // The sockets wanted (the first and its stripes).
  const int sockets;
  // Names this connection in its stripes' hellos.
  const uint64_t link = RandomDataToken();

  // Ends the connection from a thread that must not run callbacks (the
  // caller of a call): the reader sees it and fails the waiting calls with
  // `reason`.
  void Break(const absl::Status& reason);
  // Marks one socket's part of call `id` as written.
  void Written(uint64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    auto it = waiting.find(id);
    if (it != waiting.end() && it->second.unwritten > 0) --it->second.unwritten;
  }
  // Shuts every socket down, which wakes the threads out of their sends and
  // receives.
  void ShutDownSockets() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (fd >= 0) shutdown(fd, SHUT_RDWR);
    for (const int stripe : stripe_fds) shutdown(stripe, SHUT_RDWR);
  }
  mutable absl::Mutex mu;
  State state ABSL_GUARDED_BY(mu) = State::kConnecting;
  std::string failure ABSL_GUARDED_BY(mu);
  // Why Break was called, for the reader's Fail.
  absl::Status broken ABSL_GUARDED_BY(mu);
  bool closing ABSL_GUARDED_BY(mu) = false;
  // Set once connected; closed by the destructor, after both threads ended.
  int fd ABSL_GUARDED_BY(mu) = -1;
  std::deque<Queued> queue ABSL_GUARDED_BY(mu);
  // Whether a thread is writing a frame (a caller, or the writer).
  bool writing ABSL_GUARDED_BY(mu) = false;
  // The stripes' sockets, what each has to write, and their writers: set
  // with the state kReady, and not changed after.
  std::vector<int> stripe_fds ABSL_GUARDED_BY(mu);
  std::vector<std::deque<Queued>> stripe_queues ABSL_GUARDED_BY(mu);
  std::vector<std::thread> stripe_writers ABSL_GUARDED_BY(mu);
  // stripe_fds.size(), read without the lock.
  std::atomic<int> stripes{0};
  absl::flat_hash_map<uint64_t, Waiting> waiting ABSL_GUARDED_BY(mu);
  // What calls that passed their deadline still pin, by call id, until the
  // task answers them or the connection ends.
  absl::flat_hash_map<uint64_t, std::shared_ptr<const void>> lingering
      ABSL_GUARDED_BY(mu);
  // When the task last answered (or calls started waiting), and whether a
  // ping waits for its answer.
  SteadyTime last_heard ABSL_GUARDED_BY(mu);
  bool pinging ABSL_GUARDED_BY(mu) = false;
  std::atomic<uint64_t> next_id{1};
  int64_t answered ABSL_GUARDED_BY(mu) = 0;
  // Until when (SteadyNanos) the reader polls for the next answer before it
  // sleeps (see kAnswerPoll). The reader's own.
  int64_t poll_until_ns = 0;
};

absl::Status DataConnection::Core::WriteFrame(int fd, Queued* push,
                                              bool dont_wait) {
  const size_t head = push->head.size();
  const size_t total = push->size();
  // The tensor's bytes from where they lie (several places for a gathered
  // tensor: core/gathered_tensor.h).
  const ByteRanges ranges = push->value.IsInitialized()
                                ? TensorByteRanges(push->value)
                                : ByteRanges();
  while (push->sent < total) {
    iovec iov[kMaxIovecs];
    int count = 0;
    if (push->sent < head) {
      iov[count++] = {push->head.data() + push->sent, head - push->sent};
    }
    // The tensor's bytes still to write: [skip, push->end).
    size_t skip = push->begin + (push->sent > head ? push->sent - head : 0);
    size_t left = push->end - skip;
    for (size_t i = 0; i < ranges.size() && count < kMaxIovecs && left > 0;
         ++i) {
      if (skip >= ranges[i].size()) {
        skip -= ranges[i].size();
        continue;
      }
      const size_t take = std::min(ranges[i].size() - skip, left);
      iov[count++] = {const_cast<char*>(ranges[i].data()) + skip, take};
      left -= take;
      skip = 0;
    }
    msghdr message{};
    message.msg_iov = iov;
    message.msg_iovlen = static_cast<size_t>(count);
    const ssize_t n =
        sendmsg(fd, &message, MSG_NOSIGNAL | (dont_wait ? MSG_DONTWAIT : 0));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (dont_wait) break;
        // (The send timeout of ConfigureDataSocket.)
        return absl::DeadlineExceededError(
            absl::StrCat("the task took no bytes for ",
                         absl::FormatDuration(DataStallTimeout())));
      }
      return absl::UnavailableError(std::strerror(errno));
    }
    push->sent += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<int> DataConnection::Core::Connect(uint32_t stripe) {
  auto stop = [this] {
    absl::MutexLock lock(&mu);
    return closing;
  };
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port_name = std::to_string(port);
  const int resolved =
      getaddrinfo(host.c_str(), port_name.c_str(), &hints, &found);
  if (resolved != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve ", host, ": ", gai_strerror(resolved)));
  }
  absl::Status last = absl::UnavailableError("no address");
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                a->ai_protocol);
    if (fd < 0) continue;
    absl::Status s;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        s = absl::UnavailableError(std::strerror(errno));
      } else {
        s = WaitFor(fd, POLLOUT, kConnectTimeout, stop);
        int error = 0;
        socklen_t len = sizeof(error);
        if (s.ok() &&
            (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0 ||
             error != 0)) {
          s = absl::UnavailableError(std::strerror(error));
        }
      }
    }
    if (!s.ok()) {
      last = s;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) return last;
  // Blocking from here on: each thread waits in its own call.
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  ConfigureDataSocket(fd);
  std::string hello = EncodeDataHello({token, link, stripe});
  iovec iov{hello.data(), hello.size()};
  absl::Status s = SendAll(fd, &iov, 1);
  if (s.ok()) s = WaitFor(fd, POLLIN, kConnectTimeout, stop);
  char accepted = 0;
  if (s.ok()) s = RecvAll(fd, &accepted, 1);
  if (s.ok() && accepted != 1) {
    s = absl::UnavailableError(
        "a process there that is not the server that offered the port");
  }
  if (!s.ok()) {
    close(fd);
    return s;
  }
  return fd;
}

std::vector<int> DataConnection::Core::ConnectStripes() {
  std::vector<int> fds;
  for (int stripe = 1; stripe < sockets; ++stripe) {
    absl::StatusOr<int> fd = Connect(static_cast<uint32_t>(stripe));
    if (!fd.ok()) {
      // (The connection goes on with the stripes it has; one being closed
      // needs none.)
      if (absl::IsCancelled(fd.status())) break;
      DF_LOG(Warning) << "data connection to task " << task << " at " << address
                      << ": stripe " << stripe << " cannot be opened ("
                      << fd.status().message() << "); large tensors go on "
                      << stripe << " socket(s)";
      break;
    }
    fds.push_back(*fd);
  }
  return fds;
}

absl::Status DataConnection::Core::Failed(const std::string& what,
                                          const absl::Status& reason) const {
  if (absl::IsCancelled(reason)) {
    return absl::CancelledError(
        absl::StrCat(what, " to task ", task, " at ", address,
                     " was cancelled: this task's RPC layer is shutting down"));
  }
  return absl::UnavailableError(absl::StrCat(
      what, " to task ", task, " at ", address,
      " failed: its data connection (port ", port, ") broke: ",
      reason.message(), "; check that the task is running and reachable"));
}

void DataConnection::Core::Break(const absl::Status& reason) {
  absl::MutexLock lock(&mu);
  if (state != State::kReady || !broken.ok()) return;
  broken = reason;
  ShutDownSockets();
}

void DataConnection::Core::Fail(const absl::Status& reason) {
  std::vector<Waiting> failed;
  absl::Status why = reason;
  {
    absl::MutexLock lock(&mu);
    if (state == State::kBroken || state == State::kRefused) return;
    state = state == State::kConnecting ? State::kRefused : State::kBroken;
    // Closing shuts the socket down, which the threads see as a failure;
    // so does Break, which says why.
    if (closing) {
      why = absl::CancelledError("closed");
    } else if (!broken.ok()) {
      why = broken;
    }
    failure = std::string(why.message());
    // Wakes the other threads out of their sends and receives.
    ShutDownSockets();
    for (auto& [id, w] : waiting) failed.push_back(std::move(w));
    waiting.clear();
    lingering.clear();
    queue.clear();
    for (std::deque<Queued>& stripe : stripe_queues) stripe.clear();
  }
  const proto::DataAnswer none;
  for (Waiting& w : failed) w.done(Failed(w.what, why), none, std::string());
}

DataConnection::DataConnection(std::string host, int port, uint64_t token,
                               std::string task, std::string address,
                               int sockets)
    : core_(std::make_shared<Core>(std::move(host), port, token,
                                   std::move(task), std::move(address),
                                   std::clamp(sockets, 1, kMaxDataSockets))) {
  auto fail = [core = core_](const absl::Status& s) { core->Fail(s); };
  writer_ = std::thread(
      [core = core_, fail] { CatchAll([&] { WriteLoop(core); }, fail); });
  reader_ = std::thread(
      [core = core_, fail] { CatchAll([&] { ReadLoop(core); }, fail); });
}

DataConnection::~DataConnection() {
  bool connecting = false;
  {
    absl::MutexLock lock(&core_->mu);
    core_->closing = true;
    connecting = core_->state == State::kConnecting;
    core_->ShutDownSockets();
  }
  // A push's callback that drops the last owner of this connection runs on
  // one of its threads, which cannot wait for itself. And a writer still
  // connecting may be resolving the host name, which nothing interrupts: it
  // is not waited for (no push is waiting on it; it holds the core, and
  // ends once it sees the connection closed).
  for (std::thread* t : {&writer_, &reader_}) {
    if (t->get_id() == std::this_thread::get_id() ||
        (t == &writer_ && connecting)) {
      t->detach();
    } else {
      t->join();
    }
  }
  // (Started by the writer once connected; never one of a push's callbacks'
  // threads: they run none.)
  std::vector<std::thread> stripe_writers;
  {
    absl::MutexLock lock(&core_->mu);
    stripe_writers = std::move(core_->stripe_writers);
  }
  for (std::thread& t : stripe_writers) t.join();
  core_->Fail(absl::CancelledError("closed"));
}

DataConnection::State DataConnection::state() const {
  absl::MutexLock lock(&core_->mu);
  return core_->state;
}

std::string DataConnection::failure() const {
  absl::MutexLock lock(&core_->mu);
  return core_->failure;
}

int DataConnection::sockets() const {
  return 1 + core_->stripes.load(std::memory_order_acquire);
}

int64_t DataConnection::answered() const {
  absl::MutexLock lock(&core_->mu);
  return core_->answered;
}

bool DataConnection::Push(int64_t step_id, const std::string& key,
                          const Tensor& value, absl::Duration deadline,
                          StatusCallback&& done) {
  proto::DataFrame frame;
  *frame.mutable_push() = PushHeaderFor(step_id, key, value);
  return Send(frame, value, [&] {
    Waiting waiting;
    waiting.what = absl::StrCat("push of '", key, "'");
    waiting.deadline = DeadlineAfter(deadline);
    waiting.done = [done = std::move(done)](const absl::Status& s,
                                            const proto::DataAnswer&,
                                            const std::string&) { done(s); };
    return waiting;
  });
}

bool DataConnection::Offer(const proto::PushTensorHeader& header,
                           std::shared_ptr<const void> pinned,
                           absl::Duration deadline, OfferDone&& done) {
  proto::DataFrame frame;
  *frame.mutable_push() = header;
  return Send(frame, Tensor(), [&] {
    Waiting waiting;
    waiting.what = absl::StrCat("push of '", header.key(), "'");
    waiting.deadline = DeadlineAfter(deadline);
    waiting.pinned = std::move(pinned);
    waiting.done = [done = std::move(done)](
                       const absl::Status& s, const proto::DataAnswer& answer,
                       const std::string&) { done(s, answer.push()); };
    return waiting;
  });
}

bool DataConnection::RunGraph(const proto::RunGraphRequest& request,
                              proto::RunGraphResponse* response,
                              absl::Duration deadline, StatusCallback&& done) {
  proto::DataFrame frame;
  *frame.mutable_run_graph() = request;
  return Send(frame, Tensor(), [&] {
    Waiting waiting;
    waiting.what = absl::StrCat("RunGraph of step ", request.step_id());
    waiting.run_graph = true;
    waiting.deadline = DeadlineAfter(deadline);
    waiting.done = [core = core_.get(), step = request.step_id(), response,
                    done = std::move(done)](const absl::Status& s,
                                            const proto::DataAnswer&,
                                            const std::string& payload) {
      if (s.ok() && !response->ParseFromString(payload)) {
        done(absl::InternalError(
            absl::StrCat("RunGraph of step ", step, " on task ", core->task,
                         " at ", core->address,
                         ": its answer on the data connection does not "
                         "parse")));
        return;
      }
      done(s);
    };
    return waiting;
  });
}

bool DataConnection::Send(proto::DataFrame& frame, const Tensor& bytes,
                          absl::FunctionRef<Waiting()> make_waiting) {
  return core_->Send(frame, bytes, make_waiting);
}

bool DataConnection::Core::Send(proto::DataFrame& frame, const Tensor& bytes,
                                absl::FunctionRef<Waiting()> make_waiting) {
  Queued call;
  call.id = next_id.fetch_add(1, std::memory_order_relaxed);
  frame.set_call_id(call.id);
  const size_t total = bytes.IsInitialized() ? bytes.TotalBytes() : 0;
  // A large push's last bytes go on the stripes (set before the state
  // became kReady, which is checked below).
  // (Every call comes this way, a step's small ones too: no allocation.)
  absl::InlinedVector<int64_t, kMaxDataSockets> parts = {
      static_cast<int64_t>(total)};
  const int stripe_count = stripes.load(std::memory_order_acquire);
  if (stripe_count > 0 && static_cast<int64_t>(total) >= kStripeMinBytes) {
    const std::vector<int64_t> split =
        StripeParts(static_cast<int64_t>(total), stripe_count + 1);
    parts.assign(split.begin(), split.end());
    for (size_t i = 1; i < parts.size(); ++i) frame.add_stripe_bytes(parts[i]);
  }
  call.head = FramedHeader(frame);
  call.value = bytes;
  call.end = static_cast<size_t>(parts[0]);
  call.striped = parts.size() > 1;
  int socket = -1;
  {
    absl::MutexLock lock(&mu);
    if (state != State::kReady || closing) return false;
    if (waiting.empty()) last_heard = SteadyNow();
    Waiting& entry = waiting.emplace(call.id, make_waiting()).first->second;
    entry.unwritten = static_cast<int>(parts.size());
    // Each stripe writes its parts in the order of the frames (queued under
    // this lock, as the frames are).
    size_t begin = call.end;
    for (size_t i = 1; i < parts.size(); ++i) {
      Queued part;
      part.id = call.id;
      part.value = bytes;
      part.begin = begin;
      part.end = begin + static_cast<size_t>(parts[i]);
      begin = part.end;
      stripe_queues[i - 1].push_back(std::move(part));
    }
    if (writing || !queue.empty()) {
      queue.push_back(std::move(call));
      return true;
    }
    // Nothing is being written: this thread writes what the socket takes
    // now, which saves waking the writer; the writer writes the rest.
    writing = true;
    socket = fd;
  }
  absl::Status s = WriteFrame(socket, &call, /*dont_wait=*/true);
  {
    absl::MutexLock lock(&mu);
    writing = false;
    if (s.ok() && call.sent < call.size()) {
      queue.push_front(std::move(call));
    } else if (s.ok()) {
      Written(call.id);
    }
  }
  // (The reader fails the waiting calls: their callbacks must not run on
  // this thread, whose caller may hold locks.)
  if (!s.ok()) Break(s);
  return true;
}

void DataConnection::Core::PingIfSilent() {
  {
    absl::MutexLock lock(&mu);
    if (pinging || waiting.empty() || SteadySince(last_heard) < kPingAfter) {
      return;
    }
    pinging = true;
  }
  proto::DataFrame frame;
  frame.set_ping(true);
  Send(frame, Tensor(), [this] {
    Waiting waiting;
    waiting.what = "a keepalive ping";
    waiting.deadline = DeadlineAfter(kPingTimeout);
    waiting.ping = true;
    waiting.done = [this](const absl::Status&, const proto::DataAnswer&,
                          const std::string&) {
      absl::MutexLock lock(&mu);
      pinging = false;
    };
    return waiting;
  });
}

void DataConnection::WriteLoop(std::shared_ptr<Core> core) {
  NameThisThread("df_conn_write");
  absl::StatusOr<int> fd = core->Connect(/*stripe=*/0);
  if (!fd.ok()) {
    core->Fail(fd.status());
    return;
  }
  std::vector<int> stripe_fds = core->ConnectStripes();
  {
    absl::MutexLock lock(&core->mu);
    if (core->closing) {
      close(*fd);
      for (const int stripe : stripe_fds) close(stripe);
      return;
    }
    core->fd = *fd;
    core->stripe_fds = std::move(stripe_fds);
    core->stripe_queues.resize(core->stripe_fds.size());
    for (size_t i = 0; i < core->stripe_fds.size(); ++i) {
      core->stripe_writers.emplace_back([core, i] {
        CatchAll([&] { StripeWriteLoop(core, i); },
                 [&](const absl::Status& s) { core->Break(s); });
      });
    }
    core->stripes.store(static_cast<int>(core->stripe_fds.size()),
                        std::memory_order_release);
    core->state = State::kReady;
  }
  while (true) {
    Queued push;
    {
      absl::MutexLock lock(&core->mu);
      auto ready = [&core]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(core->mu) {
        return (!core->queue.empty() && !core->writing) || core->closing ||
               core->state != State::kReady;
      };
      core->mu.Await(absl::Condition(&ready));
      if (core->closing || core->state != State::kReady) return;
      push = std::move(core->queue.front());
      core->queue.pop_front();
      // A push that failed by its deadline before any of it was written is
      // not sent (one partly written must be finished: the frames follow
      // each other; and one whose stripes carry parts of it must be sent,
      // as they will be).
      if (push.sent == 0 && !push.striped && !core->waiting.contains(push.id)) {
        continue;
      }
      core->writing = true;
    }
    absl::Status s = Core::WriteFrame(*fd, &push, /*dont_wait=*/false);
    {
      absl::MutexLock lock(&core->mu);
      core->writing = false;
      if (s.ok()) core->Written(push.id);
    }
    if (!s.ok()) {
      core->Fail(s);
      return;
    }
  }
}

void DataConnection::StripeWriteLoop(std::shared_ptr<Core> core,
                                     size_t stripe) {
  NameThisThread("df_conn_stripe");
  while (true) {
    Queued part;
    int fd = -1;
    {
      absl::MutexLock lock(&core->mu);
      auto ready = [&core, stripe]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(core->mu) {
        return !core->stripe_queues[stripe].empty() || core->closing ||
               core->state != State::kReady;
      };
      core->mu.Await(absl::Condition(&ready));
      if (core->closing || core->state != State::kReady) return;
      part = std::move(core->stripe_queues[stripe].front());
      core->stripe_queues[stripe].pop_front();
      fd = core->stripe_fds[stripe];
    }
    absl::Status s = Core::WriteFrame(fd, &part, /*dont_wait=*/false);
    if (!s.ok()) {
      // (The reader fails the waiting calls: their callbacks may let go of
      // the connection, whose destructor waits for this thread.)
      core->Break(s);
      return;
    }
    absl::MutexLock lock(&core->mu);
    core->Written(part.id);
  }
}

void DataConnection::ReadLoop(std::shared_ptr<Core> core) {
  NameThisThread("df_conn_read");
  int fd = -1;
  {
    absl::MutexLock lock(&core->mu);
    auto connected = [&core]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(core->mu) {
      return core->state != State::kConnecting || core->closing;
    };
    core->mu.Await(absl::Condition(&connected));
    if (core->state != State::kReady || core->closing) return;
    fd = core->fd;
  }
  while (true) {
    // Calls past their deadline fail alone, and the connection goes on;
    // unless one was not even written, which means that the task stopped
    // reading: then the connection ends (the calls go over gRPC).
    core->PingIfSilent();
    std::vector<Waiting> expired;
    bool unwritten = false;
    bool unanswered_ping = false;
    int64_t timeout_ms = kDeadlineCheckMs;
    {
      absl::MutexLock lock(&core->mu);
      if (core->closing || core->state != State::kReady) return;
      const SteadyTime now = SteadyNow();
      for (auto it = core->waiting.begin(); it != core->waiting.end();) {
        if (it->second.deadline <= now) {
          unwritten |= it->second.unwritten > 0;
          unanswered_ping |= it->second.ping;
          // The task may still read what the call pinned.
          if (it->second.pinned != nullptr) {
            core->lingering.emplace(it->first, std::move(it->second.pinned));
          }
          expired.push_back(std::move(it->second));
          core->waiting.erase(it++);
        } else {
          const int64_t left = absl::ToInt64Milliseconds(
              absl::FromChrono(it->second.deadline - now));
          timeout_ms =
              std::min(timeout_ms, left < timeout_ms ? left + 1 : timeout_ms);
          ++it;
        }
      }
    }
    if (unanswered_ping) {
      // (Fails the calls still waiting; the expired ones below.)
      core->Fail(absl::UnavailableError(
          absl::StrCat("the task answered no keepalive ping within ",
                       absl::FormatDuration(kPingTimeout),
                       ": it is stopped or hung, or its host is unreachable")));
    }
    const proto::DataAnswer none;
    for (Waiting& w : expired) {
      if (unanswered_ping) {
        w.done(core->Failed(w.what, absl::UnavailableError(
                                        "the task answered no keepalive ping")),
               none, std::string());
        continue;
      }
      w.done(absl::DeadlineExceededError(absl::StrCat(
                 w.what, " to task ", core->task, " at ", core->address,
                 " passed its deadline on the data connection; the task may "
                 "be overloaded or hung")),
             none, std::string());
    }
    if (unanswered_ping) return;
    if (unwritten) {
      core->Fail(absl::DeadlineExceededError(
          "a call passed its deadline before the task took its bytes"));
      return;
    }
    if (core->poll_until_ns != 0 && PollingLeavesACore()) {
      PollUntilReadable(fd, core->poll_until_ns);
    }
    pollfd p{fd, POLLIN, 0};
    const int n = poll(&p, 1, static_cast<int>(timeout_ms));
    if (n < 0 && errno != EINTR) {
      core->Fail(absl::UnavailableError(std::strerror(errno)));
      return;
    }
    if (n > 0 && !core->ReadAnswer(fd)) return;
  }
}

bool DataConnection::Core::ReadAnswer(int fd) {
  proto::DataAnswer answer;
  absl::Status carried;
  absl::Status s = RecvFrameHeader(fd, &answer);
  if (s.ok()) s = CheckDataAnswer(answer, &carried);
  std::string payload;
  if (s.ok() && answer.run_graph_bytes() > 0) {
    // (Grown as its bytes come: the answer's length is the task's word.)
    s = RecvGrowing(fd, static_cast<size_t>(answer.run_graph_bytes()),
                    &payload);
  }
  if (!s.ok()) {
    Fail(s);
    return false;
  }
  Waiting w;
  {
    absl::MutexLock lock(&mu);
    last_heard = SteadyNow();
    auto it = waiting.find(answer.call_id());
    if (it == waiting.end()) {  // it passed its deadline
      lingering.erase(answer.call_id());
      return true;
    }
    w = std::move(it->second);
    waiting.erase(it);
    ++answered;
    poll_until_ns = 0;
    if (!w.run_graph && !w.ping) {
      for (const auto& [id, other] : waiting) {
        if (other.run_graph) {
          poll_until_ns = SteadyNanos() + absl::ToInt64Nanoseconds(kAnswerPoll);
          break;
        }
      }
    }
  }
  w.done(carried, answer, payload);
  return true;
}

}  // namespace distflow
