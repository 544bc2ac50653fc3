#include "core/safetensors.h"

#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

std::string TestDir() {
  std::string dir = ::testing::TempDir() + "distflow_safetensors_XXXXXX";
  EXPECT_NE(mkdtemp(dir.data()), nullptr);
  return dir;
}

// A file with the given header text and data bytes, written without
// WriteSafetensors, as another tool (or damage) might leave it.
std::string WriteRaw(const std::string& path, const std::string& header,
                     const std::string& data) {
  const uint64_t n = header.size();
  std::string bytes(8, '\0');
  std::memcpy(bytes.data(), &n, 8);
  bytes += header + data;
  EXPECT_TRUE(WriteFileAtomically(path, bytes).ok());
  return path;
}

std::string Bytes(std::initializer_list<float> values) {
  std::string s(values.size() * sizeof(float), '\0');
  std::memcpy(s.data(), values.begin(), s.size());
  return s;
}

class SafetensorsTest : public ::testing::Test {
 protected:
  // Writes two float tensors "a" [2] and "b" [2,2] and returns the path.
  std::string WriteTwo() {
    const std::string path = dir_ + "/two.safetensors";
    EXPECT_TRUE(
        WriteSafetensors(path, {{"a", Tensor::Vector<float>({1, 2})},
                                {"b", Tensor::Matrix<float>({{3, 4}, {5, 6}})}})
            .ok());
    return path;
  }
  std::string Contents(const std::string& path) {
    return *ReadFileToString(path);
  }
  const std::string dir_ = TestDir();
};

TEST_F(SafetensorsTest, RoundTripsEveryDtypeAndShape) {
  const std::string path = dir_ + "/all.safetensors";
  const std::vector<std::pair<std::string, Tensor>> tensors = {
      {"layer1/kernel", Tensor::Matrix<float>({{1.5f, -2}, {3, 4}})},
      {"f64", Tensor::Vector<double>({0.25, 1e300})},
      {"i32", Tensor::Vector<int32_t>({-7, 8, 9})},
      {"global_step", Tensor::Scalar<int64_t>(int64_t{1} << 40)},
      {"u8", Tensor::Vector<uint8_t>({0, 255})},
      {"flags", Tensor::Vector<bool>({true, false, true})},
      {"empty", Tensor(DataType::kFloat, TensorShape({0, 3}))},
  };
  ASSERT_TRUE(WriteSafetensors(path, tensors, {{"note", "kept"}}).ok());
  auto reader = SafetensorsReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->entries().size(), tensors.size());
  EXPECT_EQ((*reader)->metadata().at("note"), "kept");
  EXPECT_EQ((*reader)->metadata().at(kSafetensorsVersionKey), "1");
  for (const auto& [name, tensor] : tensors) {
    auto got = (*reader)->Read(name);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(got->Equals(tensor)) << name << ": " << got->DebugString();
  }
  EXPECT_EQ((*reader)->Find("flags")->dtype, DataType::kBool);
  EXPECT_EQ((*reader)->Find("global_step")->shape, TensorShape({}));
}

TEST_F(SafetensorsTest, LayoutIsTheSafetensorsOne) {
  const std::string bytes = Contents(WriteTwo());
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);  // the data starts aligned
  ASSERT_EQ(bytes.size(), 8 + n + 6 * sizeof(float));
  const std::string header = bytes.substr(8, n);
  EXPECT_THAT(header, HasSubstr(R"("a":{"data_offsets":[0,8],"dtype":"F32",)"
                                R"("shape":[2]})"));
  EXPECT_THAT(header, HasSubstr(R"("data_offsets":[8,24])"));
  // CRC32C of the float bytes of [1, 2].
  EXPECT_THAT(header, HasSubstr(R"("crc32c/a":")"));
  EXPECT_EQ(bytes.substr(8 + n), Bytes({1, 2, 3, 4, 5, 6}));
}

