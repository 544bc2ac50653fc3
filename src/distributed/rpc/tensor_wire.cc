#include "distributed/rpc/tensor_wire.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/shared_arena.h"
#include "base/status_macros.h"
#include "base/step_trace.h"
#include "core/gathered_tensor.h"
#include "core/tensor_coding.h"
#include "distributed/rpc/same_host.h"
#include "distributed/rpc/same_host_offer.h"

namespace distflow {
namespace {

// The tensor a slice points into, kept alive until gRPC is done with it.
void ReleaseTensor(void* tensor) { delete static_cast<Tensor*>(tensor); }

// An error about a header that does not describe a tensor, naming the tensor.
absl::Status NamingTensor(const proto::PushTensorHeader& header,
                          const absl::Status& s) {
  return absl::Status(
      s.code(), absl::StrCat("PushTensor '", header.key(), "': ", s.message()));
}

}  // namespace

proto::PushTensorHeader PushHeaderFor(int64_t step_id, const std::string& key,
                                      const Tensor& value) {
  proto::PushTensorHeader header;
  header.set_step_id(step_id);
  header.set_key(key);
  header.set_dtype(DataTypeToProto(value.dtype()));
  ShapeToProto(value.shape(), header.mutable_shape());
  if (DataTypeSize(value.dtype()) != 0) {
    header.set_total_bytes(static_cast<int64_t>(value.TotalBytes()));
  }
  return header;
}

absl::StatusOr<PushedTensorSpec> CheckPushHeader(
    const proto::PushTensorHeader& header, int64_t data_len) {
  absl::StatusOr<DataType> dtype = DataTypeFromProto(header.dtype());
  if (!dtype.ok()) return NamingTensor(header, dtype.status());
  absl::StatusOr<TensorShape> shape = TensorShapeFromProto(header.shape());
  if (!shape.ok()) return NamingTensor(header, shape.status());
  const int64_t total = header.total_bytes();
  if (DataTypeSize(*dtype) == 0) {
    return NamingTensor(header, absl::InvalidArgumentError(absl::StrCat(
                                    "a ", DataTypeName(*dtype),
                                    " tensor must come as a small_tensor")));
  }
  // A shape whose bytes do not fit 64 bits describes no tensor at all; one
  // merely larger than any tensor may be is refused as too large.
  int64_t bytes = 0;
  if (__builtin_mul_overflow(shape->num_elements(),
                             static_cast<int64_t>(DataTypeSize(*dtype)),
                             &bytes)) {
    return NamingTensor(header,
                        absl::InvalidArgumentError(absl::StrCat(
                            "a ", DataTypeName(*dtype), shape->DebugString(),
                            " tensor has more bytes than int64 holds")));
  }
  absl::StatusOr<size_t> size = TensorByteSize(*dtype, *shape);
  if (!size.ok()) return NamingTensor(header, size.status());
  const int64_t want = static_cast<int64_t>(*size);
  if (total != want || header.offset() < 0 || data_len < 0 ||
      header.offset() > total || data_len > total - header.offset()) {
    return absl::InvalidArgumentError(
        absl::StrCat("PushTensor '", header.key(), "': ", data_len,
                     " bytes at offset ", header.offset(), " do not fit a ",
                     DataTypeName(*dtype), shape->DebugString(), " tensor of ",
                     want, " bytes (the header says ", total, ")"));
  }
  return PushedTensorSpec{*dtype, *std::move(shape)};
}

std::string FramedHeader(const google::protobuf::MessageLite& header) {
  const std::string bytes = header.SerializeAsString();
  std::string framed(4, '\0');
  const uint32_t n = static_cast<uint32_t>(bytes.size());
  for (int i = 0; i < 4; ++i)
    framed[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  framed += bytes;
  return framed;
}

grpc::Slice FramedHeaderSlice(const google::protobuf::MessageLite& header) {
  return grpc::Slice(FramedHeader(header));
}

grpc::ByteBuffer ProtoToByteBuffer(
    const google::protobuf::MessageLite& message) {
  grpc::Slice bytes(message.SerializeAsString());
  return grpc::ByteBuffer(&bytes, 1);
}

bool ProtoFromByteBuffer(const grpc::ByteBuffer& buffer,
                         google::protobuf::MessageLite* message) {
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) return false;
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return message->ParseFromString(bytes);
}

void CopyFromSlices(const std::vector<grpc::Slice>& slices, size_t skip,
                    size_t n, char* out) {
  for (const grpc::Slice& s : slices) {
    if (n == 0) return;
    if (skip >= s.size()) {
      skip -= s.size();
      continue;
    }
    const size_t take = std::min(n, s.size() - skip);
    std::memcpy(out, s.begin() + skip, take);
    out += take;
    n -= take;
    skip = 0;
  }
}

absl::StatusOr<FramedMessage> ParseFramedMessage(
    const grpc::ByteBuffer& message, google::protobuf::MessageLite* header,
    const char* method) {
  FramedMessage out;
  if (!message.Dump(&out.slices).ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(method, ": unreadable message"));
  }
  out.size = message.Length();
  unsigned char len_bytes[4];
  if (out.size < 4) {
    return absl::InvalidArgumentError(absl::StrCat(method, ": short message"));
  }
  CopyFromSlices(out.slices, 0, 4, reinterpret_cast<char*>(len_bytes));
  const size_t header_len = len_bytes[0] | (len_bytes[1] << 8) |
                            (len_bytes[2] << 16) |
                            (static_cast<size_t>(len_bytes[3]) << 24);
  if (4 + header_len > out.size) {
    return absl::InvalidArgumentError(
        absl::StrCat(method, ": header overruns message"));
  }
  std::string header_bytes(header_len, '\0');
  CopyFromSlices(out.slices, 4, header_len, header_bytes.data());
  if (!header->ParseFromString(header_bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat(method, ": malformed header"));
  }
  out.data_start = 4 + header_len;
  return out;
}

