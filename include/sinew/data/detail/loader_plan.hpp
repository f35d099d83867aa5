// sinew/data/detail/loader_plan.hpp: what CachedLoader, ByteLoader and StreamingLoader share.
//
// Every loader takes its shape, its epoch order and its pixel conversion from one loader_plan, which is
// what makes their batches bit-identical for the same options. A plan needs only the records' shape and
// count (record_shape), not the records themselves, so a loader that streams from disk has one too.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "sinew/core/error.hpp"
#include "sinew/core/rng.hpp"
#include "sinew/data/dataset.hpp"
#include "sinew/data/loader_options.hpp"
#include "sinew/data/resize.hpp"
#include "sinew/data/shuffle.hpp"

namespace sinew::data::detail {

/// What a plan needs to know of the records: their image shape, classes and number.
struct record_shape {
  int channels = 0, height = 0, width = 0;
  int num_classes = 0;
  std::size_t size = 0;
};

class loader_plan {
 public:
  /// Checks `options` against `data` and fixes everything that does not change between epochs.
  loader_plan(const Dataset& data, const LoaderOptions& options) : loader_plan(checked_shape(data), options) {}

  /// The same from the records' shape alone; their labels are checked as they are read.
  loader_plan(const record_shape& data, const LoaderOptions& options) : options_(options) {
    check_shape(data);
    check_options(data);
    channels_ = data.channels;
    record_height_ = data.height;
    record_width_ = data.width;
    in_height_ = options.resize_to_height == 0 ? data.height : options.resize_to_height;
    in_width_ = options.resize_to_width == 0 ? data.width : options.resize_to_width;
    height_ = options.pad_to_height == 0 ? in_height_ : options.pad_to_height;
    width_ = options.pad_to_width == 0 ? in_width_ : options.pad_to_width;
    pad_top_ = (height_ - in_height_) / 2;
    pad_left_ = (width_ - in_width_) / 2;
    build_lookup();
    plan_shares(data.size);
  }

  int channels() const { return channels_; }
  int height() const { return height_; }
  int width() const { return width_; }
  int batch_size() const { return options_.batch_size; }
  std::uint64_t seed() const { return options_.seed; }
  std::size_t samples() const { return samples_; }
  std::size_t batches() const { return batches_; }

  /// Floats in one output image, after padding.
  std::size_t image_size() const {
    return static_cast<std::size_t>(channels_) * static_cast<std::size_t>(height_) * static_cast<std::size_t>(width_);
  }

  /// The dataset indices this rank visits in `epoch`, in order: samples() of them.
  std::vector<std::size_t> epoch_indices(int epoch) const { return epoch_indices(epoch, 0); }

  /// The same from position `first` of the epoch's permutation on (the rest of an epoch re-dealt after a rank
  /// died: redeal): positions first + rank, first + rank + world, ..., as many as make this rank's batches of
  /// what is left, dealt as a whole epoch is (drop_last: whole batches, as many on every rank).
  std::vector<std::size_t> epoch_indices(int epoch, std::size_t first) const {
    const bool everything = options_.sharding == Sharding::every_worker_reads_all;
    std::vector<std::size_t> order;
    if (options_.shuffle) {
      order = epoch_permutation(dataset_size_, everything ? worker_seed() : options_.seed, epoch);
    } else {
      order.resize(dataset_size_);
      std::iota(order.begin(), order.end(), std::size_t{0});
    }
    if (everything) {
      order.resize(samples_);
      return order;
    }
    // Rank r's share: positions first + r, first + r + world, ... of the permutation.
    const auto rank = static_cast<std::size_t>(options_.rank), world = static_cast<std::size_t>(options_.world_size);
    const std::size_t count = first == 0 ? samples_ : share_from(first);
    std::vector<std::size_t> share;
    share.reserve(count);
    for (std::size_t i = first + rank; i < order.size() && share.size() < count; i += world) share.push_back(order[i]);
    return share;
  }

  /// Deals the following epochs to `rank` of `world_size` (the survivors after a rank died: the elastic trainer).
  void redeal(int rank, int world_size) {
    if (options_.sharding == Sharding::every_worker_reads_all)
      throw data_error("loader: the data cannot be re-dealt over the ranks left after one died: with "
                       "Sharding::every_worker_reads_all every worker reads the whole set in its own order, so there "
                       "is nothing to re-deal (use Sharding::disjoint for elastic training)");
    if (world_size < 1 || rank < 0 || rank >= world_size)
      throw data_error("loader: redeal(" + std::to_string(rank) + ", " + std::to_string(world_size) +
                       "): the rank must be in [0, world_size)");
    options_.rank = rank, options_.world_size = world_size;
    plan_shares(dataset_size_);
  }

