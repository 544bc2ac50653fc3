// Input data: IDX and CSV readers, the Fashion-MNIST loader, and datasets that
// shuffle, shard, batch and prefetch examples for a training loop.
//
// Readers return tensors; a Dataset turns tensors into a stream of batches:
//
//   auto train = data::LoadFashionMnist(data::Split::kTrain).value();
//   data::Dataset ds = data::Dataset::FromTensors({train.images, train.labels})
//                          .Shard(num_workers, task_index)
//                          .Shuffle(/*buffer_size=*/60000, /*seed=*/42)
//                          .Repeat()
//                          .Batch(128)
//                          .Prefetch(2);
//   auto it = ds.MakeIterator().value();
//   while (auto batch = it->GetNext().value()) {
//     session->Run({{images, (*batch)[0]}, {labels, (*batch)[1]}}, {loss});
//   }
//
// Every error is a value (absl::Status) that names the file, line, column,
// component or argument at fault and says what was expected.
#ifndef DISTFLOW_DATA_H_
#define DISTFLOW_DATA_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distflow/tensor.h"
#include "distflow/types.h"

namespace distflow {
namespace data {

// ---- IDX files (the format of MNIST and Fashion-MNIST) ----

// Reads an IDX file of unsigned bytes, gzip-compressed or not (detected from
// the content). The file is: two zero bytes, the type byte 0x08, the rank
// byte r >= 1, r big-endian uint32 dimension sizes, then exactly the product of
// the sizes in bytes. Returns a uint8 tensor of that shape.
//
// NOT_FOUND if the file cannot be opened; DATA_LOSS for a bad magic, an
// unsupported type, a truncated header or payload, trailing bytes or a corrupt
// gzip stream. Messages start with the path.
absl::StatusOr<Tensor> ReadIdxFile(const std::string& path);

// ---- Fashion-MNIST ----

// Where Debian's dataset-fashion-mnist package installs the files.
inline constexpr char kDefaultFashionMnistDir[] =
    "/usr/share/datasets/fashion-mnist";

enum class Split { kTrain, kTest };

struct LabeledImages {
  Tensor images;  // float32 [n, 784]: 28x28 pixels, row-major, scaled to [0,1]
  Tensor labels;  // int32 [n], each in 0..9
};

// Loads the train split (60000 examples, from train-images-idx3-ubyte.gz and
// train-labels-idx1-ubyte.gz) or the test split (10000 examples, t10k-*) from
// `dir`. Errors name the file: a missing or corrupt file, images that are not
// [n,28,28], labels that are not [n] for the same n, or a label outside 0..9.
absl::StatusOr<LabeledImages> LoadFashionMnist(const std::string& dir,
                                               Split split);
inline absl::StatusOr<LabeledImages> LoadFashionMnist(Split split) {
  return LoadFashionMnist(kDefaultFashionMnistDir, split);
}

// ---- CSV files of numbers ----

struct CsvOptions {
  char delimiter = ',';
  // The first line names the columns instead of holding values.
  bool has_header = false;
  // The type of each column: kFloat, kDouble, kInt32 or kInt64. Empty means
  // every column is float32, and the first data line gives the column count.
  std::vector<DataType> column_types;
};

struct CsvTable {
  // From the header line; "" for each column without a header.
  std::vector<std::string> column_names;
  // One vector tensor [num_rows] per column, of the column's type.
  std::vector<Tensor> columns;
  int64_t num_rows = 0;
};

// Reads a CSV file of numbers (gzip-compressed or not). Blank lines are
// skipped, spaces around a value are ignored, a field may not be empty, and
// quoting is not supported. NOT_FOUND if the file cannot be opened;
// INVALID_ARGUMENT naming "file:line:column" and the bad text for a value that
// does not parse as its column's type, or "file:line" for a line with the
// wrong number of fields.
absl::StatusOr<CsvTable> ReadCsv(const std::string& path,
                                 const CsvOptions& options = CsvOptions());

// The vectors `columns` side by side as a matrix [n, columns.size()], such as
// the feature columns of a CsvTable. INVALID_ARGUMENT naming the column whose
// dtype or shape differs from column 0's, for a column that is not a vector,
// or for a dtype without fixed-size elements (string, resource).
absl::StatusOr<Tensor> StackColumns(const std::vector<Tensor>& columns);

// ---- Datasets ----

// One example or batch: one tensor per component (such as image and label).
using Element = std::vector<Tensor>;

// Dataset::Cardinality() of a dataset without end, and of one whose size
// cannot be known without iterating.
inline constexpr int64_t kInfiniteCardinality = -1;
inline constexpr int64_t kUnknownCardinality = -2;

namespace internal {
class DatasetNode;
class IteratorImpl;
}  // namespace internal

// Yields the elements of a dataset in order. Not thread-safe: call GetNext
// from one thread at a time. Destroying an iterator in mid-stream is fine: a
// prefetching iterator stops and joins its thread.
class Iterator {
 public:
  // Made by Dataset::MakeIterator; keeps `node` (the dataset) alive.
  Iterator(std::shared_ptr<const internal::DatasetNode> node,
           std::unique_ptr<internal::IteratorImpl> impl);
  ~Iterator();
  Iterator(const Iterator&) = delete;
  Iterator& operator=(const Iterator&) = delete;

