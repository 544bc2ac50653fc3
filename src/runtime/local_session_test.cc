#include "runtime/local_session.h"

#include <cfloat>
#include <cstdio>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/step_trace.h"
#include "distflow/ops.h"
#include "distflow/scope.h"
#include "distflow/session.h"
#include "gmock/gmock.h"
#include "graph/attr_value.h"
#include "gtest/gtest.h"
#include "proto/graph.pb.h"

namespace distflow {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

proto::GraphDef ToGraphDef(const Scope& scope) {
  proto::GraphDef def;
  absl::Status s = scope.ToGraphDef(&def);
  EXPECT_TRUE(s.ok()) << s;
  return def;
}

std::unique_ptr<Session> NewLocalSession(int inter_op_threads = 0) {
  SessionOptions options;
  options.inter_op_threads = inter_op_threads;
  auto session = NewSession(options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(*session) : nullptr;
}

// x: float32[-1,4] placeholder; y = x * 2; a counter variable bumped by the
// target "bump_all".
class LocalSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Scope s = Scope::NewRootScope();
    auto x = ops::Placeholder(s.WithOpName("x"), DataType::kFloat, {-1, 4});
    ops::Mul(s.WithOpName("y"), x, 2.0f);
    auto counter = ops::Variable(s.WithOpName("counter"), int64_t{0});
    auto bump = ops::AssignAdd(s.WithOpName("bump"), counter, 1);
    ops::Group(s.WithOpName("bump_all"), {bump.op()});
    ops::GlobalVariablesInitializer(s.WithOpName("init"));
    ASSERT_TRUE(s.ok()) << s.status();
    session_ = NewLocalSession();
    ASSERT_TRUE(session_);
    ASSERT_TRUE(session_->Extend(ToGraphDef(s)).ok());
    ASSERT_TRUE(session_->Run({}, {}, {"init"}).ok());
  }

  int64_t Counter() {
    auto out = session_->Run({}, {"counter/read:0"}, {});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? (*out)[0].scalar<int64_t>() : -1;
  }

  // Runs and expects INVALID_ARGUMENT mentioning every one of `culprits`.
  void ExpectInvalid(const std::vector<std::pair<std::string, Tensor>>& feeds,
                     const std::vector<std::string>& fetches,
                     const std::vector<std::string>& targets,
                     const std::string& culprit) {
    auto out = session_->Run(feeds, fetches, targets);
    ASSERT_FALSE(out.ok()) << "expected an error naming " << culprit;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument)
        << out.status();
    EXPECT_THAT(out.status().message(), HasSubstr(culprit));
  }

  Tensor Input() const {
    return Tensor::Matrix<float>({{1, 2, 3, 4}, {5, 6, 7, 8}});
  }

  std::unique_ptr<Session> session_;
};

TEST_F(LocalSessionTest, FeedsFetchesAndTargets) {
  auto out = session_->Run({{"x:0", Input()}}, {"y:0", "x"}, {"bump_all"});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_TRUE(
      (*out)[0].Equals(Tensor::Matrix<float>({{2, 4, 6, 8}, {10, 12, 14, 16}})))
      << (*out)[0];
  EXPECT_TRUE((*out)[1].Equals(Input()));
  EXPECT_EQ(Counter(), 1);
  ASSERT_TRUE(session_->Run({}, {}, {"bump_all"}).ok());
  ASSERT_TRUE(session_->Run({}, {}, {"bump"}).ok());
  EXPECT_EQ(Counter(), 3);
}

TEST_F(LocalSessionTest, UnknownFeedNameIsInvalidArgument) {
  ExpectInvalid({{"no_such_feed:0", Input()}}, {"y:0"}, {}, "no_such_feed");
}

TEST_F(LocalSessionTest, FeedOfWrongDtypeIsInvalidArgument) {
  ExpectInvalid({{"x:0", Tensor::Matrix<int32_t>({{1, 2, 3, 4}})}}, {"y:0"}, {},
                "'x:0'");
}

