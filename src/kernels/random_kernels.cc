// RandomUniform, RandomStandardNormal, TruncatedNormal and DropoutMask.
//
// Every kernel owns a counter-based generator (Philox4x32-10): the numbers of
// block k are a pure function of (key, k), so a step reserves a range of
// blocks under the kernel's mutex and then fills its tensor in parallel, in any
// order, with the same result. The key comes from the seeds (or from the
// system's entropy when both are 0), so equal seeds give equal sequences in
// every process, while each step continues the sequence where the last ended
// (the state lives in the device's resource manager: one per op and session).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "graph/ops/array_util.h"
#include "kernels/kernel_families.h"

namespace distflow {
namespace {

using Block = std::array<uint32_t, 4>;

// Philox4x32 with 10 rounds (Salmon et al., "Parallel random numbers: as easy
// as 1, 2, 3", SC 2011): 4 random words for each 128-bit counter.
Block Philox(uint64_t block, uint64_t stream, uint64_t key) {
  Block c = {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
             static_cast<uint32_t>(stream),
             static_cast<uint32_t>(stream >> 32)};
  uint32_t k0 = static_cast<uint32_t>(key),
           k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{0xD2511F53} * c[0];
    const uint64_t p1 = uint64_t{0xCD9E8D57} * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k0, static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k1,
         static_cast<uint32_t>(p0)};
    k0 += 0x9E3779B9;
    k1 += 0xBB67AE85;
  }
  return c;
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) from 32 random bits (float) or 64 (double).
float UniformFloat(uint32_t u) { return (u >> 8) * (1.0f / 16777216.0f); }
double UniformDouble(uint32_t hi, uint32_t lo) {
  const uint64_t u = (uint64_t{hi} << 32) | lo;
  return (u >> 11) * (1.0 / 9007199254740992.0);
}

// Two standard normals from two uniforms in [0, 1) (Box-Muller).
void BoxMuller(double u1, double u2, double* n0, double* n1) {
  const double r = std::sqrt(-2.0 * std::log(1.0 - u1));  // 1 - u1 in (0, 1]
  const double theta = 6.283185307179586 * u2;            // 2 pi u2
  *n0 = r * std::cos(theta);
  *n1 = r * std::sin(theta);
}

// Normals from one block: 4 for float precision, 2 for double.
template <typename T>
int NormalsOf(const Block& b, double* out) {
  if constexpr (std::is_same_v<T, float>) {
    BoxMuller(UniformFloat(b[0]), UniformFloat(b[1]), &out[0], &out[1]);
    BoxMuller(UniformFloat(b[2]), UniformFloat(b[3]), &out[2], &out[3]);
    return 4;
  } else {
    BoxMuller(UniformDouble(b[0], b[1]), UniformDouble(b[2], b[3]), &out[0],
              &out[1]);
    return 2;
  }
}

// The generator of one random op on one device: its key and the next unused
// counter block. Kept in the device's resource manager under the node's name
// and seeds, so that every executor of a session (one per set of fetches)
// continues the same sequence.
class GeneratorState : public ResourceBase {
 public:
  explicit GeneratorState(uint64_t key) : key_(key) {}
  uint64_t key() const { return key_; }
  // Reserves `blocks` counter blocks; returns the first.
  uint64_t Reserve(uint64_t blocks) {
    absl::MutexLock lock(&mu_);
    const uint64_t first = next_;
    next_ += blocks;
    return first;
  }
  std::string DebugString() const override { return "a random generator"; }

 private:
  const uint64_t key_;
  absl::Mutex mu_;
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 0;
};

enum class Distribution { kUniform, kNormal, kTruncatedNormal, kDropout };

