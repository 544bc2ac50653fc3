#include "distributed/rpc/chunk_assembler.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/logging.h"

namespace distflow {
namespace {

std::string Describe(const PushChunk& chunk, const std::string& peer) {
  return absl::StrCat("PushTensor '", chunk.key, "' of step ", chunk.step_id,
                      " from peer ", peer.empty() ? "(unknown)" : peer);
}

absl::Status Invalid(const PushChunk& chunk, const std::string& peer,
                     absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(Describe(chunk, peer), ": ", why));
}

}  // namespace

bool ReceivedRanges::Add(int64_t offset, int64_t length) {
  const int64_t end = offset + length;  // callers keep it within a tensor
  auto next = ranges_.upper_bound(offset);
  if (next != ranges_.end() && next->first < end) return false;
  auto prev = next == ranges_.begin() ? ranges_.end() : std::prev(next);
  if (prev != ranges_.end() && prev->second > offset) return false;
  int64_t begin = offset, stop = end;
  if (prev != ranges_.end() && prev->second == offset) {
    begin = prev->first;
    ranges_.erase(prev);
  }
  if (next != ranges_.end() && next->first == end) {
    stop = next->second;
    ranges_.erase(next);
  }
  ranges_[begin] = stop;
  bytes_ += length;
  return true;
}

ChunkAssembler::ChunkAssembler(Options options)
    : options_(std::move(options)) {}

ChunkAssembler::~ChunkAssembler() {
  absl::MutexLock lock(&mu_);
  while (!partial_.empty()) EraseLocked(partial_.begin());
}

absl::StatusOr<Tensor> ChunkAssembler::Add(
    const PushChunk& chunk, const std::string& peer,
    absl::FunctionRef<void(char*)> copy) {
  absl::StatusOr<size_t> size = TensorByteSize(chunk.dtype, chunk.shape);
  if (!size.ok()) {
    return absl::Status(
        size.status().code(),
        absl::StrCat(Describe(chunk, peer), ": ", size.status().message()));
  }
  const int64_t total = static_cast<int64_t>(*size);
  if (DataTypeSize(chunk.dtype) == 0 || chunk.total_bytes != total ||
      chunk.length <= 0 || chunk.offset < 0 || chunk.offset > total ||
      chunk.length > total - chunk.offset) {
    return Invalid(chunk, peer,
                   absl::StrCat(chunk.length, " bytes at offset ", chunk.offset,
                                " do not fit a ", DataTypeName(chunk.dtype),
                                chunk.shape.DebugString(), " tensor of ",
                                chunk.total_bytes, " bytes"));
  }
  const auto now =
      options_.clock ? options_.clock() : std::chrono::steady_clock::now();
  Key key(chunk.step_id, chunk.key, peer);
  Tensor target;
  uint64_t id = 0;
  {
    absl::MutexLock lock(&mu_);
    if (now >= next_sweep_) ExpireLocked(now);
    auto it = partial_.find(key);
    if (it == partial_.end()) {
      Partial partial;
      partial.charged = total + kPartialOverheadBytes;
      if (options_.budget != nullptr) {
        absl::Status s = options_.budget->Reserve(
            peer, partial.charged,
            absl::StrCat("part of '", chunk.key, "' of step ", chunk.step_id));
        if (!s.ok()) return s;
      }
      absl::StatusOr<Tensor> value =
          options_.allocate ? options_.allocate(chunk.dtype, chunk.shape)
                            : Tensor::Create(chunk.dtype, chunk.shape,
                                             /*zero=*/false);
      if (!value.ok()) {
        if (options_.budget != nullptr) {
          options_.budget->Release(peer, partial.charged);
        }
        return absl::Status(value.status().code(),
                            absl::StrCat(Describe(chunk, peer), ": ",
                                         value.status().message()));
      }
      partial.id = next_id_++;
      partial.value = *std::move(value);
      partial.dtype = chunk.dtype;
      partial.shape = chunk.shape;
      partial.total = total;
      partial.started = now;
      it = partial_.emplace(std::move(key), std::move(partial)).first;
    }
    Partial& partial = it->second;
    if (partial.dtype != chunk.dtype || !(partial.shape == chunk.shape)) {
      return Invalid(
          chunk, peer,
          absl::StrCat("a piece says the tensor is ", DataTypeName(chunk.dtype),
                       chunk.shape.DebugString(), " but its first said ",
                       DataTypeName(partial.dtype),
                       partial.shape.DebugString()));
    }
    if (!partial.ranges.Add(chunk.offset, chunk.length)) {
      return Invalid(
          chunk, peer,
          absl::StrCat(chunk.length, " bytes at offset ", chunk.offset,
                       " repeat bytes that an earlier piece sent"));
    }
    target = partial.value;
    id = partial.id;
  }
  copy(static_cast<char*>(target.raw_data()) + chunk.offset);
  absl::MutexLock lock(&mu_);
  auto it = partial_.find(Key(chunk.step_id, chunk.key, peer));
  if (it == partial_.end() || it->second.id != id) {
    return Tensor();  // dropped meanwhile (its step was aborted, or it expired)
  }
  it->second.copied += chunk.length;
  if (it->second.copied < it->second.total) return Tensor();
  Tensor whole = std::move(it->second.value);
  EraseLocked(it);
  return whole;
}

void ChunkAssembler::EraseLocked(
    absl::flat_hash_map<Key, Partial>::iterator it) {
  if (options_.budget != nullptr) {
    options_.budget->Release(std::get<2>(it->first), it->second.charged);
  }
  partial_.erase(it);
}

void ChunkAssembler::DropStep(int64_t step_id) {
  absl::MutexLock lock(&mu_);
  for (auto it = partial_.begin(); it != partial_.end();) {
    auto here = it++;
    if (std::get<0>(here->first) == step_id) EraseLocked(here);
  }
}

void ChunkAssembler::ExpireOld() {
  const auto now =
      options_.clock ? options_.clock() : std::chrono::steady_clock::now();
  absl::MutexLock lock(&mu_);
  ExpireLocked(now);
}

void ChunkAssembler::ExpireLocked(std::chrono::steady_clock::time_point now) {
  const auto timeout = absl::ToChronoNanoseconds(options_.timeout);
  next_sweep_ = now + std::clamp<std::chrono::nanoseconds>(
                          timeout / 4, std::chrono::milliseconds(10),
                          std::chrono::seconds(1));
  for (auto it = partial_.begin(); it != partial_.end();) {
    auto here = it++;
    const Partial& partial = here->second;
    if (now - partial.started < timeout) continue;
    DF_LOG(Warning) << "dropped the partial tensor '"
                    << std::get<1>(here->first) << "' of step "
                    << std::get<0>(here->first) << " from peer "
                    << std::get<2>(here->first) << ": " << partial.copied
                    << " of its " << partial.total << " bytes came in "
                    << absl::FormatDuration(options_.timeout)
                    << " and the rest never did";
    EraseLocked(here);
  }
}

int ChunkAssembler::NumPartial() {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(partial_.size());
}

}  // namespace distflow
