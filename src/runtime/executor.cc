#include "runtime/executor.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <limits>
#include <new>
#include <stdexcept>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "base/denormal.h"
#include "base/status_macros.h"
#include "base/step_trace.h"

namespace distflow {
namespace {

// The part of a step that cancellation callbacks touch: the first error and
// the step's cancellation manager (where blocking kernels register). Shared,
// so that it outlives the step while a callback still runs: a callback may
// finish the step's last node, and with it the step.
struct StepAbort {
  void Abort(const absl::Status& s) {
    {
      absl::MutexLock lock(&mu);
      if (status.ok()) status = s;
    }
    aborted.store(true);
    // Wake the step's receives (a tensor another task would send after this
    // step's failed op may never come) and the kernels that wait on a
    // resource (such as a dequeue), so that the step ends promptly and
    // reports its error.
    if (rendezvous != nullptr) rendezvous->StartAbort(s);
    cancellation.StartCancel();
  }

  Rendezvous* rendezvous = nullptr;  // not owned; outlives the step
  absl::Mutex mu;
  absl::Status status ABSL_GUARDED_BY(mu);
  std::atomic<bool> aborted{false};
  CancellationManager cancellation;
};

// Runs `compute` (a kernel's Compute or ComputeAsync), turning an exception
// that escapes it into the node's error: a kernel whose output cannot be
// allocated fails its step, not the task. The caller adds the node's name.
template <typename F>
void RunCatchingExceptions(OpKernelContext* ctx, F&& compute) {
  try {
    compute();
  } catch (const TensorAllocationError& e) {
    ctx->SetStatus(absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate an output: ", e.what())));
  } catch (const std::bad_alloc& e) {
    ctx->SetStatus(absl::ResourceExhaustedError(
        absl::StrCat("out of memory (", e.what(), ")")));
  } catch (const std::exception& e) {
    ctx->SetStatus(
        absl::InternalError(absl::StrCat("the kernel threw: ", e.what())));
  } catch (...) {
    ctx->SetStatus(absl::InternalError(
        "the kernel threw something other than a std::exception"));
  }
}

}  // namespace

// The state of one step: pending input counts, input tensors in flight, the
// first error.
class Executor::StepState {
 public:
  StepState(const Executor* executor, const RunArgs& args,
            std::function<void(absl::Status)> done)
      : executor_(executor),
        args_(args),
        done_(std::move(done)),
        kept_expensive_(executor->KeepsExpensiveNodes(*args.runner)
                            ? std::numeric_limits<int>::max()
                            : 1),
        pending_(executor->items_.size()),
        inputs_(executor->total_inputs_) {
    for (size_t i = 0; i < executor->items_.size(); ++i) {
      pending_[i].store(executor->items_[i].initial_pending,
                        std::memory_order_relaxed);
    }
    abort_->rendezvous = args_.rendezvous;
    if (args_.cancellation != nullptr) {
      cancelled_by_caller_ = !args_.cancellation->RegisterCallback(
          [abort = abort_] {
            abort->Abort(absl::CancelledError("the step was cancelled"));
          },
          &cancel_token_);
    }
  }

  // Runs the step's first nodes on this thread: its cheap ones, and the
  // first expensive one unless `cheap_only` (then every expensive node goes
  // to the runner).
  void Start(bool cheap_only) {
    if (cancelled_by_caller_) {
      Abort(absl::CancelledError("the step was cancelled before it started"));
    }
    const std::vector<int>& roots = executor_->roots_;
    if (roots.empty()) {
      Finish();
      return;
    }
    outstanding_.store(static_cast<int>(roots.size()));
    std::deque<Queued> queue;
    // Counting the most expensive nodes this thread keeps as queued here
    // already sends every other to the runner (see Dispatch).
    int queued_expensive = cheap_only ? kept_expensive_ : 0;
    Dispatch(roots, &queue, &queued_expensive);
    RunQueue(&queue, queued_expensive);
  }

 private:
  // A node waiting in this thread's queue, and whether it went there as
  // an expensive one (its estimate may change before it runs).
  struct Queued {
    int id;
    bool expensive;
  };

