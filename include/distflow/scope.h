// Building graphs: Scope, Operation, Output and Input.
//
// A Scope is where ops are created: it carries the graph, a name prefix, the
// device to place ops on, control dependencies and colocation. Scopes are cheap
// values; every With*/NewSubScope call returns a new Scope sharing the same
// graph. Building a graph is single-threaded.
//
// Errors while building (an unknown op, mismatched types or shapes) do not
// throw or crash: the first error is recorded in the scope (shared by every
// scope of the same root) and later ops become no-ops returning invalid
// Outputs. Check `scope.status()`, or let the session report it: running a
// graph whose scope holds an error fails with that error.
#ifndef DISTFLOW_SCOPE_H_
#define DISTFLOW_SCOPE_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "distflow/tensor.h"
#include "distflow/tensor_shape.h"
#include "distflow/types.h"

namespace distflow {

class Graph;
class Node;
class Output;
namespace proto {
class GraphDef;
}

// A node of the graph, seen from the build API.
class Operation {
 public:
  Operation() = default;
  explicit Operation(Node* node) : node_(node) {}

  bool valid() const { return node_ != nullptr; }
  Node* node() const { return node_; }
  std::string name() const;
  // The op type, such as "MatMul".
  std::string type() const;
  // The requested device, such as "/job:ps/task:0" (may be empty or partial).
  std::string device() const;
  int num_outputs() const;
  Output output(int i) const;

  bool operator==(const Operation& o) const { return node_ == o.node_; }

 private:
  Node* node_ = nullptr;
};

// One output of an operation: the values that flow along the graph's edges.
class Output {
 public:
  Output() = default;
  Output(Node* node, int index) : node_(node), index_(index) {}
  explicit Output(const Operation& op, int index = 0)
      : node_(op.node()), index_(index) {}

  bool valid() const { return node_ != nullptr; }
  Node* node() const { return node_; }
  int index() const { return index_; }
  Operation op() const { return Operation(node_); }
  // "node:index", the name sessions use for feeds and fetches.
  std::string name() const;
  DataType dtype() const;
  // The shape inferred when the graph was built (dimensions may be unknown).
  PartialTensorShape shape() const;

  bool operator==(const Output& o) const {
    return node_ == o.node_ && index_ == o.index_;
  }

 private:
  Node* node_ = nullptr;
  int index_ = 0;
};

// An op argument: an Output, or a value that becomes a constant in the graph (a
// Tensor, a scalar, a string, a list {1, 2, 3} or a nested list {{1, 2}, {3,
// 4}}). A number written as a literal takes the type of the op's other inputs
// (Mul(s, x, 2) for a float32 x multiplies by 2.0f).
class Input {
 public:
  Input(const Output& output)
      : output_(output) {}  // NOLINT: implicit by design
  Input(const Tensor& tensor) : tensor_(tensor) {}  // NOLINT
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  Input(T value)
      : tensor_(Tensor::Scalar(static_cast<Storage<T>>(value))),
        literal_(true) {}  // NOLINT
  Input(const char* value)
      : tensor_(Tensor::Scalar<std::string>(value)) {}  // NOLINT
  Input(const std::string& value)
      : tensor_(Tensor::Scalar<std::string>(value)) {}  // NOLINT
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  Input(std::initializer_list<T> values)  // NOLINT
      : tensor_(Tensor::Vector<Storage<T>>(
            std::vector<Storage<T>>(values.begin(), values.end()))),
        literal_(true) {}
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  Input(std::initializer_list<std::initializer_list<T>> rows)  // NOLINT
      : tensor_(MatrixOf(rows)), literal_(true) {}

  bool is_output() const { return output_.valid() || !tensor_.IsInitialized(); }
  const Output& output() const { return output_; }
  const Tensor& tensor() const { return tensor_; }
  // True for numbers written in code, whose type may adapt to the op's other
  // inputs.
  bool is_literal() const { return literal_; }