  /// The samples this rank visits from position `first` of an epoch on (see epoch_indices).
  std::size_t share_from(std::size_t first) const {
    const auto rank = static_cast<std::size_t>(options_.rank), world = static_cast<std::size_t>(options_.world_size);
    const auto batch = static_cast<std::size_t>(options_.batch_size);
    const std::size_t left = dataset_size_ > first ? dataset_size_ - first : 0;
    if (options_.drop_last) return left / world / batch * batch;
    return left > rank ? (left - rank + world - 1) / world : 0;
  }

  /// Writes a record's image `in` (channels x its height x its width bytes) as image_size() resized, padded,
  /// normalized floats.
  void convert(const std::uint8_t* record, float* out) const {
    const std::uint8_t* in = record;
    if (in_height_ != record_height_ || in_width_ != record_width_) {
      thread_local std::vector<std::uint8_t> resized;  // the loaders convert on several threads at once
      resized.resize(static_cast<std::size_t>(channels_) * static_cast<std::size_t>(in_height_) *
                     static_cast<std::size_t>(in_width_));
      resize_bilinear(record, channels_, record_height_, record_width_, resized.data(), in_height_, in_width_);
      in = resized.data();
    }
    const std::size_t in_plane = static_cast<std::size_t>(in_height_) * static_cast<std::size_t>(in_width_);
    const std::size_t out_plane = static_cast<std::size_t>(height_) * static_cast<std::size_t>(width_);
    const bool padded = height_ != in_height_ || width_ != in_width_;
    for (int c = 0; c < channels_; ++c) {
      const float* lookup = lookup_.data() + 256 * static_cast<std::size_t>(c);
      float* plane = out + static_cast<std::size_t>(c) * out_plane;
      if (padded) std::fill(plane, plane + out_plane, lookup[0]);
      const std::uint8_t* in_row = in + static_cast<std::size_t>(c) * in_plane;
      for (int y = 0; y < in_height_; ++y, in_row += in_width_) {
        float* out_row = plane + static_cast<std::size_t>(y + pad_top_) * static_cast<std::size_t>(width_) +
                         static_cast<std::size_t>(pad_left_);
        for (int x = 0; x < in_width_; ++x) out_row[x] = lookup[in_row[x]];
      }
    }
  }

  /// Whether augment() changes images (LoaderOptions::random_crop_padding / random_horizontal_flip).
  bool augments() const { return options_.random_crop_padding > 0 || options_.random_horizontal_flip; }

  /// Writes the augmented version of `in` (a converted image, image_size() floats) to `out` (not aliasing it):
  /// shifted by a random offset in [-padding, padding] in each direction with the zero pixel's value filling in,
  /// then mirrored left-right half of the time. The draws come from (seed, epoch, dataset index) alone.
  void augment(const float* in, float* out, int epoch, std::size_t sample) const {
    const std::uint64_t bits =
        mix64(mix64(mix64(options_.seed ^ 0x6175676d656e74ull) ^ static_cast<std::uint64_t>(epoch)) ^ sample);
    // 16 bits per draw: the modulo bias is below 2^-12 for any padding up to 8 pixels.
    const int pad = options_.random_crop_padding, span = 2 * pad + 1;
    const int dy = static_cast<int>((bits & 0xffffu) % static_cast<std::uint64_t>(span)) - pad;
    const int dx = static_cast<int>(((bits >> 16) & 0xffffu) % static_cast<std::uint64_t>(span)) - pad;
    const bool flip = options_.random_horizontal_flip && ((bits >> 32) & 1u) != 0;
    const std::size_t plane = static_cast<std::size_t>(height_) * static_cast<std::size_t>(width_);
    for (int c = 0; c < channels_; ++c) {
      const float fill = lookup_[256 * static_cast<std::size_t>(c)];
      const float* src = in + static_cast<std::size_t>(c) * plane;
      float* dst = out + static_cast<std::size_t>(c) * plane;
      for (int y = 0; y < height_; ++y) {
        float* row = dst + static_cast<std::size_t>(y) * static_cast<std::size_t>(width_);
        const int sy = y + dy;
        if (sy < 0 || sy >= height_) {
          std::fill(row, row + width_, fill);
          continue;
        }
        const float* src_row = src + static_cast<std::size_t>(sy) * static_cast<std::size_t>(width_);
        for (int x = 0; x < width_; ++x) {
          const int sx = x + dx;
          row[flip ? width_ - 1 - x : x] = sx < 0 || sx >= width_ ? fill : src_row[sx];
        }
      }
    }
  }

