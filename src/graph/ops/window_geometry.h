// The geometry of sliding windows (convolution and pooling) over NHWC images,
// shared by the shape functions and the kernels so that both agree on output
// sizes and padding.
#ifndef DISTFLOW_GRAPH_OPS_WINDOW_GEOMETRY_H_
#define DISTFLOW_GRAPH_OPS_WINDOW_GEOMETRY_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace distflow {

enum class Padding { kSame, kValid };

inline absl::StatusOr<Padding> ParsePadding(const std::string& padding) {
  if (padding == "SAME") return Padding::kSame;
  if (padding == "VALID") return Padding::kValid;
  return absl::InvalidArgumentError(absl::StrCat(
      "padding must be \"SAME\" or \"VALID\", got \"", padding, "\""));
}

// One spatial dimension of a window: the output size and the padding added
// before and after the input.
struct WindowDim {
  int64_t out = 0;
  int64_t pad_before = 0;
  int64_t pad_after = 0;
};

// TensorFlow's rule: VALID keeps windows inside the input; SAME gives
// ceil(in / stride) outputs and pads by max((out - 1) * stride + k - in, 0),
// the odd element after the input.
inline absl::StatusOr<WindowDim> ComputeWindowDim(int64_t in, int64_t k,
                                                  int64_t stride,
                                                  int64_t dilation,
                                                  Padding padding) {
  // The sizes come from shapes and attributes of a graph from anywhere: check
  // them before any arithmetic that could overflow.
  int64_t effective_k = 0;
  if (in < 0 || k < 1 || stride < 1 || dilation < 1 ||
      __builtin_mul_overflow(k - 1, dilation, &effective_k) ||
      __builtin_add_overflow(effective_k, 1, &effective_k)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "window of size ", k, " with stride ", stride, " and dilation ",
        dilation, " over input size ", in,
        " is not valid (sizes, strides and dilations are >= 1 and the dilated "
        "window must fit in int64)"));
  }
  WindowDim d;
  if (padding == Padding::kValid) {
    if (in < effective_k) {
      return absl::InvalidArgumentError(absl::StrCat(
          "VALID window of size ", effective_k, " does not fit in input size ",
          in, "; use SAME padding or a smaller window"));
    }
    d.out = (in - effective_k) / stride + 1;
    return d;
  }
  d.out = in / stride + (in % stride != 0 ? 1 : 0);
  // The last window starts `last` elements in; in - last is in [1, stride]
  // (stride for an empty input), so nothing here overflows.
  const int64_t last = (d.out - 1) * stride;
  const int64_t pad_total = std::max<int64_t>(effective_k - (in - last), 0);
  d.pad_before = pad_total / 2;
  d.pad_after = pad_total - d.pad_before;
  return d;
}

// The spatial parameters of a 2-D window op, read from its attributes.
struct Window2D {
  int64_t kh = 1, kw = 1;  // window (pooling) or filter (convolution) size
  int64_t sh = 1, sw = 1;  // strides
  int64_t dh = 1, dw = 1;  // dilations
  Padding padding = Padding::kValid;
};

// Checks a [1, a, b, 1] attribute (strides, ksize, dilations) and returns a, b.
inline absl::Status GetSpatialPair(const std::string& name,
                                   const std::vector<int64_t>& v, int64_t* a,
                                   int64_t* b) {
  if (v.size() != 4 || v[0] != 1 || v[3] != 1 || v[1] < 1 || v[2] < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        name,
        " must be [1, h, w, 1] with h, w >= 1 (NHWC; no batch or channel "
        "steps), got [",
        absl::StrJoin(v, ", "), "]"));
  }
  *a = v[1];
  *b = v[2];
  return absl::OkStatus();
}

// The output height and width (and paddings) of a window over an h x w input.
struct WindowOutput {
  WindowDim rows, cols;
};
inline absl::StatusOr<WindowOutput> ComputeWindowOutput(const Window2D& w,
                                                        int64_t h,
                                                        int64_t width) {
  WindowOutput o;
  auto rows = ComputeWindowDim(h, w.kh, w.sh, w.dh, w.padding);
  if (!rows.ok()) return rows.status();
  auto cols = ComputeWindowDim(width, w.kw, w.sw, w.dw, w.padding);
  if (!cols.ok()) return cols.status();
  o.rows = *rows;
  o.cols = *cols;
  return o;
}

}  // namespace distflow

#endif  // DISTFLOW_GRAPH_OPS_WINDOW_GEOMETRY_H_