TEST_F(LocalSessionTest, FeedOfWrongShapeIsInvalidArgument) {
  ExpectInvalid({{"x:0", Tensor::Matrix<float>({{1, 2, 3}})}}, {"y:0"}, {},
                "'x:0'");
  ExpectInvalid({{"x:0", Tensor::Vector<float>({1, 2, 3, 4})}}, {"y:0"}, {},
                "'x:0'");
  // Any number of rows of 4 fits [-1,4].
  auto out = session_->Run(
      {{"x:0", Tensor(DataType::kFloat, TensorShape({3, 4}))}}, {"y:0"}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), TensorShape({3, 4}));
}

TEST_F(LocalSessionTest, UnknownFetchIsInvalidArgument) {
  ExpectInvalid({}, {"ghost:0"}, {}, "ghost");
  ExpectInvalid({{"x:0", Input()}}, {"y:7"}, {}, "y:7");
}

TEST_F(LocalSessionTest, UnknownTargetIsInvalidArgument) {
  ExpectInvalid({}, {}, {"phantom"}, "phantom");
  EXPECT_EQ(Counter(), 0);
}

TEST_F(LocalSessionTest, CycleInExtendIsRejectedAndTheGraphKept) {
  proto::GraphDef cyclic;
  for (const auto& [name, input] :
       {std::pair<std::string, std::string>{"loop_a", "loop_b"},
        {"loop_b", "loop_a"}}) {
    proto::NodeDef* node = cyclic.add_node();
    node->set_name(name);
    node->set_op("Identity");
    node->add_input(input);
    (*node->mutable_attr())["T"] = MakeAttr(DataType::kFloat);
  }
  absl::Status s = session_->Extend(cyclic);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), AllOf(HasSubstr("cycle"), HasSubstr("loop_a"),
                                 HasSubstr("loop_b")));

  auto out = session_->Run({{"x:0", Input()}}, {"y:0"}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectInvalid({}, {"loop_a:0"}, {}, "loop_a");
}

TEST_F(LocalSessionTest, MalformedDeviceInExtendIsAnError) {
  Scope s = Scope::NewRootScope();
  ops::Const(s.WithOpName("placed"), 1.0f);
  proto::GraphDef def = ToGraphDef(s);
  def.mutable_node(0)->set_device("/job:ps/bogus:1");
  absl::Status status = session_->Extend(def);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("placed"));
  ExpectInvalid({}, {"placed:0"}, {}, "placed");

  // A well-formed device for another job is fine for a local session (it runs
  // everything here).
  def.mutable_node(0)->set_device("/job:ps/task:3");
  ASSERT_TRUE(session_->Extend(def).ok());
  auto out = session_->Run({}, {"placed:0"}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 1.0f);
}

TEST_F(LocalSessionTest, RunAfterCloseIsFailedPrecondition) {
  ASSERT_TRUE(session_->Close().ok());
  auto out = session_->Run({{"x:0", Input()}}, {"y:0"}, {});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition)
      << out.status();
  EXPECT_TRUE(session_->Close().ok());  // idempotent
  EXPECT_EQ(session_->Run({}, {}, {"init"}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(NewSessionTest, GrpcTargetWithoutDistributedRuntimeIsInvalidArgument) {
  SessionOptions options;
  options.target = "grpc://localhost:1";
  auto session = NewSession(options);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().code(), absl::StatusCode::kInvalidArgument)
      << session.status();
  EXPECT_THAT(session.status().message(), HasSubstr("grpc://localhost:1"));
}

TEST(LocalSessionConcurrencyTest, ConcurrentRunsUpdateVariablesAtomically) {
  Scope s = Scope::NewRootScope();
  auto total = ops::Variable(s.WithOpName("total"), int64_t{0});
  ops::AssignAdd(s.WithOpName("add_one"), total, int64_t{1});
  ops::GlobalVariablesInitializer(s.WithOpName("init"));
  auto session = NewLocalSession(/*inter_op_threads=*/4);
  ASSERT_TRUE(session);
  ASSERT_TRUE(session->Extend(ToGraphDef(s)).ok());
  ASSERT_TRUE(session->Run({}, {}, {"init"}).ok());

  constexpr int kThreads = 8;
  constexpr int kStepsPerThread = 25;
  std::vector<absl::Status> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kStepsPerThread; ++i) {
        // Half the threads fetch the updated value, half run the op as a
        // target.
        auto out = t % 2 == 0 ? session->Run({}, {"add_one:0"}, {})
                              : session->Run({}, {}, {"add_one"});
        if (!out.ok() && errors[t].ok()) errors[t] = out.status();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const absl::Status& e : errors) EXPECT_TRUE(e.ok()) << e;
  auto out = session->Run({}, {"total/read:0"}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<int64_t>(), kThreads * kStepsPerThread);
}