  // Sends ready nodes to run: cheap ones on this thread, and expensive ones
  // too while fewer than kept_expensive_ are queued here; further expensive
  // ones to the runner, so that independent work runs in parallel.
  void Dispatch(const std::vector<int>& ready, std::deque<Queued>* queue,
                int* queued_expensive) {
    for (int id : ready) {
      const NodeItem& item = executor_->items_[id];
      if (!executor_->IsExpensive(id)) {
        if (item.leads_to_send) {
          queue->push_front({id, false});
        } else {
          queue->push_back({id, false});
        }
      } else if (*queued_expensive < kept_expensive_) {
        queue->push_back({id, true});
        ++*queued_expensive;
      } else {
        args_.runner->Schedule([this, id] {
          std::deque<Queued> q = {{id, true}};
          RunQueue(&q, 1);
        });
      }
    }
  }

  void RunQueue(std::deque<Queued>* queue, int queued_expensive) {
    // Kernels run on whatever thread drives the queue (a session's caller, an
    // RPC thread); none of them should pay for denormal floats.
    ScopedFlushDenormal flush_denormals;
    while (!queue->empty()) {
      const auto [id, expensive] = queue->front();
      queue->pop_front();
      if (expensive) --queued_expensive;
      const NodeItem& item = executor_->items_[id];
      if (item.kernel->AsAsync() != nullptr && !abort_->aborted.load()) {
        RunAsyncNode(id);  // continues on the kernel's completion
        continue;
      }
      std::vector<int> ready;
      Compute(id, &ready);
      // This node is done; the newly ready ones are outstanding. Count them
      // before dispatching: a node sent to the pool may finish (and end the
      // step) before Dispatch returns.
      if (outstanding_.fetch_add(static_cast<int>(ready.size()) - 1) +
              static_cast<int>(ready.size()) - 1 ==
          0) {
        Finish();
        return;
      }
      Dispatch(ready, queue, &queued_expensive);
    }
  }

  // Runs a synchronous node and records which successors became ready.
  void Compute(int id, std::vector<int>* ready) {
    if (abort_->aborted.load()) return;
    const NodeItem& item = executor_->items_[id];
    std::vector<Tensor> inputs(
        std::make_move_iterator(inputs_.begin() + item.input_start),
        std::make_move_iterator(inputs_.begin() + item.input_start +
                                item.node->num_inputs()));
    OpKernelContext ctx(Params(&inputs), item.kernel->num_outputs());
    const int64_t start_ns = trace::SpanStart();
    // (Only a kernel that says it is expensive can turn out not to be.)
    const int64_t timed_from = item.expensive ? trace::NowNanos() : 0;
    RunCatchingExceptions(&ctx, [&] { item.kernel->Compute(&ctx); });
    if (item.expensive) {
      executor_->RecordRunTime(id, trace::NowNanos() - timed_from);
    }
    trace::EndSpan("op", item.node->name(), start_ns);
    Propagate(item, &ctx, ready);
  }

  void RunAsyncNode(int id) {
    const NodeItem& item = executor_->items_[id];
    auto inputs = std::make_shared<std::vector<Tensor>>(
        std::make_move_iterator(inputs_.begin() + item.input_start),
        std::make_move_iterator(inputs_.begin() + item.input_start +
                                item.node->num_inputs()));
    auto ctx = std::make_shared<OpKernelContext>(Params(inputs.get()),
                                                 item.kernel->num_outputs());
    // An asynchronous op's span runs until it is done: for a _Recv, the wait
    // for the tensor.
    const int64_t start_ns = trace::SpanStart();
    // A kernel that throws may or may not have called `done` (or handed it
    // on); the node finishes once either way.
    auto finished = std::make_shared<std::atomic<bool>>(false);
    auto done = [this, id, inputs, ctx, start_ns, finished] {
      if (finished->exchange(true)) return;
      trace::EndSpan("op", executor_->items_[id].node->name(), start_ns);
      std::vector<int> ready;
      Propagate(executor_->items_[id], ctx.get(), &ready);
      // The consumers hold the outputs now, and this context lives on while
      // they run on this thread: dropping its references frees each buffer
      // once its consumers are done (a received tensor mapped from another
      // task is given back to it). A synchronous node's context ends first.
      for (Tensor& out : ctx->outputs()) out = Tensor();
      // Count the newly ready nodes before dispatching them (see RunQueue).
      if (outstanding_.fetch_add(static_cast<int>(ready.size()) - 1) +
              static_cast<int>(ready.size()) - 1 ==
          0) {
        Finish();
        return;
      }
      std::deque<Queued> queue;
      int queued_expensive = 0;
      Dispatch(ready, &queue, &queued_expensive);
      RunQueue(&queue, queued_expensive);
    };
    bool threw = false;
    RunCatchingExceptions(ctx.get(), [&] {
      try {
        item.kernel->AsAsync()->ComputeAsync(ctx.get(), done);
      } catch (...) {
        threw = true;
        throw;
      }
    });
    if (threw) done();
  }