std::vector<grpc::ByteBuffer> EncodePushTensor(int64_t step_id,
                                               const std::string& key,
                                               const Tensor& value,
                                               int64_t chunk_bytes) {
  proto::PushTensorHeader header = PushHeaderFor(step_id, key, value);
  std::vector<grpc::ByteBuffer> messages;
  if (DataTypeSize(value.dtype()) == 0) {
    TensorToProto(value, header.mutable_small_tensor());
    grpc::Slice slice = FramedHeaderSlice(header);
    messages.emplace_back(&slice, 1);
    return messages;
  }
  const int64_t total = header.total_bytes();
  // Each chunk's slices point into the tensor's buffer (or, for a gathered
  // tensor, into its parts' buffers) and keep the tensor referenced.
  const ByteRanges ranges = TensorByteRanges(value);
  size_t range = 0, into = 0;  // where the next chunk's bytes start
  int64_t offset = 0;
  do {
    const int64_t n = std::min(chunk_bytes, total - offset);
    header.set_offset(offset);
    std::vector<grpc::Slice> slices = {FramedHeaderSlice(header)};
    for (int64_t left = n; left > 0;) {
      const size_t take =
          std::min(static_cast<size_t>(left), ranges[range].size() - into);
      slices.emplace_back(const_cast<char*>(ranges[range].data()) + into, take,
                          &ReleaseTensor, new Tensor(value));
      left -= static_cast<int64_t>(take);
      into += take;
      if (into == ranges[range].size()) {
        ++range;
        into = 0;
      }
    }
    messages.emplace_back(slices.data(), slices.size());
    offset += n;
  } while (offset < total);
  return messages;
}

namespace {

// Copies the runs of `ranges` that lie outside `arena` and are small enough
// to have been allocated from it into one new arena buffer, and points
// `ranges` and `runs` at the copies. Returns the buffer (uninitialized when
// nothing was copied), which the offer must keep alive.
Tensor StageSmallRuns(const SharedArena& arena, ByteRanges& ranges,
                      std::vector<OfferedRange>& runs) {
  size_t small_bytes = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (runs[i].block < 0 && ranges[i].size() < kMinSharedBlockBytes) {
      small_bytes += ranges[i].size();
    }
  }
  if (small_bytes == 0) return Tensor();
  // (A buffer of kMinSharedBlockBytes or more comes from the arena.)
  Tensor staged = Tensor::Uninitialized(
      DataType::kUInt8, TensorShape({static_cast<int64_t>(
                            std::max(small_bytes, kMinSharedBlockBytes))}));
  uint32_t block = 0;
  uint64_t offset = 0;
  char* const base = static_cast<char*>(staged.raw_data());
  if (!arena.Locate(base, staged.TotalBytes(), &block, &offset)) {
    return Tensor();  // the arena is used up: the receiver copies instead
  }
  size_t at = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (runs[i].block >= 0 || ranges[i].size() >= kMinSharedBlockBytes) {
      continue;
    }
    std::memcpy(base + at, ranges[i].data(), ranges[i].size());
    ranges[i] = absl::Span<const char>(base + at, ranges[i].size());
    runs[i].block = block;
    runs[i].arena_offset = offset + at;
    at += ranges[i].size();
  }
  return staged;
}

}  // namespace