  // The element type a C++ number is stored as: int -> int32, 64-bit integers
  // -> int64.
  template <typename T>
  using Storage = std::conditional_t<
      std::is_same_v<T, bool>, bool,
      std::conditional_t<
          std::is_floating_point_v<T>,
          std::conditional_t<sizeof(T) == 4, float, double>,
          std::conditional_t<
              std::is_same_v<T, unsigned char>, uint8_t,
              std::conditional_t<(sizeof(T) < 8 && std::is_signed_v<T>),
                                 int32_t, int64_t>>>>;

 private:
  template <typename T>
  static Tensor MatrixOf(std::initializer_list<std::initializer_list<T>> rows) {
    std::vector<Storage<T>> values;
    for (const auto& row : rows)
      values.insert(values.end(), row.begin(), row.end());
    const int64_t r = static_cast<int64_t>(rows.size());
    const int64_t c = r == 0 ? 0 : static_cast<int64_t>(rows.begin()->size());
    auto t = Tensor::FromValues<Storage<T>>(TensorShape({r, c}), values);
    // Ragged rows: an invalid Input that the op reports as an error.
    return t.ok() ? *t : Tensor();
  }

  Output output_;
  Tensor tensor_;
  bool literal_ = false;
};

// Chooses a device for an op from the op (already in the graph, with the device
// the enclosing scopes requested). Returns a full or partial device name;
// fields it sets override the scope's.
using DeviceFunction = std::function<std::string(const Operation& op)>;

class Scope {
 public:
  // A scope over a new, empty graph.
  static Scope NewRootScope();

  // Ops created in the result are named "<prefix>name/...". `name` is made
  // unique in the graph.
  Scope NewSubScope(const std::string& name) const;
  // Ops created in the result are named "<op's name>/...": groups helper ops
  // with the op they serve, such as a variable's initializer "w/Assign".
  Scope NewSubScopeOf(const Operation& op) const;
  // The next op created in the result is named `name` (made unique if taken).
  Scope WithOpName(const std::string& name) const;
  // Ops created in the result request `device`, merged over the enclosing
  // scope's device: WithDevice("/job:ps") then WithDevice("/task:1") requests
  // "/job:ps/task:1". A malformed name is reported when the next op is created.
  Scope WithDevice(const std::string& device) const;
  // Ops created in the result are placed by `fn` (merged like WithDevice, in
  // nesting order).
  Scope WithDeviceFunction(DeviceFunction fn) const;
  // Ops created in the result run only after every op of `deps` (added to the
  // enclosing ones).
  Scope WithControlDependencies(const std::vector<Operation>& deps) const;
  Scope WithNoControlDependencies() const;
  // Ops created in the result are placed on the device of `op` (overriding
  // device scopes).
  Scope ColocateWith(const Operation& op) const;

  bool ok() const;
  // The first error of building in any scope of this root, or OK.
  absl::Status status() const;
  // Records `status` if it is the first error.
  void UpdateStatus(const absl::Status& status) const;

  // The graph (owned by the scopes that share it).
  Graph* graph() const;
  std::shared_ptr<Graph> graph_as_shared_ptr() const;
  // The graph as a GraphDef, or the scope's error.
  absl::Status ToGraphDef(proto::GraphDef* out) const;

  // --- For op builders (see graph/node_builder.h) ---
  // The name for a new op: the WithOpName name, or `default_name`, under the
  // prefix, made unique.
  std::string GetUniqueNameForOp(const std::string& default_name) const;
  const std::vector<Operation>& control_dependencies() const;
  const Operation& colocate_with() const;
  // The device for `op` from the enclosing device scopes and functions;
  // malformed names are an error.
  absl::StatusOr<std::string> DeviceFor(const Operation& op) const;

  ~Scope();
  Scope(const Scope&);
  Scope& operator=(const Scope&);

 private:
  struct Impl;
  explicit Scope(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace distflow

#endif  // DISTFLOW_SCOPE_H_