  // The next element, or nullopt at the end of the dataset. After the end or
  // an error, every later call returns the same.
  absl::StatusOr<std::optional<Element>> GetNext();

 private:
  std::shared_ptr<const internal::DatasetNode> node_;  // outlives impl_
  std::unique_ptr<internal::IteratorImpl> impl_;
  absl::Status error_;
  bool done_ = false;
};

// A recipe for a stream of elements, in the manner of tf.data: an immutable
// value, cheap to copy, that builds iterators. Its methods may be called from
// any thread; iterators made on several threads run independently (a Map
// function must then tolerate concurrent calls). Transformations return new
// datasets. An invalid argument does not fail at once: the dataset carries the
// first error (status()) through later transformations, and MakeIterator
// returns it, as a Scope carries graph-building errors.
//
// Elements are not copied on their way through: FromTensors' elements view
// rows of the source tensors, and Batch gathers source rows with one memcpy
// each, whatever Shard, Shuffle, Take and Repeat did to their order.
class Dataset {
 public:
  using MapFn = std::function<absl::StatusOr<Element>(Element)>;

  // An empty recipe whose status() is FAILED_PRECONDITION: a placeholder to
  // assign a real dataset to.
  Dataset();

  // A dataset with the rows of `components` as its elements: element i is
  // {components[0][i], components[1][i], ...}, each of rank one less than its
  // source. The tensors must be of rank >= 1 and agree in dimension 0. The
  // tensors are shared, not copied: do not modify them while iterating.
  static Dataset FromTensors(std::vector<Tensor> components);

  // Shuffles with a buffer of `buffer_size` elements (as tf.data does:
  // a buffer at least as large as the dataset gives a uniform permutation).
  // The order depends only on `seed` and on the epoch: each pass made by
  // Repeat, and each new iterator made from the same dataset, is shuffled
  // differently, but the same program sees the same orders every run.
  // Shuffling the rows of FromTensors moves row indices, not tensors.
  Dataset Shuffle(int64_t buffer_size, uint64_t seed) const;

  // Repeats the dataset `count` times, or forever if count is -1. A pass that
  // yields no element ends the repetition.
  Dataset Repeat(int64_t count = -1) const;

  // Stacks `batch_size` consecutive elements into one: each component gets a
  // leading dimension of size batch_size. The last batch is smaller, unless
  // `drop_remainder` drops it. Elements must agree in dtype and shape per
  // component (INVALID_ARGUMENT naming the component otherwise).
  Dataset Batch(int64_t batch_size, bool drop_remainder = false) const;

  // The elements whose position i satisfies i % num_shards == index: for
  // data-parallel workers, the shards of 0..num_shards-1 are disjoint and
  // cover the dataset. Shard before Shuffle (or use the same seed on every
  // worker) so that all workers shard the same order.
  Dataset Shard(int64_t num_shards, int64_t index) const;

  // The first `count` elements (all of them if fewer).
  Dataset Take(int64_t count) const;

  // Applies `fn` to every element; an error from `fn` ends the iteration with
  // that error. `fn` runs on the thread that calls GetNext (or on the
  // prefetch thread of a later Prefetch).
  Dataset Map(MapFn fn) const;

  // Produces up to `buffer_size` elements ahead on a background thread, so
  // that the next batch is ready while the caller trains on this one.
  Dataset Prefetch(int64_t buffer_size) const;

  // OK, or the first invalid argument given while building this dataset.
  const absl::Status& status() const { return status_; }

  // The number of elements an iterator yields (such as the batches of an
  // epoch), kInfiniteCardinality after Repeat(), or kUnknownCardinality if
  // status() is not OK. Computed from the recipe, without iterating; Map is
  // assumed to succeed.
  int64_t Cardinality() const;

  // A new iterator over the dataset, or status() if that is not OK. The k-th
  // iterator made from this dataset (or a copy of it) sees epoch k of every
  // Shuffle in it.
  absl::StatusOr<std::unique_ptr<Iterator>> MakeIterator() const;

 private:
  Dataset(std::shared_ptr<const internal::DatasetNode> node,
          absl::Status status);
  // A dataset made by `make` from this one, or one carrying the first error:
  // status_, else `arg_status`.
  Dataset Derive(
      absl::Status arg_status,
      const std::function<std::shared_ptr<const internal::DatasetNode>(
          std::shared_ptr<const internal::DatasetNode>)>& make) const;

  std::shared_ptr<const internal::DatasetNode> node_;
  absl::Status status_;
  std::shared_ptr<std::atomic<int64_t>> iterators_made_;
};

}  // namespace data
}  // namespace distflow

#endif  // DISTFLOW_DATA_H_