// Kernels flush denormal floats to zero (base/denormal.h), on whichever thread
// runs them, and leave the caller's thread as it was.
TEST(LocalSessionDenormalTest, DenormalResultsAreFlushedToZero) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DataType::kFloat, {2});
  ops::Mul(s.WithOpName("quarter"), x, 0.25f);
  ASSERT_TRUE(s.ok()) << s.status();
  for (int inter_op_threads : {0, 2}) {
    auto session = NewLocalSession(inter_op_threads);
    ASSERT_TRUE(session);
    ASSERT_TRUE(session->Extend(ToGraphDef(s)).ok());
    auto out = session->Run({{"x:0", Tensor::Vector<float>({FLT_MIN, 8.0f})}},
                            {"quarter:0"}, {});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE((*out)[0].Equals(Tensor::Vector<float>({0.0f, 2.0f})))
        << (*out)[0];
  }
  volatile float caller = FLT_MIN;
  EXPECT_GT(caller * 0.25f, 0.0f);
}

TEST(LocalSessionSeedTest, MatMulOfVariables) {
  Scope s = Scope::NewRootScope();
  auto x =
      ops::Variable(s.WithOpName("x"), Tensor::Matrix<int32_t>({{1, 2, 3, 4}}));
  auto w = ops::Variable(s.WithOpName("w"),
                         Tensor::Matrix<int32_t>({{2}, {2}, {2}, {2}}));
  ops::MatMul(s.WithOpName("product"), x, w);
  ops::GlobalVariablesInitializer(s.WithOpName("init"));
  auto session = NewLocalSession();
  ASSERT_TRUE(session);
  ASSERT_TRUE(session->Extend(ToGraphDef(s)).ok());
  ASSERT_TRUE(session->Run({}, {}, {"init"}).ok());
  auto out = session->Run({}, {"product:0"}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE((*out)[0].Equals(Tensor::Matrix<int32_t>({{20}}))) << (*out)[0];
}

// With a step trace recording, each step and each op of it is a span.
TEST(LocalSessionTraceTest, StepsAndTheirOpsAreTraced) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Const(s.WithOpName("x"), Tensor::Matrix<float>({{1, 2}}));
  ops::MatMul(s.WithOpName("product"), x, x, {.transpose_b = true});
  auto session = NewLocalSession();
  ASSERT_TRUE(session);
  ASSERT_TRUE(session->Extend(ToGraphDef(s)).ok());
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/local_session_trace.json");
  trace::Start(path, 1000);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(session->Run({}, {"product:0"}, {}).ok());
  }
  ASSERT_TRUE(trace::Stop().ok());
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  auto count = [&](const std::string& needle) {
    int n = 0;
    for (size_t at = text.find(needle); at != std::string::npos;
         at = text.find(needle, at + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count(R"("name":"product")"), 3) << text;
  EXPECT_EQ(count(R"("name":"x")"), 3) << text;
  EXPECT_EQ(count(R"("cat":"step")"), 3) << text;
  std::remove(path.c_str());
}

}  // namespace
}  // namespace distflow
