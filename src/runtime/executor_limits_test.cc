// Steps whose inputs ask for impossible tensors fail with an error naming the
// op, and the process (a task serving other steps) lives on: kernels check
// the shapes they build, and the executor turns an exception that escapes a
// kernel into the step's error.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "distflow/session.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/op_registry.h"
#include "graph/shape_inference.h"
#include "gtest/gtest.h"
#include "kernels/kernel_registry.h"

namespace distflow {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kThrowsOp[] = "TestThrowsLogicError";
constexpr char kAsyncThrowsOp[] = "TestAsyncThrowsBadAlloc";

class ThrowsKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    throw std::logic_error("a bug in a kernel");
  }
};

// Throws before calling `done`, as a kernel whose allocation fails might.
class AsyncThrowsKernel : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext* ctx, std::function<void()> done) override {
    throw std::bad_alloc();
  }
};

void RegisterThrowingOps() {
  static const bool registered = [] {
    for (const char* op : {kThrowsOp, kAsyncThrowsOp}) {
      OpDefBuilder b(op);
      b.Output("out", DataType::kInt32).SetShapeFn(shape_fns::Scalar);
      if (!OpRegistry::Global()->Register(std::move(b).Build()).ok())
        std::abort();
    }
    RegisterCpuKernel<ThrowsKernel>(KernelRegistry::Global(), kThrowsOp);
    RegisterCpuKernel<AsyncThrowsKernel>(KernelRegistry::Global(),
                                         kAsyncThrowsOp);
    return true;
  }();
  (void)registered;
}

class ExecutorLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterThrowingOps();
    auto session = NewSession(SessionOptions());
    ASSERT_TRUE(session.ok()) << session.status();
    session_ = std::move(*session);
  }

  void Extend(const std::string& text) {
    proto::GraphDef def;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &def))
        << text;
    absl::Status s = session_->Extend(def);
    ASSERT_TRUE(s.ok()) << s;
  }

  // The session still runs steps after a failed one.
  void ExpectAlive() {
    Extend(R"(node { name: "alive" op: "Const"
                     attr { key: "dtype" value { type: DT_INT32 } }
                     attr { key: "value" value { tensor { dtype: DT_INT32
                            tensor_content: "\007\000\000\000" } } } })");
    auto out = session_->Run({}, {"alive:0"}, {});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].scalar<int32_t>(), 7);
  }

  std::unique_ptr<Session> session_;
};

// Fill's dims are fed, so the graph cannot refuse them when it is built:
// the output allocation is refused, and the step fails RESOURCE_EXHAUSTED
// naming the node, instead of std::bad_alloc ending the process.
TEST_F(ExecutorLimitsTest, FillLargerThanATensorMayBeIsResourceExhausted) {
  Extend(R"(
    node { name: "dims" op: "Placeholder"
           attr { key: "dtype" value { type: DT_INT64 } }
           attr { key: "shape" value { shape { dim: 2 } } } }
    node { name: "v" op: "Const"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "value" value { tensor { dtype: DT_FLOAT
                  tensor_content: "\000\000\200\077" } } } }
    node { name: "fill" op: "Fill" input: "dims" input: "v" }
  )");
  auto out = session_->Run(
      {{"dims:0",
        Tensor::Vector<int64_t>({int64_t{1} << 20, int64_t{1} << 20})}},
      {"fill:0"}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted)
      << out.status();
  EXPECT_THAT(out.status().message(),
              AllOf(HasSubstr("Fill 'fill'"), HasSubstr("[1048576,1048576]")));
  ExpectAlive();
}

// [2^32, 0] x [0, 2^32]: both inputs are empty, but the product's shape has
// 2^64 elements (a DF_CHECK in TensorShape once).
TEST_F(ExecutorLimitsTest, MatMulWhoseOutputShapeOverflowsIsInvalidArgument) {
  Extend(R"(
    node { name: "a" op: "Placeholder"
           attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "b" op: "Placeholder"
           attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "product" op: "MatMul" input: "a" input: "b" }
  )");
  const int64_t big = int64_t{1} << 32;
  auto out =
      session_->Run({{"a:0", Tensor(DataType::kFloat, TensorShape({big, 0}))},
                     {"b:0", Tensor(DataType::kFloat, TensorShape({0, big}))}},
                    {"product:0"}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument)
      << out.status();
  EXPECT_THAT(out.status().message(),
              AllOf(HasSubstr("MatMul 'product'"), HasSubstr("[4294967296,0]"),
                    HasSubstr("[0,4294967296]")));
  ExpectAlive();
}

// A resource vector where a variable's handle is expected reached
// Tensor::scalar()'s abort.
TEST_F(ExecutorLimitsTest, ResourceVectorForAHandleIsInvalidArgument) {
  Extend(R"(
    node { name: "h" op: "Placeholder"
           attr { key: "dtype" value { type: DT_RESOURCE } } }
    node { name: "read" op: "ReadVariableOp" input: "h"
           attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "value" op: "Const"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "value" value { tensor { dtype: DT_FLOAT
                  tensor_content: "\000\000\200\077" } } } }
    node { name: "assign" op: "AssignVariableOp" input: "h" input: "value" }
    node { name: "initialized" op: "VarIsInitializedOp" input: "h" }
  )");
  const ResourceHandle handle{"/job:localhost/replica:0/task:0/device:CPU:0",
                              "", "w", DataType::kFloat};
  const Tensor handles = Tensor::Vector<ResourceHandle>({handle, handle});
  for (const auto& [fetch, op] :
       std::vector<std::pair<std::string, std::string>>{
           {"read:0", "ReadVariableOp 'read'"},
           {"initialized:0", "VarIsInitializedOp 'initialized'"}}) {
    auto out = session_->Run({{"h:0", handles}}, {fetch}, {});
    ASSERT_FALSE(out.ok()) << fetch;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument)
        << out.status();
    EXPECT_THAT(out.status().message(),
                AllOf(HasSubstr(op), HasSubstr("resource[2]")));
  }
  absl::Status s = session_->Run({{"h:0", handles}}, {}, {"assign"}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("AssignVariableOp 'assign'"));
  ExpectAlive();
}

TEST_F(ExecutorLimitsTest, KernelExceptionsFailTheStepNamingTheNode) {
  Extend(R"(
    node { name: "throws" op: "TestThrowsLogicError" }
    node { name: "async_throws" op: "TestAsyncThrowsBadAlloc" }
  )");
  auto out = session_->Run({}, {"throws:0"}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInternal) << out.status();
  EXPECT_THAT(out.status().message(),
              AllOf(HasSubstr("TestThrowsLogicError 'throws'"),
                    HasSubstr("a bug in a kernel")));

  out = session_->Run({}, {"async_throws:0"}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted)
      << out.status();
  EXPECT_THAT(out.status().message(),
              HasSubstr("TestAsyncThrowsBadAlloc 'async_throws'"));
  ExpectAlive();
}

}  // namespace
}  // namespace distflow
