#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "distflow/data.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace data {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ids: int64 [n] holding 0..n-1; features: float [n, 3] with row i = i*10 + j.
std::vector<Tensor> Source(int64_t n) {
  Tensor ids(DataType::kInt64, TensorShape({n}));
  Tensor features(DataType::kFloat, TensorShape({n, 3}));
  for (int64_t i = 0; i < n; ++i) {
    ids.flat<int64_t>()[i] = i;
    for (int j = 0; j < 3; ++j) features.flat<float>()[i * 3 + j] = i * 10 + j;
  }
  return {ids, features};
}

std::vector<Element> Collect(const Dataset& ds) {
  std::vector<Element> out;
  auto it = ds.MakeIterator();
  EXPECT_TRUE(it.ok()) << it.status();
  if (!it.ok()) return out;
  while (true) {
    auto next = (*it)->GetNext();
    EXPECT_TRUE(next.ok()) << next.status();
    if (!next.ok() || !next->has_value()) break;
    out.push_back(**next);
  }
  return out;
}

// The ids (component 0) of every element or batch, flattened.
std::vector<int64_t> Ids(const std::vector<Element>& elements) {
  std::vector<int64_t> ids;
  for (const Element& e : elements) {
    for (int64_t id : e[0].flat<int64_t>()) ids.push_back(id);
  }
  return ids;
}
std::vector<int64_t> Ids(const Dataset& ds) { return Ids(Collect(ds)); }

std::vector<int64_t> Range(int64_t n) {
  std::vector<int64_t> r(n);
  for (int64_t i = 0; i < n; ++i) r[i] = i;
  return r;
}

// The identity as a Map: forces element mode on everything downstream.
Dataset ElementMode(const Dataset& ds) {
  return ds.Map([](Element e) -> absl::StatusOr<Element> { return e; });
}

TEST(DatasetTest, FromTensorsYieldsRowsInOrder) {
  std::vector<Element> elements = Collect(Dataset::FromTensors(Source(4)));
  ASSERT_EQ(elements.size(), 4u);
  EXPECT_TRUE(elements[2][0].Equals(Tensor::Scalar<int64_t>(2)));
  EXPECT_TRUE(elements[2][1].Equals(Tensor::Vector<float>({20, 21, 22})));

  auto it = Dataset::FromTensors(Source(1)).MakeIterator().value();
  EXPECT_TRUE(it->GetNext().value().has_value());
  EXPECT_FALSE(it->GetNext().value().has_value());
  EXPECT_FALSE(it->GetNext().value().has_value());  // the end stays the end
}

TEST(DatasetTest, FromTensorsChecksComponents) {
  Dataset ragged = Dataset::FromTensors(
      {Tensor::Vector<int32_t>({1, 2, 3}), Tensor::Matrix<float>({{1, 2}})});
  EXPECT_EQ(ragged.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ragged.status().message(),
              HasSubstr("component 1 has 1 rows (float32[1,2]) but component 0 "
                        "has 3 (int32[3])"));
  EXPECT_THAT(
      Dataset::FromTensors({Tensor::Scalar<float>(1)}).status().message(),
      HasSubstr("component 0 is a scalar"));
  EXPECT_FALSE(Dataset::FromTensors({}).status().ok());
  EXPECT_FALSE(Dataset().status().ok());
}

TEST(DatasetTest, BatchKeepsOrDropsTheRemainder) {
  Dataset ds = Dataset::FromTensors(Source(10));
  std::vector<Element> batches = Collect(ds.Batch(4));
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0][1].shape(), TensorShape({4, 3}));
  EXPECT_EQ(batches[2][0].shape(), TensorShape({2}));
  EXPECT_EQ(batches[2][1].shape(), TensorShape({2, 3}));
  EXPECT_EQ(Ids(batches), Range(10));
  EXPECT_TRUE(
      batches[1][1].Slice(1, 2).Equals(Tensor::Matrix<float>({{50, 51, 52}})));

  std::vector<Element> dropped = Collect(ds.Batch(4, /*drop_remainder=*/true));
  ASSERT_EQ(dropped.size(), 2u);
  EXPECT_EQ(Ids(dropped), Range(8));
  EXPECT_EQ(Collect(ds.Batch(5, true)).size(), 2u);  // exact: nothing dropped
  EXPECT_EQ(Collect(ds.Batch(11, true)).size(), 0u);
  EXPECT_EQ(Collect(ds.Batch(1000)).size(), 1u);

  // A source that starts inside its buffer (a slice) batches from there.
  Tensor features = Source(10)[1];
  std::vector<Element> sliced =
      Collect(Dataset::FromTensors({features.Slice(2, 6)}).Batch(4));
  ASSERT_EQ(sliced.size(), 1u);
  EXPECT_TRUE(sliced[0][0].Equals(features.Slice(2, 6).Copy()));
}

