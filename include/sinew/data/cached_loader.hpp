// sinew/data/cached_loader.hpp: a loader that converts the whole dataset to float once, up front.
//
// After construction a batch is one copy per sample, the fastest a loader can be, at four times the
// dataset's memory: every rank caches every sample, because the shares are reshuffled each epoch
// (CIFAR-10's 50000 3x32x32 images take 614 MB as float). Where that is too much, ByteLoader keeps
// bytes and converts each batch on a background thread, and StreamingLoader reads each batch from disk.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "sinew/data/dataset.hpp"
#include "sinew/data/detail/loader_plan.hpp"
#include "sinew/data/loader_options.hpp"
#include "sinew/data/loader_spec.hpp"

namespace sinew::data {

/// A Loader (data/loader_spec.hpp) that holds every image as normalised floats (see the top of this file).
class CachedLoader {
 public:
  /// Converts every image of `data` (padded, normalized) now; `data` is not needed afterwards.
  explicit CachedLoader(const Dataset& data, LoaderOptions options = {})
      : plan_(data, options), labels_(data.labels), images_(data.size() * plan_.image_size()) {
    for (std::size_t i = 0; i < data.size(); ++i)
      plan_.convert(data.pixels.data() + i * data.image_size(), images_.data() + i * plan_.image_size());
    start_epoch(0);
  }

  /// The Loader contract (data/loader_spec.hpp): the image shape after padding, this rank's samples per
  /// epoch, the largest batch, the non-empty next() calls per epoch.
  /// @{
  int channels() const { return plan_.channels(); }
  int height() const { return plan_.height(); }
  int width() const { return plan_.width(); }
  std::size_t size() const { return plan_.samples(); }
  int batch_size() const { return plan_.batch_size(); }
  /// @}
  /// LoaderOptions::seed, which with the epoch fixes the order (checkpoints record it).
  std::uint64_t shuffle_seed() const { return plan_.seed(); }
  /// Calls to next() per epoch that return samples (Loader contract).
  std::size_t batches_per_epoch() const { return plan_.batches(); }

  /// Restarts at the first batch of `epoch`, in the order fixed by (seed, epoch).
  void start_epoch(int epoch) {
    order_ = plan_.epoch_indices(epoch);
    epoch_ = epoch;
    next_sample_ = 0;
  }

  /// Deals the following epochs to `rank` of `world_size` (data/loader_spec.hpp: req::has_redeal; the
  /// elastic trainer calls it on the survivors after a rank died).
  void redeal(int rank, int world_size) { plan_.redeal(rank, world_size); }

  /// Restarts `epoch` at position `first` of its permutation, as the ranks dealt now share the rest of it;
  /// returns the batches this rank gives until the epoch ends.
  std::size_t start_epoch_at(int epoch, std::size_t first) {
    order_ = plan_.epoch_indices(epoch, first);
    epoch_ = epoch;
    next_sample_ = 0;
    const auto batch = static_cast<std::size_t>(plan_.batch_size());
    return (order_.size() + batch - 1) / batch;
  }

  /// Copies the next batch into images (NCHW floats) and labels and returns its samples; 0 at the end of the
  /// epoch (Loader contract).
  std::size_t next(std::span<float> images, std::span<std::int32_t> labels) {
    plan_.check_buffers(images, labels);
    const std::size_t count =
        std::min(static_cast<std::size_t>(plan_.batch_size()), order_.size() - next_sample_);
    const std::size_t image_size = plan_.image_size();
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t sample = order_[next_sample_ + i];
      if (plan_.augments())
        plan_.augment(images_.data() + sample * image_size, images.data() + i * image_size, epoch_, sample);
      else
        std::copy_n(images_.data() + sample * image_size, image_size, images.data() + i * image_size);
      labels[i] = labels_[sample];
    }
    next_sample_ += count;
    return count;
  }

 private:
  detail::loader_plan plan_;
  std::vector<std::int32_t> labels_;
  std::vector<float> images_;       // every sample, converted, indexed like the dataset
  std::vector<std::size_t> order_;  // the dataset indices of this rank's samples this epoch
  std::size_t next_sample_ = 0;     // position in order_
  int epoch_ = 0;                   // of order_, for the augmentation's draws
};

static_assert(LoaderPolicy<CachedLoader>);

}  // namespace sinew::data