TEST_F(SafetensorsTest, FlippedDataByteIsDataLossNamingTensorAndFile) {
  const std::string path = WriteTwo();
  std::string bytes = Contents(path);
  bytes[bytes.size() - 3] ^= 0x10;  // inside "b"
  ASSERT_TRUE(WriteFileAtomically(path, bytes).ok());
  auto reader = SafetensorsReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_TRUE((*reader)->Read("a").ok());
  auto b = (*reader)->Read("b");
  EXPECT_EQ(b.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(b.status().message(), HasSubstr("tensor 'b'"));
  EXPECT_THAT(b.status().message(), HasSubstr(path));
  EXPECT_THAT(b.status().message(), HasSubstr("CRC32C"));
}

TEST_F(SafetensorsTest, TruncatedFileIsDataLossNamingTheLastTensor) {
  const std::string path = WriteTwo();
  std::string bytes = Contents(path);
  ASSERT_TRUE(
      WriteFileAtomically(path, bytes.substr(0, bytes.size() - 5)).ok());
  auto reader = SafetensorsReader::Open(path);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(reader.status().message(), HasSubstr("tensor 'b'"));
  EXPECT_THAT(reader.status().message(), HasSubstr("truncated"));
  EXPECT_THAT(reader.status().message(), HasSubstr(path));

  // Cut inside the header, and before the header length ends.
  for (size_t keep : {size_t{20}, size_t{5}, size_t{0}}) {
    ASSERT_TRUE(WriteFileAtomically(path, bytes.substr(0, keep)).ok());
    reader = SafetensorsReader::Open(path);
    EXPECT_EQ(reader.status().code(), absl::StatusCode::kDataLoss) << keep;
    EXPECT_THAT(reader.status().message(), HasSubstr("truncated")) << keep;
  }
}

TEST_F(SafetensorsTest, BadHeadersAreDataLossSayingWhatIsWrong) {
  const std::string data = Bytes({1, 2});
  const std::string path = dir_ + "/bad.safetensors";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"a": {"dtype": "F32", "shape": [2], )", "not JSON"},
      {R"([1, 2])", "not a JSON object"},
      {R"({"a": {"dtype": "F16", "shape": [2], "data_offsets": [0, 8]}})",
       "dtype \"F16\""},
      {R"({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})",
       "tensor 'a' has shape [-2]"},
      {R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})",
       "tensor 'a' of shape [3] holds 8 bytes, not 12"},
      {R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})",
       "data_offsets [8,0]"},
      {R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
       R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
       "starts at data byte 0 but the previous tensor 'a' ends at 4"},
      {R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
       "4 bytes after its last tensor"},
      {R"({"__metadata__": {"distflow_format_version": "1"},)"
       R"( "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})",
       "tensor 'a' has no CRC32C"},
      {R"({"__metadata__": {"crc32c/a": "xyz"},)"
       R"( "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})",
       "not 8 hex digits"},
      {R"({"__metadata__": {"n": 1},)"
       R"( "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})",
       "entry 'n' is not a string"},
  };
  for (const auto& [header, reason] : cases) {
    WriteRaw(path, header, data);
    auto reader = SafetensorsReader::Open(path);
    EXPECT_EQ(reader.status().code(), absl::StatusCode::kDataLoss) << header;
    EXPECT_THAT(reader.status().message(), HasSubstr(reason)) << header;
    EXPECT_THAT(reader.status().message(), HasSubstr(path)) << header;
  }

  // A header length larger than the file.
  std::string bytes(8, '\xff');
  ASSERT_TRUE(WriteFileAtomically(path, bytes + "{}").ok());
  auto reader = SafetensorsReader::Open(path);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(reader.status().message(), HasSubstr("header length"));
}

TEST_F(SafetensorsTest, FilesFromOtherToolsReadWithoutCrcs) {
  // As numpy or PyTorch's safetensors package would write it: no CRCs, a
  // "format" entry distflow ignores.
  const std::string path = WriteRaw(
      dir_ + "/torch.safetensors",
      R"({"__metadata__": {"format": "pt"},)"
      R"( "w": {"dtype": "F32", "shape": [1, 2], "data_offsets": [0, 8]}})",
      Bytes({7, 8}));
  auto reader = SafetensorsReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto w = (*reader)->Read("w");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE(w->Equals(Tensor::Matrix<float>({{7, 8}})));
}

TEST_F(SafetensorsTest, NewerFormatVersionIsRefusedNamingBoth) {
  const std::string path =
      WriteRaw(dir_ + "/future.safetensors",
               R"({"__metadata__": {"distflow_format_version": "2"}})", "");
  auto reader = SafetensorsReader::Open(path);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(reader.status().message(), HasSubstr("version 2"));
  EXPECT_THAT(reader.status().message(), HasSubstr("up to version 1"));
}

TEST_F(SafetensorsTest, MissingFileAndTensorAreNotFound) {
  auto reader = SafetensorsReader::Open(dir_ + "/absent.safetensors");
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kNotFound);
  reader = SafetensorsReader::Open(WriteTwo());
  ASSERT_TRUE(reader.ok());
  auto c = (*reader)->Read("c");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(c.status().message(), HasSubstr("no tensor 'c'"));
}

TEST_F(SafetensorsTest, WriterRefusesWhatTheFormatCannotHold) {
  const std::string path = dir_ + "/refused.safetensors";
  absl::Status s =
      WriteSafetensors(path, {{"names", Tensor::Vector<std::string>({"x"})}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("tensor 'names'"));
  EXPECT_THAT(s.message(), HasSubstr("string"));
  s = WriteSafetensors(
      path, {{"a", Tensor::Scalar<float>(1)}, {"a", Tensor::Scalar<float>(2)}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("unique"));
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::is_empty(dir_));  // no temporary file left
}

}  // namespace
}  // namespace distflow