  OpKernelContext::Params Params(const std::vector<Tensor>* inputs) {
    OpKernelContext::Params p;
    p.device = executor_->options_.device;
    p.inputs = inputs;
    p.call_frame = args_.call_frame;
    p.cancellation = &abort_->cancellation;
    p.step_id = args_.step_id;
    p.rendezvous = args_.rendezvous;
    return p;
  }

  // Checks the outputs of a finished node and hands them to its successors.
  void Propagate(const NodeItem& item, OpKernelContext* ctx,
                 std::vector<int>* ready) {
    absl::Status status = ctx->status();
    if (status.ok()) {
      for (int i = 0; i < item.kernel->num_outputs() && status.ok(); ++i) {
        const Tensor& out = ctx->outputs()[i];
        if (!out.IsInitialized()) {
          status = absl::InternalError(
              absl::StrCat("the kernel did not set output ", i));
        } else if (out.dtype() != item.kernel->output_type(i)) {
          status = absl::InternalError(
              absl::StrCat("the kernel produced ", DataTypeName(out.dtype()),
                           " for output ", i, " but the graph expects ",
                           DataTypeName(item.kernel->output_type(i))));
        }
      }
    }
    if (!status.ok()) {
      Abort(AddErrorContext(status, item.node->DebugName()));
      return;
    }
    if (abort_->aborted.load()) return;
    for (const OutEdge& e : item.node->out_edges()) {
      const int dst = e.dst->id();
      if (!e.is_control()) {
        inputs_[executor_->items_[dst].input_start + e.dst_input] =
            ctx->outputs()[e.src_output];
      }
      if (pending_[dst].fetch_sub(1, std::memory_order_acq_rel) == 1)
        ready->push_back(dst);
    }
  }

  void Abort(const absl::Status& status) {
    // A local reference: the step may end (and free this state) before
    // StartCancel returns.
    std::shared_ptr<StepAbort> abort = abort_;
    abort->Abort(status);
  }

  void Finish() {
    // Once the caller's cancellation has started, its callback touches only
    // the shared abort state, which it holds itself: nothing to wait for (and
    // waiting would deadlock when the callback itself ended the step).
    if (args_.cancellation != nullptr && !cancelled_by_caller_ &&
        !args_.cancellation->IsCancelled()) {
      args_.cancellation->DeregisterCallback(cancel_token_);
    }
    absl::Status status;
    {
      absl::MutexLock lock(&abort_->mu);
      status = abort_->status;
    }
    auto done = std::move(done_);
    delete this;
    done(status);
  }