SameHostOffer OfferSameHost(int64_t step_id, const std::string& key,
                            const Tensor& value) {
  SameHostOffer offer;
  offer.header = PushHeaderFor(step_id, key, value);
  proto::SameHostTensor* where = offer.header.mutable_same_host();
  where->set_host_id(SameHostIdentity());
  where->set_pid(getpid());
  ByteRanges ranges = TensorByteRanges(value);
  // Runs in this process's arena can be mapped by the receiver; an offer
  // that has some lists every run, each with its block if it has one.
  const SharedArena* arena = SharedArena::Get();
  std::vector<OfferedRange> runs(ranges.size());
  bool mapped = false;
  for (size_t i = 0; i < ranges.size() && arena != nullptr; ++i) {
    uint32_t block = 0;
    if (arena->Locate(ranges[i].data(), ranges[i].size(), &block,
                      &runs[i].arena_offset)) {
      runs[i].block = block;
      mapped = true;
    }
  }
  Tensor staged;
  if (mapped) staged = StageSmallRuns(*arena, ranges, runs);
  offer.keepalive =
      std::make_shared<const std::pair<Tensor, Tensor>>(value, staged);
  if (!mapped && ranges.size() == 1) {
    where->set_address(reinterpret_cast<uint64_t>(ranges[0].data()));
    return offer;
  }
  if (mapped) {
    where->set_arena_token(arena->token());
    where->set_arena_fd(arena->fd());
  }
  for (size_t i = 0; i < ranges.size(); ++i) {
    proto::SameHostRange* r = where->add_ranges();
    r->set_address(reinterpret_cast<uint64_t>(ranges[i].data()));
    r->set_length(ranges[i].size());
    if (runs[i].block >= 0) {
      r->set_arena_block(static_cast<uint32_t>(runs[i].block));
      r->set_arena_offset(runs[i].arena_offset);
    }
  }
  return offer;
}

grpc::ByteBuffer EncodeSameHostPush(const SameHostOffer& offer) {
  grpc::Slice slice = FramedHeaderSlice(offer.header);
  return grpc::ByteBuffer(&slice, 1);
}

PushAssembler::PushAssembler(std::shared_ptr<RecvBufferPool> pool,
                             bool same_host_reads, ThreadPool* read_helpers,
                             PushBudget* budget, absl::Duration partial_timeout)
    : pool_(std::move(pool)),
      same_host_reads_(same_host_reads),
      read_helpers_(read_helpers),
      chunks_([&] {
        ChunkAssembler::Options options;
        options.allocate = [this](DataType dtype, const TensorShape& shape) {
          return NewTensor(dtype, shape);
        };
        options.budget = budget;
        options.timeout = partial_timeout;
        return options;
      }()) {}

absl::StatusOr<PushAssembler::Complete> PushAssembler::Add(
    const grpc::ByteBuffer& message, const std::string& peer) {
  proto::PushTensorHeader header;
  DF_ASSIGN_OR_RETURN(FramedMessage framed,
                      ParseFramedMessage(message, &header, "PushTensor"));
  const std::vector<grpc::Slice>& slices = framed.slices;
  const size_t size = framed.size;
  const size_t header_len = framed.data_start - 4;
  Complete out;
  out.step_id = header.step_id();
  out.key = header.key();
  if (header.has_small_tensor()) {
    absl::StatusOr<Tensor> value = TensorFromProto(header.small_tensor());
    if (!value.ok()) return NamingTensor(header, value.status());
    out.value = *std::move(value);
    return out;
  }
  // (An offer's message is its header alone; AddOffer checks it.)
  if (header.has_same_host()) return AddOffer(header);
  const int64_t data_len = static_cast<int64_t>(size - 4 - header_len);
  DF_ASSIGN_OR_RETURN(PushedTensorSpec spec, CheckPushHeader(header, data_len));
  const DataType dtype = spec.dtype;
  const TensorShape& shape = spec.shape;
  const int64_t total = header.total_bytes();
  if (data_len == total) {
    // The whole tensor in one message: one copy, from gRPC's slices straight
    // into the (aligned) tensor buffer.
    DF_ASSIGN_OR_RETURN(out.value, NewTensor(dtype, shape));
    CopyFromSlices(slices, 4 + header_len, data_len,
                   static_cast<char*>(out.value.raw_data()));
    return out;
  }
  // One chunk of several: copied in place, outside the assembler's lock.
  PushChunk chunk;
  chunk.step_id = header.step_id();
  chunk.key = header.key();
  chunk.dtype = dtype;
  chunk.shape = shape;
  chunk.total_bytes = total;
  chunk.offset = header.offset();
  chunk.length = data_len;
  DF_ASSIGN_OR_RETURN(out.value, chunks_.Add(chunk, peer, [&](char* to) {
    CopyFromSlices(slices, 4 + header_len, static_cast<size_t>(data_len), to);
  }));
  return out;
}