  /// Throws unless next()'s buffers hold a full batch.
  void check_buffers(std::span<const float> images, std::span<const std::int32_t> labels) const {
    const std::size_t batch = static_cast<std::size_t>(options_.batch_size);
    if (images.size() < batch * image_size() || labels.size() < batch)
      throw shape_error("loader: next() got room for " + std::to_string(images.size()) + " floats and " +
                        std::to_string(labels.size()) + " labels, a batch needs " +
                        std::to_string(batch * image_size()) + " and " + std::to_string(batch) + " (batch_size " +
                        std::to_string(batch) + " x " + std::to_string(channels_) + "x" + std::to_string(height_) +
                        "x" + std::to_string(width_) + ")");
  }

 private:
  static void check_shape(const record_shape& data) {
    if (data.channels <= 0 || data.height <= 0 || data.width <= 0)
      throw data_error("loader: the dataset's images are " + std::to_string(data.channels) + "x" +
                       std::to_string(data.height) + "x" + std::to_string(data.width) +
                       "; every dimension must be positive");
    if (data.size == 0) throw data_error("loader: the dataset is empty");
  }

  static record_shape checked_shape(const Dataset& data) {
    const record_shape shape{data.channels, data.height, data.width, data.num_classes, data.size()};
    check_shape(shape);
    if (data.pixels.size() != data.size() * data.image_size())
      throw data_error("loader: the dataset holds " + std::to_string(data.size()) + " labels and " +
                       std::to_string(data.pixels.size()) + " pixel bytes, expected " +
                       std::to_string(data.size() * data.image_size()) + " (" + std::to_string(data.size()) +
                       " x " + std::to_string(data.image_size()) + ")");
    for (std::size_t i = 0; i < data.size(); ++i)
      if (data.labels[i] < 0 || data.labels[i] >= data.num_classes)
        throw data_error("loader: label " + std::to_string(data.labels[i]) + " of sample " + std::to_string(i) +
                         " is out of range [0, " + std::to_string(data.num_classes) + ")");
    return shape;
  }

  void check_options(const record_shape& data) const {
    const LoaderOptions& o = options_;
    if (o.batch_size <= 0)
      throw data_error("loader: batch_size is " + std::to_string(o.batch_size) + "; it must be positive");
    if (o.world_size <= 0)
      throw data_error("loader: world_size is " + std::to_string(o.world_size) + "; it must be positive");
    if (o.rank < 0 || o.rank >= o.world_size)
      throw data_error("loader: rank " + std::to_string(o.rank) + " is out of range for world_size " +
                       std::to_string(o.world_size) + " (ranks are 0.." + std::to_string(o.world_size - 1) + ")");
    if (o.sharding == Sharding::disjoint && data.size < static_cast<std::size_t>(o.world_size))
      throw data_error("loader: " + std::to_string(data.size) + " samples cannot be shared by " +
                       std::to_string(o.world_size) + " ranks (every rank needs at least one)");
    if ((o.resize_to_height == 0) != (o.resize_to_width == 0) || o.resize_to_height < 0 || o.resize_to_width < 0 ||
        o.resize_to_height > 65535 || o.resize_to_width > 65535)
      throw data_error("loader: resize_to is " + std::to_string(o.resize_to_height) + "x" +
                       std::to_string(o.resize_to_width) +
                       "; give both sides (1..65535), or 0x0 to keep the images' size");
    const int height = o.resize_to_height == 0 ? data.height : o.resize_to_height;
    const int width = o.resize_to_width == 0 ? data.width : o.resize_to_width;
    check_pad("pad_to_height", o.pad_to_height, "height", height);
    check_pad("pad_to_width", o.pad_to_width, "width", width);
    if (o.random_crop_padding < 0 || o.random_crop_padding > 1024)
      throw data_error("loader: random_crop_padding is " + std::to_string(o.random_crop_padding) +
                       "; it must be between 0 (no random crop) and 1024 pixels");
    check_per_channel("mean", o.mean, data.channels);
    check_per_channel("std", o.std, data.channels);
    for (std::size_t c = 0; c < o.std.size(); ++c)
      if (!(o.std[c] > 0))
        throw data_error("loader: std[" + std::to_string(c) + "] is " + std::to_string(o.std[c]) +
                         "; every std must be positive");
  }