TEST(DatasetTest, BatchInElementModeMatchesRowMode) {
  Dataset ds = Dataset::FromTensors(Source(10)).Shuffle(10, 3);
  std::vector<Element> rows = Collect(ds.Batch(3));
  std::vector<Element> elements = Collect(ElementMode(ds).Batch(3));
  ASSERT_EQ(rows.size(), elements.size());
  for (size_t b = 0; b < rows.size(); ++b) {
    for (int c = 0; c < 2; ++c) {
      EXPECT_TRUE(rows[b][c].Equals(elements[b][c])) << "batch " << b;
    }
  }
}

TEST(DatasetTest, BatchRejectsElementsOfDifferentShapes) {
  Dataset ds = Dataset::FromTensors(Source(4)).Map(
      [](Element e) -> absl::StatusOr<Element> {
        if (e[0].scalar<int64_t>() == 2) e[1] = Tensor::Vector<float>({1});
        return e;
      });
  auto it = ds.Batch(4).MakeIterator().value();
  auto batch = it->GetNext();
  EXPECT_EQ(batch.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(batch.status().message(),
              HasSubstr("component 1 is float32[1] in element 2 of the batch "
                        "but float32[3] in element 0"));
}

TEST(DatasetTest, BatchesStrings) {
  Tensor words(DataType::kString, TensorShape({3}));
  words.flat<std::string>()[0] = "a";
  words.flat<std::string>()[1] = "bb";
  words.flat<std::string>()[2] = "ccc";
  std::vector<Element> batches =
      Collect(Dataset::FromTensors({words}).Batch(2));
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0][0].flat<std::string>()[1], "bb");
  EXPECT_EQ(batches[1][0].flat<std::string>()[0], "ccc");
}

TEST(DatasetTest, ShardsAreDisjointAndCover) {
  for (bool element_mode : {false, true}) {
    Dataset ds = Dataset::FromTensors(Source(10));
    if (element_mode) ds = ElementMode(ds);
    std::multiset<int64_t> all;
    for (int index = 0; index < 3; ++index) {
      std::vector<int64_t> shard = Ids(ds.Shard(3, index));
      for (int64_t id : shard) {
        EXPECT_EQ(id % 3, index);
        all.insert(id);
      }
    }
    EXPECT_EQ(std::vector<int64_t>(all.begin(), all.end()), Range(10));
  }
}

TEST(DatasetTest, ShardsOfAShuffledRepeatedStreamStayDisjointPerEpoch) {
  // Every worker shards before shuffling, as data-parallel training does.
  std::multiset<int64_t> all;
  for (int worker = 0; worker < 4; ++worker) {
    Dataset ds = Dataset::FromTensors(Source(103))
                     .Shard(4, worker)
                     .Shuffle(1000, worker)
                     .Repeat(2)
                     .Batch(8);
    std::vector<int64_t> ids = Ids(ds);
    for (int64_t id : ids) EXPECT_EQ(id % 4, worker);
    all.insert(ids.begin(), ids.end());
  }
  std::multiset<int64_t> expected;
  for (int64_t i = 0; i < 103; ++i) expected.insert({i, i});
  EXPECT_EQ(all, expected);
}

TEST(DatasetTest, BadArgumentsAreInvalidArgument) {
  Dataset ds = Dataset::FromTensors(Source(4));
  Dataset bad_shard = ds.Shard(2, 2);
  EXPECT_EQ(bad_shard.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_shard.status().message(),
              HasSubstr("Shard: index 2 is out of range for 2 shards"));
  EXPECT_FALSE(ds.Shard(2, -1).status().ok());
  EXPECT_FALSE(ds.Shard(0, 0).status().ok());
  EXPECT_THAT(ds.Batch(0).status().message(),
              HasSubstr("Batch: batch_size is 0; expected at least 1"));
  EXPECT_FALSE(ds.Shuffle(0, 1).status().ok());
  EXPECT_FALSE(ds.Prefetch(0).status().ok());
  EXPECT_FALSE(ds.Repeat(-2).status().ok());
  EXPECT_FALSE(ds.Take(-1).status().ok());
  EXPECT_FALSE(ds.Map(nullptr).status().ok());
  // The first error travels down the chain and stops MakeIterator.
  Dataset chained = bad_shard.Shuffle(10, 1).Batch(2);
  EXPECT_EQ(chained.status(), bad_shard.status());
  EXPECT_EQ(chained.MakeIterator().status(), bad_shard.status());
}

