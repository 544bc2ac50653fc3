// Fashion-MNIST: IDX images and labels turned into training-ready tensors.
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "distflow/data.h"

namespace distflow {
namespace data {
namespace {

constexpr int64_t kRows = 28;
constexpr int64_t kCols = 28;
constexpr int kNumClasses = 10;

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') return dir + name;
  return absl::StrCat(dir, "/", name);
}

}  // namespace

absl::StatusOr<LabeledImages> LoadFashionMnist(const std::string& dir,
                                               Split split) {
  const std::string prefix = split == Split::kTrain ? "train" : "t10k";
  const std::string images_path =
      JoinPath(dir, prefix + "-images-idx3-ubyte.gz");
  const std::string labels_path =
      JoinPath(dir, prefix + "-labels-idx1-ubyte.gz");

  DF_ASSIGN_OR_RETURN(Tensor raw_images, ReadIdxFile(images_path));
  if (raw_images.dims() != 3 || raw_images.dim_size(1) != kRows ||
      raw_images.dim_size(2) != kCols) {
    return absl::DataLossError(absl::StrCat(images_path, ": images have shape ",
                                            raw_images.shape().DebugString(),
                                            "; expected [n,28,28]"));
  }
  DF_ASSIGN_OR_RETURN(Tensor raw_labels, ReadIdxFile(labels_path));
  if (raw_labels.dims() != 1) {
    return absl::DataLossError(absl::StrCat(labels_path, ": labels have shape ",
                                            raw_labels.shape().DebugString(),
                                            "; expected [n]"));
  }
  const int64_t n = raw_images.dim_size(0);
  if (raw_labels.dim_size(0) != n) {
    return absl::DataLossError(absl::StrCat(
        labels_path, ": holds ", raw_labels.dim_size(0), " labels but ",
        images_path, " holds ", n, " images; expected one label per image"));
  }

  LabeledImages out;
  out.labels = Tensor::Uninitialized(DataType::kInt32, TensorShape({n}));
  const uint8_t* label_in = raw_labels.data<uint8_t>();
  int32_t* label_out = out.labels.data<int32_t>();
  for (int64_t i = 0; i < n; ++i) {
    if (label_in[i] >= kNumClasses) {
      return absl::DataLossError(absl::StrCat(
          labels_path, ": label ", i, " is ", static_cast<int>(label_in[i]),
          "; expected a class in 0..", kNumClasses - 1));
    }
    label_out[i] = label_in[i];
  }

  out.images =
      Tensor::Uninitialized(DataType::kFloat, TensorShape({n, kRows * kCols}));
  const uint8_t* pixel_in = raw_images.data<uint8_t>();
  float* pixel_out = out.images.data<float>();
  const int64_t count = out.images.NumElements();
  // Division (not multiplication by 1/255) maps 255 to exactly 1.0f.
  for (int64_t i = 0; i < count; ++i) {
    pixel_out[i] = static_cast<float>(pixel_in[i]) / 255.0f;
  }
  return out;
}

}  // namespace data
}  // namespace distflow
