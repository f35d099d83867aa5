// sinew/data/loader_options.hpp: how every loader (Cached, Byte, Streaming) batches, shuffles, shards and converts.
#pragma once

#include <cstdint>
#include <vector>

namespace sinew::data {

/// How the workers share the dataset in an epoch.
enum class Sharding {
  /// Worker r of world_size takes positions r, r + world_size, ... of the epoch's permutation (shared by every
  /// worker): the shares are disjoint, cover the dataset and change every epoch. The global batch is
  /// batch_size x world_size, as in synchronous data parallelism.
  disjoint,
  /// Every worker reads the whole dataset each epoch, in its own order (the permutation of seed ^ f(rank), so
  /// worker 0's order is the one-worker order): what asynchronous TensorFlow input pipelines do when each
  /// worker shuffles the full dataset itself. An epoch is then world_size passes over the data.
  every_worker_reads_all,
};

/// Options shared by every loader; the same options give all of them the same batches.
struct LoaderOptions {
  /// samples per batch, per rank; > 0
  int batch_size = 64;
  bool shuffle = true;     ///< false: visit samples in dataset order (then shard)
  std::uint64_t seed = 0;  ///< with the epoch, fixes the order; must be the same on every rank
  bool drop_last = false;  ///< drop the short last batch, and even out the ranks' shares so all have as many batches
  /// The size images are first resized to, bilinearly as torchvision's Resize((h, w), antialias=False) on uint8
  /// images (sinew/data/resize.hpp: rounded back to bytes); 0, 0 = keep their size. CIFAR's 32x32 to 64x64 for
  /// AlexNet. Padding and augmentation then apply to the resized image.
  /// @{
  int resize_to_height = 0, resize_to_width = 0;
  /// @}
  /// The size images are zero-padded to, centred (an odd margin puts the extra pixel at the bottom/right);
  /// 0 = no padding. 28 -> 32 adds 2 pixels of raw value 0 on each side, normalized like any other pixel.
  /// @{
  int pad_to_height = 0, pad_to_width = 0;
  /// @}
  /// Per channel: a pixel x becomes (x / 255 - mean[c]) / std[c]. Empty mean = 0, empty std = 1.
  /// @{
  std::vector<float> mean = {}, std = {};  // "= {}": designated initializers may leave them out without a warning
  /// @}
  /// This worker's index among the workers and their number (see `sharding`). With all-reduce every rank is a
  /// worker; with a parameter server take the strategy's worker_index() and workers(), not the MPI rank and
  /// size: servers hold no data, so the global batch is batch_size x workers.
  /// @{
  int rank = 0, world_size = 1;
  /// @}
  /// Training augmentation, as torchvision's RandomCrop(size, padding) then RandomHorizontalFlip(): the image
  /// (after pad_to_*) is zero-padded by random_crop_padding pixels on every side (raw value 0, normalized like
  /// any other pixel) and a window of its own size is cut at a random offset; then, with random_horizontal_flip,
  /// it is mirrored left-right with probability 1/2. The draws depend only on (seed, epoch, dataset index), so
  /// both loaders, every rank and every thread count give the same images. Off by default; leave it off for
  /// evaluation.
  int random_crop_padding = 0;
  /// augmentation: mirror left-right with probability 1/2 (see random_crop_padding)
  bool random_horizontal_flip = false;
  /// how the workers share the dataset in an epoch
  Sharding sharding = Sharding::disjoint;
};

}  // namespace sinew::data
