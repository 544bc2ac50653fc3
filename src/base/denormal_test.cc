#include "base/denormal.h"

#include <cfloat>
#include <future>

#include "base/thread_pool.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

// FLT_MIN times 1/4: a denormal result, computed at run time.
float DenormalProduct() {
  volatile float a = FLT_MIN;
  volatile float b = 0.25f;
  return a * b;
}

#if defined(__SSE__) || defined(__aarch64__)

TEST(DenormalTest, ScopeFlushesThenRestores) {
  ASSERT_FALSE(ThisThreadFlushesDenormals());
  EXPECT_GT(DenormalProduct(), 0.0f);
  {
    ScopedFlushDenormal flush;
    EXPECT_TRUE(ThisThreadFlushesDenormals());
    EXPECT_EQ(DenormalProduct(), 0.0f);
    {
      ScopedFlushDenormal nested;
      EXPECT_EQ(DenormalProduct(), 0.0f);
    }
    // The inner scope found flushing on and leaves it on.
    EXPECT_EQ(DenormalProduct(), 0.0f);
  }
  EXPECT_FALSE(ThisThreadFlushesDenormals());
  EXPECT_GT(DenormalProduct(), 0.0f);
}

TEST(DenormalTest, PoolThreadsFlush) {
  ThreadPool pool("test", 2);
  std::promise<float> product;
  pool.Schedule([&product] { product.set_value(DenormalProduct()); });
  EXPECT_EQ(product.get_future().get(), 0.0f);
  // The caller's thread is left as it was.
  EXPECT_GT(DenormalProduct(), 0.0f);
}

#endif

}  // namespace
}  // namespace distflow
