// Op constructors for constants, placeholders, shapes and reshaping.
// Each adds a node to the scope's graph and returns its output(s); errors are
// recorded in the scope (see distflow/scope.h).
#ifndef DISTFLOW_OPS_ARRAY_OPS_H_
#define DISTFLOW_OPS_ARRAY_OPS_H_

#include <string>
#include <vector>

#include "distflow/scope.h"
#include "distflow/tensor.h"
#include "distflow/tensor_shape.h"
#include "distflow/types.h"

namespace distflow {
namespace ops {

// A constant holding `value` (a Tensor or a literal such as 3.0f or {{1, 2},
// {3, 4}}).
Output Const(const Scope& scope, const Input& value);
// A value fed at run time. `shape` may be partly unknown ({-1, 784}); the fed
// tensor must match.
Output Placeholder(const Scope& scope, DataType dtype,
                   const PartialTensorShape& shape = PartialTensorShape());
Output Identity(const Scope& scope, const Input& input);
// Does nothing; with control dependencies, groups them into one target.
Operation NoOp(const Scope& scope);
// An op that runs after every op of `ops`: run it to run them all.
Operation Group(const Scope& scope, const std::vector<Operation>& ops);
// The shape of `input` as a vector of `out_type` (int32 or int64).
Output Shape(const Scope& scope, const Input& input,
             DataType out_type = DataType::kInt32);
// `input` with shape `shape` (an int32 or int64 vector; one entry may be -1,
// inferred).
Output Reshape(const Scope& scope, const Input& input, const Input& shape);
// A tensor of shape `dims` (a vector) filled with scalar `value`.
Output Fill(const Scope& scope, const Input& dims, const Input& value);
// Zeros (ones) of the shape and type of `x`.
Output ZerosLike(const Scope& scope, const Input& x);
Output OnesLike(const Scope& scope, const Input& x);
Output Zeros(const Scope& scope, const TensorShape& shape,
             DataType dtype = DataType::kFloat);
Output Ones(const Scope& scope, const TensorShape& shape,
            DataType dtype = DataType::kFloat);

// ---- Rearranging elements and dimensions ----
// Index arguments (perm, axis, begin, ...) are int32 or int64 tensors or
// literals; an axis may be negative (counting from the end) where noted.

// Dimension i of the result is dimension perm[i] of `x` (perm: a vector, a
// permutation of 0..rank-1). Transpose(s, m, {1, 0}) transposes a matrix.
Output Transpose(const Scope& scope, const Input& x, const Input& perm);
// `x` with a dimension of size 1 inserted at `axis` (a scalar in
// [-rank-1, rank]; -1 appends).
Output ExpandDims(const Scope& scope, const Input& x, const Input& axis);
// `x` without the size-1 dimensions listed in `axis` (negative allowed), or
// without every size-1 dimension if `axis` is empty.
Output Squeeze(const Scope& scope, const Input& x,
               const std::vector<int64_t>& axis = {});
// The values joined along `axis` (a scalar, negative allowed); they must agree
// in every other dimension and share one dtype.
Output Concat(const Scope& scope, const std::vector<Input>& values,
              const Input& axis);
// `value` cut into `num_split` equal parts along `axis` (an int32 scalar,
// negative allowed).
std::vector<Output> Split(const Scope& scope, const Input& axis,
                          const Input& value, int64_t num_split);
// The block of `x` starting at `begin` of extent `size` (vectors of rank
// entries; a size of -1 takes the rest of that dimension).
Output Slice(const Scope& scope, const Input& x, const Input& begin,
             const Input& size);
// `x` padded with zeros: `paddings` is [rank, 2], row i holding the number of
// elements added before and after dimension i.
Output Pad(const Scope& scope, const Input& x, const Input& paddings);
// `x` repeated multiples[i] times along dimension i.
Output Tile(const Scope& scope, const Input& x, const Input& multiples);
// The tensors of `values` (one shape and dtype) stacked along a new dimension
// `axis` (in [-rank-1, rank]). The op is "Pack".
Output Stack(const Scope& scope, const std::vector<Input>& values,
             int64_t axis = 0);
// `value` cut along `axis` into `num` tensors of one dimension less; num -1
// takes the size of that dimension from the inferred shape (an error if it is
// unknown). The op is "Unpack".
std::vector<Output> Unstack(const Scope& scope, const Input& value,
                            int64_t num = -1, int64_t axis = 0);
// The number of elements of `x`, a scalar of `out_type` (int32 or int64).
Output Size(const Scope& scope, const Input& x,
            DataType out_type = DataType::kInt32);
// The rank of `x`, an int32 scalar.
Output Rank(const Scope& scope, const Input& x);

// ---- Indexing ----

// Slices of `params` along `axis` picked by `indices` (int32 or int64, any
// shape): the result has shape params.shape[:axis] + indices.shape +
// params.shape[axis+1:]. An index outside [0, params.shape[axis]) fails the
// step with INVALID_ARGUMENT naming the index, its position and the range. The
// gradient with respect to params is sparse (IndexedSlices) for axis 0.
Output Gather(const Scope& scope, const Input& params, const Input& indices,
              int64_t axis = 0);
// output[s, ...] = sum of data[i..., ...] over the positions i of
// `segment_ids` (a prefix of data's shape) holding s; the result has
// num_segments (a scalar) rows. Negative ids are dropped; an id >=
// num_segments fails with INVALID_ARGUMENT. Used to densify sparse gradients.
Output UnsortedSegmentSum(const Scope& scope, const Input& data,
                          const Input& segment_ids, const Input& num_segments);
// For each index of `indices` (int32, int64 or uint8), a vector of `depth`
// (an int32 scalar) elements, on_value at the index and off_value elsewhere
// (all off_value for an index outside [0, depth)), inserted at `axis` (-1:
// last) of the result.
Output OneHot(const Scope& scope, const Input& indices, const Input& depth,
              const Input& on_value, const Input& off_value, int64_t axis = -1);
// The vector [start, start + delta, ...] of the values before `limit`;
// scalars of one type (float32, float64, int32 or int64).
Output Range(const Scope& scope, const Input& start, const Input& limit,
             const Input& delta = 1);

}  // namespace ops
}  // namespace distflow

#endif  // DISTFLOW_OPS_ARRAY_OPS_H_