absl::StatusOr<PushAssembler::Complete> PushAssembler::AddOffer(
    const proto::PushTensorHeader& header) {
  DF_ASSIGN_OR_RETURN(PushedTensorSpec spec,
                      CheckPushHeader(header, /*data_len=*/0));
  Complete out;
  out.step_id = header.step_id();
  out.key = header.key();
  DF_RETURN_IF_ERROR(ReadFromSender(header, spec.dtype, spec.shape, &out));
  return out;
}

absl::Status PushAssembler::ReadFromSender(
    const proto::PushTensorHeader& header, DataType dtype,
    const TensorShape& shape, Complete* out) {
  if (!same_host_reads_) {
    out->same_host_refused = "the same-host path is off on the receiving task";
    return absl::OkStatus();
  }
  // (Checked in same_host_offer.h: sums without overflow, each range
  // against the tensor's TensorByteSize; refusals echo no identity or errno.)
  out->same_host_refused = SameHostMismatch(header);
  if (!out->same_host_refused.empty()) return absl::OkStatus();
  DF_ASSIGN_OR_RETURN(SameHostPlan plan,
                      CheckSameHostOffer(header, dtype, shape));
  if (!plan.runs.empty()) {
    const int64_t start_ns = trace::SpanStart();
    absl::StatusOr<Tensor> mapped = MapOfferedTensor(
        plan.pid, plan.arena_fd, plan.arena_token, plan.runs, dtype, shape);
    if (start_ns >= 0) {
      trace::EndSpan(
          "transfer",
          absl::StrCat("same-host map of ", header.total_bytes(), " bytes"),
          start_ns);
    }
    if (mapped.ok()) {
      out->value = *std::move(mapped);
      out->same_host = true;
      return absl::OkStatus();
    }
    if (absl::IsInvalidArgument(mapped.status())) {
      return NamingTensor(header, mapped.status());
    }
    // The arena cannot be mapped here: copy the bytes instead.
  }
  DF_ASSIGN_OR_RETURN(Tensor value, NewTensor(dtype, shape));
  if (value.TotalBytes() != plan.total) {
    return NamingTensor(header, absl::InternalError(absl::StrCat(
                                    "a receive buffer of ", value.TotalBytes(),
                                    " bytes for ", plan.total)));
  }
  const int64_t start_ns = trace::SpanStart();
  absl::Status read =
      ReadProcessMemory(plan.pid, plan.ranges, value.raw_data(), read_helpers_);
  if (start_ns >= 0) {  // (the name is built only when recording)
    trace::EndSpan(
        "transfer",
        absl::StrCat("same-host read of ", header.total_bytes(), " bytes"),
        start_ns);
  }
  if (!read.ok()) {
    if (absl::IsInvalidArgument(read)) return NamingTensor(header, read);
    out->same_host_refused = SameHostReadRefusal(header, read);
    return absl::OkStatus();
  }
  out->value = std::move(value);
  out->same_host = true;
  return absl::OkStatus();
}

absl::StatusOr<Tensor> PushAssembler::NewTensor(DataType dtype,
                                                const TensorShape& shape) {
  if (pool_ != nullptr) return pool_->Allocate(dtype, shape);
  return Tensor::Create(dtype, shape, /*zero=*/false);
}

void PushAssembler::DropStep(int64_t step_id) { chunks_.DropStep(step_id); }

}  // namespace distflow
