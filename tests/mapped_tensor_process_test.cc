// A ps task in its own process (`distflow server`) and a worker in this one:
// a 1 MiB variable read on the worker is mapped out of the ps's memory, not
// copied; the worker's view stays as it was when the ps updates the
// variable; and it stays readable after the ps is killed with SIGKILL.
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "distflow/distflow.h"
#include "gtest/gtest.h"
#include "ps_process.h"
#include "subprocess.h"

namespace distflow {
namespace {

using ::distflow::testing::PsProcessAndWorker;
using ::distflow::testing::SessionOnceThePsIsUp;
using ::distflow::testing::StartPsProcessAndWorker;

constexpr int32_t kElements = 1 << 18;  // 1 MiB of floats

// Mappings of tensor arenas in this process: its own, and those of the
// tasks it took tensors from (each arena is mapped in two parts).
int ArenaMappings() {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);) {
    n += line.find("memfd:distflow-tensors") != std::string::npos;
  }
  return n;
}

class MappedTensorProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StartPsProcessAndWorker(&tasks_);
    if (HasFatalFailure()) return;

    Scope root = Scope::NewRootScope();
    Scope on_ps = root.WithDevice("/job:ps/task:0");
    Scope on_worker = root.WithDevice("/job:worker/task:0");
    ops::Variable v(on_ps.WithOpName("v"),
                    ops::Fill(on_ps, Tensor::Vector<int32_t>({kElements}),
                              Tensor::Scalar(3.0f)));
    init_ = ops::GlobalVariablesInitializer(root);
    add_ = ops::AssignAdd(on_ps.WithOpName("add"), v,
                          ops::Fill(on_ps, Tensor::Vector<int32_t>({kElements}),
                                    Tensor::Scalar(5.0f)))
               .op();
    v_sum_ = ops::Sum(on_ps, v, Tensor::Scalar<int32_t>(0));
    // The worker keeps what it read of v in a queue, past the step.
    Output queue =
        ops::FIFOQueue(on_worker.WithOpName("kept"), DataType::kFloat,
                       PartialTensorShape({kElements}));
    keep_ = ops::QueueEnqueue(on_worker.WithOpName("keep"), queue, v);
    kept_sum_ = ops::Sum(on_worker, ops::QueueDequeue(on_worker, queue),
                         Tensor::Scalar<int32_t>(0));
    // The ps is up once a step with a part there runs.
    SessionOnceThePsIsUp(root, tasks_, init_, &session_);
  }

  float Fetch(const Output& sum) {
    auto out = session_->Run({sum});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? (*out)[0].scalar<float>() : -1;
  }

  PsProcessAndWorker tasks_;
  std::unique_ptr<ClientSession> session_;
  Operation init_, add_, keep_;
  Output v_sum_, kept_sum_;
};

TEST_F(MappedTensorProcessTest, TheWorkerMapsTheVariableInsteadOfCopyingIt) {
  const int before = ArenaMappings();
  ASSERT_EQ(session_->RunTargets({keep_}), absl::OkStatus());
  EXPECT_EQ(ArenaMappings(), before + 2)
      << "the ps's arena was not mapped here: the tensor was copied";
  EXPECT_EQ(Fetch(kept_sum_), 3.0f * kElements);
}

// The ps updates v in place only once no other process reads it: while the
// worker keeps its view, the update goes to a copy.
TEST_F(MappedTensorProcessTest, AnUpdateLeavesTheWorkersViewAsItWas) {
  ASSERT_EQ(session_->RunTargets({keep_}), absl::OkStatus());
  ASSERT_EQ(session_->RunTargets({add_}), absl::OkStatus());
  EXPECT_EQ(Fetch(v_sum_), 8.0f * kElements);
  EXPECT_EQ(Fetch(kept_sum_), 3.0f * kElements);
  // And with no reader left, the next read sees the update.
  ASSERT_EQ(session_->RunTargets({keep_}), absl::OkStatus());
  EXPECT_EQ(Fetch(kept_sum_), 8.0f * kElements);
}

TEST_F(MappedTensorProcessTest, AMappedTensorOutlivesItsKilledSender) {
  ASSERT_EQ(session_->RunTargets({keep_}), absl::OkStatus());
  tasks_.ps->Kill();  // (and waits for it to exit)
  EXPECT_EQ(Fetch(kept_sum_), 3.0f * kElements);
}

}  // namespace
}  // namespace distflow
