// Waiting for a completion queue's next event without first going to sleep.
//
// On an idle machine a core that sleeps between calls must wake up before it
// can read the next message: a thread blocked in CompletionQueue::Next pays
// that wake-up on every event that is not already waiting (a bare gRPC round
// trip between two processes took about 177 us on an idle 2-core machine
// against 77 us on a busy one). A thread that expects an event soon (a
// polling thread whose events come close together, a caller waiting for its
// reply) therefore polls the queue without blocking for a short budget
// first, and blocks only when nothing came: an idle thread still sleeps, and
// the CPU spent polling is bounded by the budget per wait.
#ifndef DISTFLOW_DISTRIBUTED_RPC_COMPLETION_QUEUE_SPIN_H_
#define DISTFLOW_DISTRIBUTED_RPC_COMPLETION_QUEUE_SPIN_H_

#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"

namespace distflow {

// How long a task's polling thread keeps polling after an event (0 by
// default: 100 us halved the idle tiny step's latency but cost 15-25% of a
// 1 MiB transfer and about 15% of a 1 ps + 1 worker training step on two
// cores), and how long a caller polls for its reply (200 us: a round trip),
// before blocking. docs/benchmarks.md ("The RPC layer on completion queues")
// has the measurements. For benchmarks only, DISTFLOW_POLLER_SPIN_US and
// DISTFLOW_CALLER_SPIN_US replace them (0 turns spinning off).
absl::Duration PollerSpin();
absl::Duration CallerSpin();

// Like cq->Next: the next event's tag and ok, or false once `cq` is shut down
// and drained. But first polls `cq` without blocking for up to `spin` (zero:
// blocks at once), so that an event arriving meanwhile is taken without a
// sleep and a wake-up.
bool NextAfterSpinning(grpc::CompletionQueue* cq, absl::Duration spin,
                       void** tag, bool* ok);

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_COMPLETION_QUEUE_SPIN_H_