class RandomOp : public OpKernel {
 public:
  RandomOp(OpKernelConstruction* ctx, Distribution dist)
      : OpKernel(ctx), dist_(dist) {
    int64_t seed = 0, seed2 = 0;
    ctx->SetStatus(ctx->GetAttr("seed", &seed));
    ctx->SetStatus(ctx->GetAttr("seed2", &seed2));
    uint64_t key = 0;
    if (seed == 0 && seed2 == 0) {
      std::random_device rd;
      key = (uint64_t{rd()} << 32) | rd();
    } else {
      key = SplitMix64(static_cast<uint64_t>(seed) ^
                       SplitMix64(static_cast<uint64_t>(seed2)));
    }
    auto create = [key] { return std::make_shared<GeneratorState>(key); };
    ResourceMgr* rm =
        ctx->device() == nullptr ? nullptr : ctx->device()->resource_manager();
    if (rm == nullptr) {
      state_ = create();
      return;
    }
    // The seeds are part of the name: another graph on the same device may
    // reuse the node name with other seeds.
    auto state = rm->LookupOrCreate<GeneratorState>(
        "_random_generators",
        absl::StrCat(ctx->node().name(), "/", seed, "/", seed2), create);
    ctx->SetStatus(state.status());
    if (state.ok()) state_ = *state;
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& shape_t = ctx->input(0);
    DF_OP_REQUIRES(ctx, shape_t.dims() == 1,
                   absl::InvalidArgumentError(absl::StrCat(
                       "shape must be a vector, got ", shape_t.TypeString())));
    auto shape = TensorShape::FromDims(IndexValues(shape_t));
    DF_OP_REQUIRES_OK(ctx, shape.status());
    double rate = 0;
    if (dist_ == Distribution::kDropout) {
      const Tensor& r = ctx->input(1);
      DF_OP_REQUIRES(ctx, r.NumElements() == 1,
                     absl::InvalidArgumentError(absl::StrCat(
                         "rate must be a scalar, got ", r.TypeString())));
      rate = r.dtype() == DataType::kFloat ? r.flat<float>()[0]
                                           : r.flat<double>()[0];
      DF_OP_REQUIRES(ctx, rate >= 0 && rate < 1,
                     absl::InvalidArgumentError(absl::StrCat(
                         "dropout rate is ", rate,
                         " but must be in [0, 1) (0 keeps everything)")));
    }
    Tensor* out = ctx->allocate_output(0, output_type(0), *shape);
    if (output_type(0) == DataType::kFloat) {
      Fill<float>(ctx, rate, out->data<float>(), out->NumElements());
    } else {
      Fill<double>(ctx, rate, out->data<double>(), out->NumElements());
    }
  }

 private:
  // Elements that one counter block yields.
  template <typename T>
  int PerBlock() const {
    if (dist_ == Distribution::kTruncatedNormal) return 1;
    if (dist_ == Distribution::kNormal) return std::is_same_v<T, float> ? 4 : 2;
    return std::is_same_v<T, float> ? 4 : 2;  // uniform bits
  }

  template <typename T>
  void Fill(OpKernelContext* ctx, double rate, T* out, int64_t n) {
    const int per = PerBlock<T>();
    const int64_t blocks = (n + per - 1) / per;
    const uint64_t base = state_->Reserve(static_cast<uint64_t>(blocks));
    const uint64_t key = state_->key();
    const T scale = static_cast<T>(1.0 / (1.0 - rate));
    const T threshold = static_cast<T>(rate);
    auto body = [&](int64_t b0, int64_t b1) {
      double normals[4];
      for (int64_t b = b0; b < b1; ++b) {
        T* dst = out + b * per;
        const int count = static_cast<int>(std::min<int64_t>(per, n - b * per));
        if (dist_ == Distribution::kTruncatedNormal) {
          // Redraw from further streams of the same block until a sample
          // lies within 2 stddev (about 95% of draws do).
          for (uint64_t stream = 0;; ++stream) {
            const int got =
                NormalsOf<T>(Philox(base + b, stream, key), normals);
            int k = 0;
            while (k < got && std::abs(normals[k]) > 2.0) ++k;
            if (k < got) {
              dst[0] = static_cast<T>(normals[k]);
              break;
            }
          }
          continue;
        }
        const Block bits = Philox(base + b, 0, key);
        if (dist_ == Distribution::kNormal) {
          NormalsOf<T>(bits, normals);
          for (int k = 0; k < count; ++k) dst[k] = static_cast<T>(normals[k]);
          continue;
        }
        T u[4];
        if constexpr (std::is_same_v<T, float>) {
          for (int k = 0; k < 4; ++k) u[k] = UniformFloat(bits[k]);
        } else {
          u[0] = UniformDouble(bits[0], bits[1]);
          u[1] = UniformDouble(bits[2], bits[3]);
        }
        if (dist_ == Distribution::kDropout) {
          for (int k = 0; k < count; ++k) {
            dst[k] = u[k] >= threshold ? scale : T(0);
          }
        } else {
          for (int k = 0; k < count; ++k) dst[k] = u[k];
        }
      }
    };
    if (n >= 16 * 1024) {
      ctx->intra_op_pool()->ParallelFor(blocks, 200, body);
    } else {
      body(0, blocks);
    }
  }

  const Distribution dist_;
  std::shared_ptr<GeneratorState> state_;
};

template <Distribution kDist>
class RandomOpOf : public RandomOp {
 public:
  explicit RandomOpOf(OpKernelConstruction* ctx) : RandomOp(ctx, kDist) {}
};

}  // namespace

void RegisterRandomKernels(KernelRegistry* r) {
  RegisterCpuKernel<RandomOpOf<Distribution::kUniform>>(r, "RandomUniform");
  RegisterCpuKernel<RandomOpOf<Distribution::kNormal>>(r,
                                                       "RandomStandardNormal");
  RegisterCpuKernel<RandomOpOf<Distribution::kTruncatedNormal>>(
      r, "TruncatedNormal");
  RegisterCpuKernel<RandomOpOf<Distribution::kDropout>>(r, "DropoutMask");
}

}  // namespace distflow