  static void check_pad(const char* option, int pad, const char* side, int size) {
    if (pad != 0 && pad < size)
      throw data_error("loader: " + std::string(option) + " " + std::to_string(pad) + " is smaller than the images' " +
                       side + " " + std::to_string(size) + " (padding only grows images; 0 means none)");
  }

  static void check_per_channel(const char* option, const std::vector<float>& values, int channels) {
    if (!values.empty() && values.size() != static_cast<std::size_t>(channels))
      throw data_error("loader: " + std::string(option) + " has " + std::to_string(values.size()) +
                       " values but the images have " + std::to_string(channels) +
                       " channels (give one per channel, or none)");
    for (std::size_t c = 0; c < values.size(); ++c)
      if (!std::isfinite(values[c]))
        throw data_error("loader: " + std::string(option) + "[" + std::to_string(c) + "] is not finite");
  }

  // Every byte value of every channel converted once: convert() is then one lookup per pixel, and
  // both loaders get the very same floats.
  void build_lookup() {
    lookup_.resize(256 * static_cast<std::size_t>(channels_));
    for (int c = 0; c < channels_; ++c) {
      const auto ci = static_cast<std::size_t>(c);
      const float mean = options_.mean.empty() ? 0.0f : options_.mean[ci];
      const float deviation = options_.std.empty() ? 1.0f : options_.std[ci];
      for (int v = 0; v < 256; ++v)
        lookup_[256 * ci + static_cast<std::size_t>(v)] = (static_cast<float>(v) / 255.0f - mean) / deviation;
    }
  }

  // Worker r's own seed for every_worker_reads_all: the shared seed for worker 0, unrelated ones for the others
  // (epoch_engine mixes the seed, so seeds that differ in a few bits still start unrelated streams).
  std::uint64_t worker_seed() const {
    return options_.seed ^ (static_cast<std::uint64_t>(options_.rank) * 0x9E3779B97F4A7C15u);
  }

  // With every_worker_reads_all every worker takes the whole permutation (with drop_last, its whole batches).
  // Without drop_last, rank r takes every position r + k * world_size of the permutation: the shares cover
  // the dataset and differ by at most one sample. With it, every rank takes dataset_size / world_size
  // positions (a few of the permutation's last ones go unused, different ones each epoch) and then only
  // whole batches, so all ranks run the same number of steps.
  void plan_shares(std::size_t dataset_size) {
    dataset_size_ = dataset_size;
    const auto rank = static_cast<std::size_t>(options_.rank), world = static_cast<std::size_t>(options_.world_size);
    const auto batch = static_cast<std::size_t>(options_.batch_size);
    if (options_.sharding == Sharding::every_worker_reads_all) {
      batches_ = options_.drop_last ? dataset_size / batch : (dataset_size + batch - 1) / batch;
      samples_ = options_.drop_last ? batches_ * batch : dataset_size;
      if (batches_ == 0)
        throw data_error("loader: with drop_last, the " + std::to_string(dataset_size) +
                         " samples make no full batch of " + std::to_string(batch) +
                         " (lower batch_size, or set drop_last = false)");
    } else if (options_.drop_last) {
      const std::size_t share = dataset_size / world;
      batches_ = share / batch;
      samples_ = batches_ * batch;
      if (batches_ == 0)
        throw data_error("loader: with drop_last, each rank's " + std::to_string(share) +
                         " samples make no full batch of " + std::to_string(batch) +
                         " (lower batch_size, or set drop_last = false)");
    } else {
      samples_ = (dataset_size - rank + world - 1) / world;
      batches_ = (samples_ + batch - 1) / batch;
    }
  }

  LoaderOptions options_;
  int channels_ = 0, record_height_ = 0, record_width_ = 0;  // the records' images
  int in_height_ = 0, in_width_ = 0;                         // after resizing, before padding
  int height_ = 0, width_ = 0, pad_top_ = 0, pad_left_ = 0;
  std::vector<float> lookup_;  // [channel][byte value] -> normalized float
  std::size_t dataset_size_ = 0, samples_ = 0, batches_ = 0;
};

}  // namespace sinew::data::detail