  const Executor* executor_;
  RunArgs args_;
  std::function<void(absl::Status)> done_;
  // How many ready expensive nodes a thread keeps in its own queue before
  // it hands further ones to the runner (see KeepsExpensiveNodes).
  const int kept_expensive_;
  std::vector<std::atomic<int>> pending_;
  std::vector<Tensor> inputs_;
  std::atomic<int> outstanding_{0};
  std::shared_ptr<StepAbort> abort_ = std::make_shared<StepAbort>();
  CancellationManager::Token cancel_token_ = 0;
  bool cancelled_by_caller_ = false;
};

Executor::Executor(std::unique_ptr<const Graph> graph, const Options& options)
    : graph_(std::move(graph)), options_(options) {}

Executor::~Executor() = default;

absl::StatusOr<std::unique_ptr<Executor>> Executor::Create(
    std::unique_ptr<const Graph> graph, const Options& options) {
  std::unique_ptr<Executor> executor(new Executor(std::move(graph), options));
  const Graph& g = *executor->graph_;
  executor->items_.resize(g.num_nodes());
  int slot = 0;
  for (const auto& node : g.nodes()) {
    NodeItem& item = executor->items_[node->id()];
    item.node = node.get();
    DF_ASSIGN_OR_RETURN(item.kernel,
                        options.kernels->CreateKernel(*node, options.device,
                                                      options.device_type));
    item.expensive = item.kernel->IsExpensive();
    item.input_start = slot;
    slot += node->num_inputs();
    item.initial_pending =
        node->num_inputs() + static_cast<int>(node->control_inputs().size());
    for (int i = 0; i < node->num_outputs(); ++i) {
      const PartialTensorShape& shape = node->output_shape(i);
      if (!shape.IsFullyDefined() ||
          shape.num_elements() > kSmallStepElements) {
        executor->small_ = false;
      }
    }
    if (item.initial_pending == 0) executor->roots_.push_back(node->id());
  }
  executor->total_inputs_ = slot;
  executor->run_ns_ = std::make_unique<std::atomic<int64_t>[]>(g.num_nodes());
  for (int i = 0; i < g.num_nodes(); ++i) executor->run_ns_[i].store(-1);
  executor->MarkSendAncestors();
  // The step starts with what its sends need: on a ps, the reads of the
  // variables that the workers wait for come before the constants of the
  // updates (docs/benchmarks.md, "A caller that polls for its step's
  // answer").
  std::stable_partition(
      executor->roots_.begin(), executor->roots_.end(),
      [&executor](int id) { return executor->items_[id].leads_to_send; });
  return executor;
}

void Executor::MarkSendAncestors() {
  std::vector<const Node*> stack;
  for (NodeItem& item : items_) {
    if (item.node->op() != "_Send") continue;
    item.leads_to_send = true;
    stack.push_back(item.node);
  }
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    auto visit = [&](const Node* input) {
      NodeItem& item = items_[input->id()];
      if (item.leads_to_send) return;
      item.leads_to_send = true;
      stack.push_back(input);
    };
    for (const Endpoint& input : node->inputs()) visit(input.node);
    for (const Node* input : node->control_inputs()) visit(input);
  }
}

bool Executor::KeepsExpensiveNodes(const ThreadPool& runner) const {
  if (runner.idle_wait() != ThreadPool::IdleWait::kSleep) return false;
  ThreadPool* intra_op =
      options_.device == nullptr ? nullptr : options_.device->intra_op_pool();
  return intra_op != nullptr && intra_op->NumThreads() > 1;
}

bool Executor::IsExpensive(int id) const {
  if (!items_[id].expensive) return false;
  const int64_t ns = run_ns_[id].load(std::memory_order_relaxed);
  return ns < 0 || ns >= kHandOverNs;
}

void Executor::RecordRunTime(int id, int64_t ns) const {
  // (Steps that record at once may lose one of their figures: an estimate
  // needs no more.)
  const int64_t old = run_ns_[id].load(std::memory_order_relaxed);
  run_ns_[id].store(old < 0 ? ns : old + (ns - old) / 8,
                    std::memory_order_relaxed);
}

void Executor::RunAsync(const RunArgs& args,
                        std::function<void(absl::Status)> done) {
  // A small step starts here rather than on the runner: for a parameter
  // server's update of a scalar the hand-over to another thread cost more
  // than the step itself. A caller that asks runs the cheap start of a large
  // step. The state deletes itself when it finishes.
  auto* state = new StepState(this, args, std::move(done));
  if (small_) {
    state->Start(/*cheap_only=*/false);
  } else if (args.start_on_caller) {
    state->Start(/*cheap_only=*/true);
  } else {
    args.runner->Schedule([state] { state->Start(/*cheap_only=*/false); });
  }
}

absl::Status Executor::Run(const RunArgs& args) {
  absl::Notification finished;
  absl::Status result;
  // The caller would only wait: let it run the first nodes itself.
  (new StepState(this, args, [&](absl::Status s) {
    result = std::move(s);
    finished.Notify();
  }))->Start(/*cheap_only=*/false);
  finished.WaitForNotification();
  return result;
}

}  // namespace distflow
