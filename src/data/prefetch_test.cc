#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "distflow/data.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace data {
namespace {

using ::testing::HasSubstr;

Dataset Numbers(int64_t n) {
  Tensor ids(DataType::kInt64, TensorShape({n}));
  Tensor squares(DataType::kFloat, TensorShape({n, 2}));
  for (int64_t i = 0; i < n; ++i) {
    ids.flat<int64_t>()[i] = i;
    squares.flat<float>()[2 * i] = static_cast<float>(i * i);
    squares.flat<float>()[2 * i + 1] = -static_cast<float>(i);
  }
  return Dataset::FromTensors({ids, squares});
}

// Counts the elements that pass, so tests can see how far the producer ran.
Dataset Counted(const Dataset& ds,
                std::shared_ptr<std::atomic<int64_t>> count) {
  return ds.Map([count](Element e) -> absl::StatusOr<Element> {
    count->fetch_add(1);
    return e;
  });
}

// Polls `done` for up to ten seconds (a bound for a failure only: a loaded
// machine may keep the producer waiting for a core that long).
bool Eventually(const std::function<bool()>& done) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(PrefetchTest, DeliversTheSameSequenceAsWithout) {
  Dataset ds = Numbers(97).Shuffle(50, 3).Repeat(3).Batch(8);
  auto plain = ds.MakeIterator().value();
  // A copy shares the iterator count, so build the twin from scratch to get
  // the same epochs.
  auto prefetched = Numbers(97)
                        .Shuffle(50, 3)
                        .Repeat(3)
                        .Batch(8)
                        .Prefetch(4)
                        .MakeIterator()
                        .value();
  int batches = 0;
  while (true) {
    auto a = plain->GetNext().value();
    auto b = prefetched->GetNext().value();
    ASSERT_EQ(a.has_value(), b.has_value()) << "batch " << batches;
    if (!a) break;
    ASSERT_EQ(a->size(), b->size());
    for (size_t c = 0; c < a->size(); ++c) {
      ASSERT_TRUE((*a)[c].Equals((*b)[c])) << "batch " << batches;
    }
    ++batches;
  }
  EXPECT_EQ(batches, (97 * 3 + 7) / 8);
  EXPECT_FALSE(prefetched->GetNext().value().has_value());
}

TEST(PrefetchTest, FillsABoundedBufferAhead) {
  auto count = std::make_shared<std::atomic<int64_t>>(0);
  auto it = Counted(Numbers(100), count).Prefetch(3).MakeIterator().value();
  ASSERT_TRUE(it->GetNext().value().has_value());
  // One taken and three buffered, without the consumer asking...
  EXPECT_TRUE(Eventually([&] { return count->load() >= 4; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // ...and no more than the buffer (plus the one the producer holds).
  EXPECT_LE(count->load(), 5);
}

TEST(PrefetchTest, StopsCleanlyInMidEpoch) {
  auto count = std::make_shared<std::atomic<int64_t>>(0);
  {
    auto it = Counted(Numbers(10), count)
                  .Repeat()
                  .Batch(4)
                  .Prefetch(2)
                  .MakeIterator()
                  .value();
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(it->GetNext().value().has_value());
  }  // destroyed with an endless input still running
  const int64_t after = count->load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(count->load(), after) << "the producer outlived its iterator";
  EXPECT_LE(after, (3 + 2 + 1) * 4);
  // Destroying one that never delivered anything is fine too.
  auto unused = Numbers(10).Repeat().Prefetch(1).MakeIterator().value();
  unused.reset();
}

TEST(PrefetchTest, PropagatesErrorsAfterTheGoodElements) {
  Dataset ds = Numbers(10)
                   .Map([](Element e) -> absl::StatusOr<Element> {
                     if (e[0].scalar<int64_t>() == 5) {
                       return absl::InvalidArgumentError("cannot decode row");
                     }
                     return e;
                   })
                   .Prefetch(3);
  auto it = ds.MakeIterator().value();
  for (int64_t i = 0; i < 5; ++i) {
    auto e = it->GetNext();
    ASSERT_TRUE(e.ok()) << e.status();
    ASSERT_TRUE(e->has_value());
    EXPECT_EQ((**e)[0].scalar<int64_t>(), i);
  }
  auto error = it->GetNext();
  EXPECT_EQ(error.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(error.status().message(), HasSubstr("cannot decode row"));
  EXPECT_EQ(it->GetNext().status(), error.status());
}

TEST(PrefetchTest, NestedPrefetchesShutDown) {
  auto it = Numbers(1000)
                .Prefetch(2)
                .Repeat()
                .Batch(3)
                .Prefetch(2)
                .MakeIterator()
                .value();
  auto first = it->GetNext().value();
  ASSERT_TRUE(first.has_value());
  EXPECT_THAT(std::vector<int64_t>((*first)[0].flat<int64_t>().begin(),
                                   (*first)[0].flat<int64_t>().end()),
              ::testing::ElementsAre(0, 1, 2));
}

}  // namespace
}  // namespace data
}  // namespace distflow
