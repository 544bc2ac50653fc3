#include "distributed/rpc/tensor_stream.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "core/tensor_coding.h"

namespace distflow {
namespace {

// A piece's slice holds one of these: the tensor stays alive until gRPC is
// done with the bytes.
void ReleaseTensor(void* tensor) { delete static_cast<Tensor*>(tensor); }

// Accumulates pieces into messages of at most `limit` tensor bytes.
class MessageBuilder {
 public:
  MessageBuilder(const proto::RunStepStreamHeader& first, int64_t limit)
      : header_(first), limit_(limit) {}

  // Room left in the current message; starts a new one if it is full.
  int64_t Room() {
    if (bytes_ >= limit_) Flush();
    return limit_ - bytes_;
  }
  proto::TensorPiece* AddPiece(int index, const Tensor& value) {
    proto::TensorPiece* piece = header_.add_piece();
    piece->set_index(index);
    piece->set_dtype(DataTypeToProto(value.dtype()));
    ShapeToProto(value.shape(), piece->mutable_shape());
    return piece;
  }
  void AddBytes(const Tensor& value, int64_t offset, int64_t length) {
    if (length == 0) return;
    data_.emplace_back(static_cast<char*>(value.raw_data()) + offset,
                       static_cast<size_t>(length), &ReleaseTensor,
                       new Tensor(value));
    bytes_ += length;
  }
  void AddSmall(int64_t encoded_bytes) { bytes_ += encoded_bytes; }
  std::vector<grpc::ByteBuffer> Finish() {
    Flush();
    return std::move(messages_);
  }

 private:
  void Flush() {
    if (!messages_.empty() && header_.piece_size() == 0) return;
    std::vector<grpc::Slice> slices;
    slices.reserve(data_.size() + 1);
    slices.push_back(FramedHeaderSlice(header_));
    for (grpc::Slice& s : data_) slices.push_back(std::move(s));
    messages_.emplace_back(slices.data(), slices.size());
    header_.Clear();
    data_.clear();
    bytes_ = 0;
  }

