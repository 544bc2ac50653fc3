// What an op's shape function sees: input shapes and types, constant input
// values, attributes; and where it writes output shapes. Shape functions return
// INVALID_ARGUMENT with a message that names the shapes; the caller prefixes
// the op and node name.
#ifndef DISTFLOW_GRAPH_SHAPE_INFERENCE_H_
#define DISTFLOW_GRAPH_SHAPE_INFERENCE_H_

#include <vector>

#include "absl/status/status.h"
#include "distflow/tensor.h"
#include "distflow/tensor_shape.h"
#include "graph/attr_value.h"

namespace distflow {

class InferenceContext {
 public:
  InferenceContext(const AttrMap* attrs,
                   std::vector<PartialTensorShape> input_shapes,
                   std::vector<DataType> input_types,
                   std::vector<const Tensor*> input_values, int num_outputs)
      : attrs_(attrs),
        input_shapes_(std::move(input_shapes)),
        input_types_(std::move(input_types)),
        input_values_(std::move(input_values)),
        input_handle_shapes_(input_shapes_.size()),
        output_shapes_(num_outputs) {}

  int num_inputs() const { return static_cast<int>(input_shapes_.size()); }
  int num_outputs() const { return static_cast<int>(output_shapes_.size()); }
  const PartialTensorShape& input(int i) const { return input_shapes_[i]; }
  DataType input_type(int i) const { return input_types_[i]; }
  // The value of input i when it is a constant known at graph-build time, else
  // nullptr.
  const Tensor* input_value(int i) const { return input_values_[i]; }

  // For a resource input (such as a variable handle): the shape of the value it
  // holds, when known.
  const PartialTensorShape& input_handle_shape(int i) const {
    return input_handle_shapes_[i];
  }
  void set_input_handle_shapes(std::vector<PartialTensorShape> shapes) {
    input_handle_shapes_ = std::move(shapes);
  }

  template <typename T>
  absl::Status GetAttr(absl::string_view name, T* out) const {
    return distflow::GetAttr(*attrs_, name, out);
  }

  void set_output(int i, PartialTensorShape shape) {
    output_shapes_[i] = std::move(shape);
  }
  const PartialTensorShape& output(int i) const { return output_shapes_[i]; }
  std::vector<PartialTensorShape> TakeOutputs() {
    return std::move(output_shapes_);
  }

  // INVALID_ARGUMENT unless input i has rank `rank` (or unknown rank).
  absl::Status WithRank(int i, int rank) const;
  // Input i interpreted as a shape: a constant int32/int64 vector gives a known
  // shape; an unknown value of known length gives that many unknown sizes. -1
  // entries mean unknown.
  absl::StatusOr<PartialTensorShape> InputAsShape(int i) const;

 private:
  const AttrMap* attrs_;
  std::vector<PartialTensorShape> input_shapes_;
  std::vector<DataType> input_types_;
  std::vector<const Tensor*> input_values_;
  std::vector<PartialTensorShape> input_handle_shapes_;
  std::vector<PartialTensorShape> output_shapes_;
};

// Shape functions shared by many ops.
namespace shape_fns {
// Every output has unknown shape.
absl::Status Unknown(InferenceContext* c);
// Output 0 has the shape of input 0.
absl::Status UnchangedShape(InferenceContext* c);
// Output 0 is a scalar.
absl::Status Scalar(InferenceContext* c);
// Output 0 has the shape given by attribute "shape".
absl::Status FromShapeAttr(InferenceContext* c);
// No outputs.
absl::Status NoOutputs(InferenceContext* c);
// Output 0 has the broadcast shape of inputs 0 and 1 (numpy rules);
// INVALID_ARGUMENT naming both shapes if they do not broadcast.
absl::Status BroadcastBinary(InferenceContext* c);
}  // namespace shape_fns

// The largest rank a shape function makes up from a value, such as the length
// of a shape vector whose elements are unknown: a graph from anywhere must not
// make one node allocate gigabytes of unknown sizes.
inline constexpr int64_t kMaxInferredRank = 254;

// Known rank `rank`, every size unknown (unknown rank if rank < 0);
// INVALID_ARGUMENT if rank > kMaxInferredRank.
absl::StatusOr<PartialTensorShape> UnknownShapeOfRank(int64_t rank);

// The numpy broadcast of two shapes, or INVALID_ARGUMENT naming both.
absl::StatusOr<PartialTensorShape> BroadcastShapes(const PartialTensorShape& a,
                                                   const PartialTensorShape& b);

}  // namespace distflow

#endif  // DISTFLOW_GRAPH_SHAPE_INFERENCE_H_
