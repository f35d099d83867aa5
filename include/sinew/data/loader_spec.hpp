// sinew/data/loader_spec.hpp: what the trainer asks of a data loader, and the three sinew offers.
//
// sinew's loaders differ in what they keep in memory, the axis of the paper's caching vs streaming finding:
//   CachedLoader     (cached_loader.hpp)     every image decoded to float once, up front: a batch is a copy.
//                                            TensorFlow's cache; the fastest, at 4 bytes per pixel of memory.
//   ByteLoader       (byte_loader.hpp)       the dataset's uint8 pixels in memory, each batch converted just
//                                            ahead on one thread: a quarter of the memory, for a Dataset built
//                                            in memory (take/concat splits, generated data).
//   StreamingLoader  (streaming_loader.hpp)  nothing of the dataset: `workers` threads read each batch's records
//                                            from the files (RecordSource, record_source_spec.hpp) a few batches
//                                            ahead. PyTorch's and MXNet's DataLoader; the least memory. Over tar
//                                            shards (ShardSource, shard_source_spec.hpp) it reads as WebDataset.
// For the same options and records all three give the same batches, bit for bit (shards have an order of
// their own: only StreamingLoader reads them).
//
// Contract of a Loader L (the trainer is its only caller, from one thread):
//   channels(), height(), width()  the shape of every image next() writes, after any padding. Constant.
//   size()                         the samples this rank receives per epoch, summed over its batches. Constant.
//   batch_size()                   the most samples one next() writes. Constant, > 0.
//   batches_per_epoch()            how many calls to next() return a non-zero count in an epoch. Constant.
//   start_epoch(e)                 restarts the epoch from its first batch, in the order fixed by (seed, e):
//                                  the same e gives the same batches, on every run and every rank's share.
//                                  May be called at any point, also mid-epoch. A new loader behaves as if
//                                  start_epoch(0) had been called.
//   next(images, labels)           pre: images.size() >= batch_size() * channels() * height() * width() and
//                                  labels.size() >= batch_size(). Writes the next n samples, NCHW float into
//                                  the first n * channels() * height() * width() images and n labels, and
//                                  returns n: batch_size(), or less for a short last batch; 0 once the epoch
//                                  is over, until the next start_epoch.
// Optional: redeal(rank, world_size) and start_epoch_at(epoch, first) (req::has_redeal below), for the elastic
// trainer: after them size() and batches_per_epoch() are the new deal's (the only change of those constants).
// Optional: shuffle_seed(), the seed that with the epoch fixes the order; a checkpoint records it and a resumed
// trainer refuses a loader with another (sinew's loaders and AnyLoader have it).
// With several workers, each sees a disjoint share of the dataset per epoch; workers' size() may then differ
// by one sample unless the loader evens them out (sinew's loaders do with drop_last). sinew's loaders can
// instead let every worker read the whole dataset in its own order (LoaderOptions::sharding).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>

namespace sinew::data {

namespace req {

template <class L>
concept has_image_shape = requires(const L& loader) {
  { loader.channels() } -> std::same_as<int>;
  { loader.height() } -> std::same_as<int>;
  { loader.width() } -> std::same_as<int>;
};

template <class L>
concept has_size = requires(const L& loader) {
  { loader.size() } -> std::same_as<std::size_t>;
};

template <class L>
concept has_batch_size = requires(const L& loader) {
  { loader.batch_size() } -> std::same_as<int>;
};

template <class L>
concept has_batches_per_epoch = requires(const L& loader) {
  { loader.batches_per_epoch() } -> std::same_as<std::size_t>;
};

template <class L>
concept has_start_epoch = requires(L& loader, int epoch) { loader.start_epoch(epoch); };

template <class L>
concept has_next = requires(L& loader, std::span<float> images, std::span<std::int32_t> labels) {
  { loader.next(images, labels) } -> std::same_as<std::size_t>;
};

/// Optional: dealing the data over fewer ranks mid-run (the elastic trainer, after a rank died; CachedLoader):
/// redeal(rank, world_size) deals the following epochs as LoaderOptions{.rank, .world_size} would, and
/// start_epoch_at(epoch, first) restarts `epoch` at position `first` of its shared permutation (the samples
/// the ranks had dealt before), this rank taking first + rank, first + rank + world_size, ..., and returns its
/// batches until the epoch ends.
template <class L>
concept has_redeal = requires(L& loader, int rank, int epoch, std::size_t first) {
  loader.redeal(rank, rank);
  { loader.start_epoch_at(epoch, first) } -> std::same_as<std::size_t>;
};

}  // namespace req

/// A source of labelled image batches for the trainer; see the contract above.
template <class L>
concept LoaderPolicy = req::has_image_shape<L> && req::has_size<L> && req::has_batch_size<L> &&
                 req::has_batches_per_epoch<L> && req::has_start_epoch<L> && req::has_next<L>;

/// The smallest Loader: `count` 1x1 images, in batches of two, whose pixel and label are the sample's
/// index modulo 2. It ignores the epoch, which a real loader must not.
class example_loader {
 public:
  explicit example_loader(std::size_t count = 5) : count_(count) {}

  int channels() const { return 1; }
  int height() const { return 1; }
  int width() const { return 1; }
  std::size_t size() const { return count_; }
  int batch_size() const { return 2; }
  std::size_t batches_per_epoch() const { return (count_ + 1) / 2; }

  void start_epoch(int /*epoch*/) { next_sample_ = 0; }

  std::size_t next(std::span<float> images, std::span<std::int32_t> labels) {
    std::size_t n = 0;
    for (; n < 2 && next_sample_ < count_; ++n, ++next_sample_) {
      images[n] = static_cast<float>(next_sample_ % 2);
      labels[n] = static_cast<std::int32_t>(next_sample_ % 2);
    }
    return n;
  }

 private:
  std::size_t count_;
  std::size_t next_sample_ = 0;
};

static_assert(LoaderPolicy<example_loader>);

}  // namespace sinew::data