  proto::RunStepStreamHeader header_;
  const int64_t limit_;
  std::vector<grpc::Slice> data_;
  int64_t bytes_ = 0;
  std::vector<grpc::ByteBuffer> messages_;
};

}  // namespace

std::vector<grpc::ByteBuffer> EncodeTensorStream(
    const proto::RunStepStreamHeader& first, const std::vector<Tensor>& tensors,
    int64_t message_bytes) {
  MessageBuilder builder(first, std::max<int64_t>(message_bytes, 1));
  for (int i = 0; i < static_cast<int>(tensors.size()); ++i) {
    const Tensor& value = tensors[i];
    if (DataTypeSize(value.dtype()) == 0) {
      builder.Room();
      proto::TensorPiece* piece = builder.AddPiece(i, value);
      TensorToProto(value, piece->mutable_small_tensor());
      builder.AddSmall(static_cast<int64_t>(piece->ByteSizeLong()));
      continue;
    }
    const int64_t total = static_cast<int64_t>(value.TotalBytes());
    int64_t offset = 0;
    do {
      const int64_t length = std::min(builder.Room(), total - offset);
      proto::TensorPiece* piece = builder.AddPiece(i, value);
      piece->set_offset(offset);
      piece->set_length(length);
      builder.AddBytes(value, offset, length);
      offset += length;
    } while (offset < total);
  }
  return builder.Finish();
}

TensorStreamDecoder::TensorStreamDecoder(std::string kind,
                                         std::vector<std::string> names,
                                         int64_t max_bytes)
    : kind_(std::move(kind)),
      names_(std::move(names)),
      max_bytes_(max_bytes),
      allocator_(RecvBufferPool::Create(/*max_free_bytes=*/0)),
      tensors_(names_.size()),
      ranges_(names_.size()) {}

std::string TensorStreamDecoder::Name(int index) const {
  return absl::StrCat(kind_, " '", names_[index], "'");
}

absl::Status TensorStreamDecoder::Add(const grpc::ByteBuffer& message,
                                      proto::RunStepStreamHeader* header) {
  DF_ASSIGN_OR_RETURN(FramedMessage framed,
                      ParseFramedMessage(message, header, "RunStep stream"));
  return AddPieces(*header, framed);
}

absl::Status TensorStreamDecoder::AddPieces(
    const proto::RunStepStreamHeader& header, const FramedMessage& message) {
  any_message_ = true;
  size_t data = message.data_start;
  for (const proto::TensorPiece& piece : header.piece()) {
    const int i = piece.index();
    if (i < 0 || i >= static_cast<int>(names_.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("RunStep stream: a piece of ", kind_, " ", i,
                       " but the step has only ", names_.size(), " of them"));
    }
    if (piece.has_small_tensor()) {
      auto value = TensorFromProto(piece.small_tensor());
      if (!value.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(Name(i), ": ", value.status().message()));
      }
      tensors_[i] = std::move(*value);
      ranges_[i] = ReceivedRanges();
      continue;
    }
    absl::StatusOr<DataType> dtype = DataTypeFromProto(piece.dtype());
    if (!dtype.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Name(i), ": ", dtype.status().message()));
    }
    absl::StatusOr<TensorShape> shape = TensorShapeFromProto(piece.shape());
    if (!shape.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Name(i), ": ", shape.status().message()));
    }
    absl::StatusOr<size_t> size = TensorByteSize(*dtype, *shape);
    if (!size.ok()) {
      return absl::Status(size.status().code(),
                          absl::StrCat(Name(i), ": ", size.status().message()));
    }
    const int64_t total = static_cast<int64_t>(*size);
    // (Subtractions, not sums: a hostile offset or length cannot wrap them.)
    const bool fits =
        DataTypeSize(*dtype) != 0 && piece.offset() >= 0 &&
        piece.length() >= 0 && piece.offset() <= total &&
        piece.length() <= total - piece.offset() && data <= message.size &&
        static_cast<uint64_t>(piece.length()) <= message.size - data;
    const bool same_tensor =
        !tensors_[i].IsInitialized() ||
        (tensors_[i].dtype() == *dtype && tensors_[i].shape() == *shape);
    if (!fits || !same_tensor) {
      return absl::InvalidArgumentError(absl::StrCat(
          Name(i), ": ", piece.length(), " bytes at offset ", piece.offset(),
          " do not fit a ", DataTypeName(*dtype), shape->DebugString(),
          " tensor", same_tensor ? "" : " (earlier pieces said otherwise)"));
    }
    if (!tensors_[i].IsInitialized()) {
      if (total > max_bytes_ - allocated_bytes_) {
        return absl::ResourceExhaustedError(absl::StrCat(
            Name(i), ": a ", DataTypeName(*dtype), shape->DebugString(),
            " tensor of ", total, " bytes is more than the ",
            max_bytes_ - allocated_bytes_, " bytes left to this stream"));
      }
      auto value = allocator_->Allocate(*dtype, *shape);
      if (!value.ok()) {
        return absl::Status(
            value.status().code(),
            absl::StrCat(Name(i), ": ", value.status().message()));
      }
      allocated_bytes_ += total;
      tensors_[i] = std::move(*value);
      ranges_[i] = ReceivedRanges();
    }
    if (piece.length() == 0) continue;
    if (!ranges_[i].Add(piece.offset(), piece.length())) {
      return absl::InvalidArgumentError(absl::StrCat(
          Name(i), ": ", piece.length(), " bytes at offset ", piece.offset(),
          " repeat bytes that an earlier piece sent"));
    }
    CopyFromSlices(message.slices, data, static_cast<size_t>(piece.length()),
                   static_cast<char*>(tensors_[i].raw_data()) + piece.offset());
    data += piece.length();
  }
  return absl::OkStatus();
}

bool TensorStreamDecoder::TensorComplete(int i) const {
  return tensors_[i].IsInitialized() &&
         (DataTypeSize(tensors_[i].dtype()) == 0 ||
          ranges_[i].bytes() == static_cast<int64_t>(tensors_[i].TotalBytes()));
}

bool TensorStreamDecoder::Complete() const {
  if (!any_message_) return false;
  for (int i = 0; i < static_cast<int>(names_.size()); ++i) {
    if (!TensorComplete(i)) return false;
  }
  return true;
}

absl::StatusOr<std::vector<Tensor>> TensorStreamDecoder::Finish() {
  for (int i = 0; i < static_cast<int>(names_.size()); ++i) {
    if (!TensorComplete(i)) {
      return absl::InvalidArgumentError(
          absl::StrCat("RunStep stream: ", Name(i), " arrived incomplete (",
                       ranges_[i].bytes(), " bytes",
                       tensors_[i].IsInitialized()
                           ? absl::StrCat(" of ", tensors_[i].TotalBytes())
                           : std::string(),
                       ")"));
    }
  }
  return std::move(tensors_);
}

}  // namespace distflow
