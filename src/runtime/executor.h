// Runs a graph on one device: each step computes every node of the graph once,
// running a node as soon as its inputs are ready, independent nodes in parallel
// on a thread pool.
//
// The graph given to an executor is exactly what must run (see
// graph/subgraph.h): pruning to the fetches happens before. Kernels are created
// once, at Create. Run may be called from several threads at once; each call is
// an independent step.
#ifndef DISTFLOW_RUNTIME_EXECUTOR_H_
#define DISTFLOW_RUNTIME_EXECUTOR_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/cancellation.h"
#include "base/thread_pool.h"
#include "graph/graph.h"
#include "kernels/kernel_registry.h"
#include "kernels/op_kernel.h"

namespace distflow {

class Executor {
 public:
  struct Options {
    DeviceBase* device = nullptr;  // not owned; outlives the executor
    std::string device_type = "CPU";
    const KernelRegistry* kernels = KernelRegistry::Global();
  };
  struct RunArgs {
    CallFrame* call_frame =
        nullptr;  // for _Arg/_Retval; may be null if the graph has none
    int64_t step_id = 0;
    // Cancelled by the caller to abort the step; may be null.
    CancellationManager* cancellation = nullptr;
    ThreadPool* runner = nullptr;  // runs nodes; required
    // For _Send/_Recv nodes; not owned, outlives the step; may be null.
    Rendezvous* rendezvous = nullptr;
    // RunAsync runs the cheap nodes that a graph which is not small starts
    // with on the calling thread, and only its expensive nodes on the runner:
    // for a caller that would otherwise only hand the step over and go back
    // to waiting (a task's RPC thread), so that a step of reads and sends
    // does not wait for a pool thread to wake, while long kernels stay off
    // the caller's thread.
    bool start_on_caller = false;
  };

  // Creates a kernel for every node. Errors name the node (no kernel, bad
  // attributes).
  static absl::StatusOr<std::unique_ptr<Executor>> Create(
      std::unique_ptr<const Graph> graph, const Options& options);
  ~Executor();

  // Runs one step and returns its status: the first error any node reported
  // (prefixed with the node), after which no further node starts. CANCELLED if
  // `args.cancellation` fired. The first error also aborts `args.rendezvous`
  // and cancels the kernels that wait (receives, dequeues), so the step ends.
  absl::Status Run(const RunArgs& args);
  // As Run, but calls `done`, on some thread, when the step has finished
  // instead of waiting for it. A small graph (every output of a known shape
  // of at most kSmallStepElements elements) starts on the calling thread, as
  // in Run: its cheap ready nodes and the first expensive one run here before
  // RunAsync returns, so a step without receives finishes, and calls `done`,
  // before it returns. Other graphs start on `args.runner`, so that long
  // kernels stay off the caller's thread, or, with `args.start_on_caller`,
  // run their cheap nodes here and send the expensive ones to the runner.
  // Further ready expensive nodes go to `args.runner`; nodes after a receive
  // continue on the thread that delivers the tensor.
  void RunAsync(const RunArgs& args, std::function<void(absl::Status)> done);

  const Graph& graph() const { return *graph_; }

  static constexpr int64_t kSmallStepElements = 4096;
  // Kernels that have lately been running for less than this are run on the
  // thread that finds them ready (see IsExpensive).
  static constexpr int64_t kHandOverNs = 20'000;

 private:
  class StepState;
  struct NodeItem {
    const Node* node = nullptr;
    std::unique_ptr<OpKernel> kernel;
    // What the kernel says (OpKernel::IsExpensive); whether a step treats
    // the node as expensive also depends on how long it has been taking
    // (see IsExpensive below).
    bool expensive = true;
    int input_start =
        0;  // first slot of this node's inputs in a step's input array
    int initial_pending = 0;  // data + control inputs
    // Whether a _Send depends on it: such cheap nodes run before other
    // cheap ones that are ready with them (another task waits for the send).
    bool leads_to_send = false;
  };

  Executor(std::unique_ptr<const Graph> graph, const Options& options);
  // Sets leads_to_send on each _Send and every node that one depends on.
  void MarkSendAncestors();

  // Whether a step hands node `id` to the runner when other work is ready
  // with it: its kernel says it is expensive, and it has not been running
  // in less than kHandOverNs lately. Handing a node to another thread costs
  // more than running a short one here: a wake-up on another core takes the
  // waking thread about 15 us on a virtual machine, and the woken thread
  // starts 20-40 us later (docs/benchmarks.md, "Short kernels run where they
  // become ready"). Before its first run a node is taken at its word.
  bool IsExpensive(int id) const;
  // Whether a thread that makes several expensive nodes ready runs them all
  // itself instead of handing all but one to `runner`: when the runner's
  // threads sleep while idle (a task that shares its host with other
  // tasks) and the intra-op pool has threads to split large kernels over.
  // Waking a sleeping thread costs the waker about 15 us and the sleeper
  // 20-40 us more on a virtual machine, as long as the kernels it would
  // take over, while the intra-op pool's helpers stay awake between loops
  // (docs/benchmarks.md, "Ops that stay on their thread where pools sleep").
  // Where the runner spins, or kernels run on one thread, independent
  // kernels run in parallel on the runner.
  bool KeepsExpensiveNodes(const ThreadPool& runner) const;
  // Folds the `ns` that node `id`'s kernel just took into its running
  // estimate (an average that gives the latest run an eighth).
  void RecordRunTime(int id, int64_t ns) const;

  std::unique_ptr<const Graph> graph_;
  Options options_;
  std::vector<NodeItem> items_;  // by node id
  // Each node's estimated run time in ns (-1 before it has run), by node
  // id; steps that run at once share it.
  std::unique_ptr<std::atomic<int64_t>[]> run_ns_;
  std::vector<int> roots_;
  int total_inputs_ = 0;
  // Every output's shape is known and small (see RunAsync).
  bool small_ = true;
};

}  // namespace distflow

#endif  // DISTFLOW_RUNTIME_EXECUTOR_H_