TEST(DatasetTest, ShuffleIsAPermutationDeterminedBySeed) {
  Dataset ds = Dataset::FromTensors(Source(50));
  std::vector<int64_t> a = Ids(ds.Shuffle(50, 7));
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, Range(50));
  EXPECT_NE(a, Range(50));
  // A dataset built again with the same seed gives the same order.
  EXPECT_EQ(Ids(Dataset::FromTensors(Source(50)).Shuffle(50, 7)), a);
  EXPECT_NE(Ids(ds.Shuffle(50, 8)), a);
  // Rows or elements, the order is the same.
  EXPECT_EQ(Ids(ElementMode(ds).Shuffle(50, 7)), a);
}

TEST(DatasetTest, ShuffleReordersEveryEpochDeterministically) {
  Dataset ds = Dataset::FromTensors(Source(50)).Shuffle(50, 7).Repeat(3);
  std::vector<int64_t> ids = Ids(ds);
  ASSERT_EQ(ids.size(), 150u);
  std::vector<int64_t> e0(ids.begin(), ids.begin() + 50);
  std::vector<int64_t> e1(ids.begin() + 50, ids.begin() + 100);
  std::vector<int64_t> e2(ids.begin() + 100, ids.end());
  EXPECT_NE(e0, e1);
  EXPECT_NE(e1, e2);
  EXPECT_NE(e0, e2);
  std::sort(e1.begin(), e1.end());
  EXPECT_EQ(e1, Range(50));
  // The same program gets the same three epochs.
  EXPECT_EQ(Ids(Dataset::FromTensors(Source(50)).Shuffle(50, 7).Repeat(3)),
            ids);

  // Each new iterator of one dataset is a new epoch, also deterministic.
  Dataset once = Dataset::FromTensors(Source(50)).Shuffle(50, 7);
  std::vector<int64_t> first = Ids(once);
  std::vector<int64_t> second = Ids(once);
  EXPECT_NE(first, second);
  Dataset again = Dataset::FromTensors(Source(50)).Shuffle(50, 7);
  EXPECT_EQ(Ids(again), first);
  EXPECT_EQ(Ids(again), second);
}

TEST(DatasetTest, ShuffleBufferBoundsHowFarElementsMove) {
  Dataset ds = Dataset::FromTensors(Source(100));
  EXPECT_EQ(Ids(ds.Shuffle(1, 5)), Range(100));  // a buffer of one: no change
  std::vector<int64_t> ids = Ids(ds.Shuffle(10, 5));
  // The k-th output has been chosen among the first k + 10 inputs.
  for (size_t k = 0; k < ids.size(); ++k) EXPECT_LT(ids[k], k + 10);
}

TEST(DatasetTest, ShuffleIsUniformOverSeeds) {
  // Where element 0 lands, over many seeds: mean (n-1)/2 and every place.
  const int n = 10, trials = 4000;
  Dataset ds = Dataset::FromTensors(Source(n));
  std::vector<int> landed(n, 0);
  for (int seed = 0; seed < trials; ++seed) {
    std::vector<int64_t> ids = Ids(ds.Shuffle(n, seed));
    ++landed[std::find(ids.begin(), ids.end(), 0) - ids.begin()];
  }
  for (int p = 0; p < n; ++p) {
    EXPECT_NEAR(landed[p], trials / n, 80) << "position " << p;
  }
}

TEST(DatasetTest, RepeatAndTake) {
  Dataset ds = Dataset::FromTensors(Source(3));
  EXPECT_THAT(Ids(ds.Repeat(2)), ElementsAre(0, 1, 2, 0, 1, 2));
  EXPECT_TRUE(Ids(ds.Repeat(0)).empty());
  EXPECT_THAT(Ids(ds.Repeat().Take(7)), ElementsAre(0, 1, 2, 0, 1, 2, 0));
  EXPECT_THAT(Ids(ds.Take(2)), ElementsAre(0, 1));
  EXPECT_THAT(Ids(ds.Take(0)), ElementsAre());
  // Repeating an empty dataset forever ends instead of spinning.
  EXPECT_TRUE(Ids(ds.Take(0).Repeat()).empty());
  // Batches that span epochs, as tf.data's repeat-then-batch gives.
  std::vector<Element> batches = Collect(ds.Repeat(3).Batch(4));
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_THAT(Ids(batches), ElementsAre(0, 1, 2, 0, 1, 2, 0, 1, 2));
}

