#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <iostream>
#include <string>
#include <vector>

#include "data/data_test_util.h"
#include "distflow/data.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace data {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

bool HaveRealData() {
  struct stat info;
  const std::string probe =
      std::string(kDefaultFashionMnistDir) + "/t10k-labels-idx1-ubyte.gz";
  return stat(probe.c_str(), &info) == 0;
}

// The whole inflated file, read with zlib directly: a reference that does not
// go through the reader under test.
std::string Inflate(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  EXPECT_NE(file, nullptr) << path;
  std::string out;
  char buffer[1 << 16];
  int got;
  while ((got = gzread(file, buffer, sizeof(buffer))) > 0) {
    out.append(buffer, got);
  }
  gzclose(file);
  return out;
}

void CheckSplit(Split split, int64_t n, const std::string& prefix) {
  if (!HaveRealData()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  absl::StatusOr<LabeledImages> data = LoadFashionMnist(split);
  const double cpu_seconds =
      static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_TRUE(data.ok()) << data.status();
  std::cout << "loaded " << n << " examples in " << seconds << " s ("
            << cpu_seconds << " s of CPU)\n";

  ASSERT_EQ(data->images.dtype(), DataType::kFloat);
  ASSERT_EQ(data->images.shape(), TensorShape({n, 784}));
  ASSERT_EQ(data->labels.dtype(), DataType::kInt32);
  ASSERT_EQ(data->labels.shape(), TensorShape({n}));

  // Fashion-MNIST is balanced: every class exactly n / 10 times.
  std::array<int64_t, 10> per_class{};
  for (int32_t label : data->labels.flat<int32_t>()) {
    ASSERT_GE(label, 0);
    ASSERT_LE(label, 9);
    ++per_class[label];
  }
  for (int c = 0; c < 10; ++c) EXPECT_EQ(per_class[c], n / 10) << "class " << c;

  float lo = 1, hi = 0;
  for (float p : data->images.flat<float>()) {
    lo = std::min(lo, p);
    hi = std::max(hi, p);
  }
  EXPECT_EQ(lo, 0.0f);
  EXPECT_EQ(hi, 1.0f);

  // Against the raw bytes: the first and the last image, and some labels.
  const std::string dir = kDefaultFashionMnistDir;
  const std::string images =
      Inflate(dir + "/" + prefix + "-images-idx3-ubyte.gz");
  const std::string labels =
      Inflate(dir + "/" + prefix + "-labels-idx1-ubyte.gz");
  ASSERT_EQ(images.size(), 16 + static_cast<size_t>(n) * 784);
  ASSERT_EQ(labels.size(), 8 + static_cast<size_t>(n));
  const float* pixels = data->images.data<float>();
  for (int64_t i : {int64_t{0}, n - 1}) {
    for (int j = 0; j < 784; ++j) {
      const uint8_t raw = static_cast<uint8_t>(images[16 + i * 784 + j]);
      ASSERT_FLOAT_EQ(pixels[i * 784 + j], raw / 255.0f) << i << "," << j;
    }
  }
  for (int64_t i = 0; i < n; i += 997) {
    EXPECT_EQ(data->labels.flat<int32_t>()[i],
              static_cast<uint8_t>(labels[8 + i]));
  }
}

TEST(FashionMnistTest, LoadsTrainSplit) {
  CheckSplit(Split::kTrain, 60000, "train");
}
TEST(FashionMnistTest, LoadsTestSplit) {
  CheckSplit(Split::kTest, 10000, "t10k");
}

// A fake dataset directory whose test split has the given files.
class FakeFashionMnistTest : public ::testing::Test {
 protected:
  void WriteImages(const std::vector<uint32_t>& dims) {
    size_t n = 1;
    for (uint32_t d : dims) n *= d;
    std::vector<uint8_t> pixels(n);
    for (size_t i = 0; i < n; ++i) pixels[i] = static_cast<uint8_t>(i);
    test::WriteGzipFile(images_, test::IdxFile(dims, pixels));
  }
  void WriteLabels(const std::vector<uint8_t>& labels) {
    test::WriteGzipFile(
        labels_, test::IdxFile({static_cast<uint32_t>(labels.size())}, labels));
  }
  std::string dir_ = test::MakeTempDir();
  std::string images_ = dir_ + "/t10k-images-idx3-ubyte.gz";
  std::string labels_ = dir_ + "/t10k-labels-idx1-ubyte.gz";
};

TEST_F(FakeFashionMnistTest, ScalesPixelsAndWidensLabels) {
  WriteImages({2, 28, 28});
  WriteLabels({9, 0});
  absl::StatusOr<LabeledImages> data = LoadFashionMnist(dir_, Split::kTest);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->images.shape(), TensorShape({2, 784}));
  EXPECT_FLOAT_EQ(data->images.flat<float>()[255], 1.0f);
  EXPECT_FLOAT_EQ(data->images.flat<float>()[784 + 3],
                  ((784 + 3) % 256) / 255.0f);
  EXPECT_EQ(data->labels.flat<int32_t>()[0], 9);
}

TEST_F(FakeFashionMnistTest, WrongImageRankNamesFile) {
  WriteImages({2, 784});
  WriteLabels({1, 2});
  absl::StatusOr<LabeledImages> data = LoadFashionMnist(dir_, Split::kTest);
  EXPECT_THAT(data.status().message(),
              AllOf(HasSubstr(images_), HasSubstr("[2,784]"),
                    HasSubstr("expected [n,28,28]")));
}

TEST_F(FakeFashionMnistTest, CountMismatchNamesBothFiles) {
  WriteImages({3, 28, 28});
  WriteLabels({1, 2});
  absl::StatusOr<LabeledImages> data = LoadFashionMnist(dir_, Split::kTest);
  EXPECT_THAT(data.status().message(),
              AllOf(HasSubstr(labels_), HasSubstr(images_),
                    HasSubstr("2 labels"), HasSubstr("3 images")));
}

TEST_F(FakeFashionMnistTest, LabelOutOfRangeNamesFileAndIndex) {
  WriteImages({3, 28, 28});
  WriteLabels({1, 10, 2});
  absl::StatusOr<LabeledImages> data = LoadFashionMnist(dir_, Split::kTest);
  EXPECT_THAT(
      data.status().message(),
      AllOf(HasSubstr(labels_), HasSubstr("label 1 is 10"), HasSubstr("0..9")));
}

TEST_F(FakeFashionMnistTest, MissingFileIsNotFound) {
  WriteImages({1, 28, 28});
  absl::StatusOr<LabeledImages> data = LoadFashionMnist(dir_, Split::kTest);
  EXPECT_EQ(data.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(data.status().message(), HasSubstr(labels_));
  // The train split's files are not there at all.
  data = LoadFashionMnist(dir_, Split::kTrain);
  EXPECT_THAT(data.status().message(),
              HasSubstr(dir_ + "/train-images-idx3-ubyte.gz"));
}

}  // namespace
}  // namespace data
}  // namespace distflow
