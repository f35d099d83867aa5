// sinew/data/loader_options.hpp: how CachedLoader and StreamingLoader batch, shuffle, shard and convert.
#pragma once

#include <cstdint>
#include <vector>

namespace sinew::data {

/// Options shared by CachedLoader and StreamingLoader; the same options give both the same batches.
struct LoaderOptions {
  int batch_size = 64;
  bool shuffle = true;     // false: visit samples in dataset order (then shard)
  std::uint64_t seed = 0;  // with the epoch, fixes the order; must be the same on every rank
  bool drop_last = false;  // drop the short last batch, and even out the ranks' shares so all have as many batches
  // The size images are zero-padded to, centred (an odd margin puts the extra pixel at the bottom/right);
  // 0 = no padding. 28 -> 32 adds 2 pixels of raw value 0 on each side, normalized like any other pixel.
  int pad_to_height = 0, pad_to_width = 0;
  // Per channel: a pixel x becomes (x / 255 - mean[c]) / std[c]. Empty mean = 0, empty std = 1.
  std::vector<float> mean, std;
  // This process's share: rank r of world_size takes positions r, r + world_size, ... of the epoch's
  // permutation of the whole dataset, so the shares are disjoint and change every epoch.
  int rank = 0, world_size = 1;
  // Training augmentation, as torchvision's RandomCrop(size, padding) then RandomHorizontalFlip(): the image
  // (after pad_to_*) is zero-padded by random_crop_padding pixels on every side (raw value 0, normalized like
  // any other pixel) and a window of its own size is cut at a random offset; then, with random_horizontal_flip,
  // it is mirrored left-right with probability 1/2. The draws depend only on (seed, epoch, dataset index), so
  // both loaders, every rank and every thread count give the same images. Off by default; leave it off for
  // evaluation.
  int random_crop_padding = 0;
  bool random_horizontal_flip = false;
};

}  // namespace sinew::data