TEST(DatasetTest, CardinalityMatchesWhatIterationYields) {
  Dataset ds = Dataset::FromTensors(Source(10));
  const std::vector<Dataset> pipelines = {
      ds,
      ds.Batch(3),
      ds.Batch(3, true),
      ds.Shard(3, 0),
      ds.Shard(3, 2),
      ds.Shard(20, 15),
      ds.Shuffle(4, 1).Repeat(3).Batch(4),
      ElementMode(ds).Take(4).Prefetch(2),
      ds.Take(20),
      ds.Repeat().Take(25).Batch(10, true),
      ds.Take(0).Repeat(),
  };
  for (size_t i = 0; i < pipelines.size(); ++i) {
    EXPECT_EQ(pipelines[i].Cardinality(),
              static_cast<int64_t>(Collect(pipelines[i]).size()))
        << "pipeline " << i;
  }
  EXPECT_EQ(ds.Repeat().Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(ds.Repeat().Batch(4).Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(ds.Shard(2, 7).Cardinality(), kUnknownCardinality);
}

TEST(DatasetTest, MapTransformsAndReportsErrors) {
  Dataset doubled = Dataset::FromTensors(Source(3)).Map(
      [](Element e) -> absl::StatusOr<Element> {
        e[0] = Tensor::Scalar<int64_t>(e[0].scalar<int64_t>() * 2);
        return e;
      });
  EXPECT_THAT(Ids(doubled), ElementsAre(0, 2, 4));

  Dataset failing = Dataset::FromTensors(Source(3)).Map(
      [](Element e) -> absl::StatusOr<Element> {
        if (e[0].scalar<int64_t>() == 1) return absl::DataLossError("bad row");
        return e;
      });
  auto it = failing.MakeIterator().value();
  EXPECT_TRUE(it->GetNext().ok());
  auto error = it->GetNext();
  EXPECT_EQ(error.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(error.status().message(), HasSubstr("element 1"));
  EXPECT_THAT(error.status().message(), HasSubstr("bad row"));
  EXPECT_EQ(it->GetNext().status(), error.status());  // errors are sticky
}

TEST(DatasetTest, IteratorOutlivesItsDataset) {
  std::unique_ptr<Iterator> it;
  {
    Dataset ds = Dataset::FromTensors(Source(5)).Shuffle(5, 1).Batch(2);
    it = ds.MakeIterator().value();
  }
  std::vector<int64_t> ids;
  while (auto batch = it->GetNext().value()) {
    for (int64_t id : (*batch)[0].flat<int64_t>()) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, Range(5));
}

TEST(DatasetTest, ShuffledBatchesCopyTheRightRows) {
  // A Fashion-MNIST-sized epoch: every batch row must equal the source row of
  // its id, and the whole epoch must be fast.
  const int64_t n = 60000, width = 784;
  Tensor ids(DataType::kInt32, TensorShape({n}));
  Tensor images =
      Tensor::Uninitialized(DataType::kFloat, TensorShape({n, width}));
  for (int64_t i = 0; i < n; ++i) {
    ids.flat<int32_t>()[i] = static_cast<int32_t>(i);
    for (int64_t j = 0; j < width; ++j) {
      images.flat<float>()[i * width + j] = static_cast<float>(i) + j * 1e-3f;
    }
  }
  Dataset ds = Dataset::FromTensors({ids, images}).Shuffle(n, 11).Batch(128);
  auto it = ds.MakeIterator().value();
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  int64_t seen = 0, batches = 0;
  std::vector<Element> kept;
  while (auto batch = it->GetNext().value()) {
    seen += (*batch)[0].dim_size(0);
    if (batches++ % 50 == 0) kept.push_back(*batch);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  const double cpu_seconds =
      static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  std::cout << "one shuffled epoch of " << n << "x" << width << " floats in "
            << batches << " batches: " << seconds * 1e3 << " ms ("
            << cpu_seconds * 1e3 << " ms of CPU)\n";
  EXPECT_EQ(seen, n);
  for (const Element& batch : kept) {
    for (int64_t r = 0; r < batch[0].dim_size(0); ++r) {
      const int64_t id = batch[0].flat<int32_t>()[r];
      for (int64_t j = 0; j < width; j += 97) {
        ASSERT_EQ(batch[1].flat<float>()[r * width + j],
                  images.flat<float>()[id * width + j]);
      }
    }
  }
}

}  // namespace
}  // namespace data
}  // namespace distflow
