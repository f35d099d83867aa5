// sinew/data/byte_loader.hpp: a loader that keeps the dataset's bytes in memory and converts each batch
// just ahead of use.
//
// The middle one of sinew's three loaders (see loader_spec.hpp): CachedLoader holds every image as float,
// ByteLoader holds them as the uint8 pixels the readers return, StreamingLoader holds none and reads each
// batch from disk. ByteLoader keeps a place of its own because it serves what neither of the others does:
// a Dataset built in memory (take/concat splits, generated data) at a quarter of CachedLoader's memory.
// It holds the dataset as uint8 and one background thread that converts the next batches into two buffers while the trainer works on the current one, so next() is
// usually one copy out of a ready buffer. Its batches are bit-identical to CachedLoader's for the same
// options. Exceptions on the thread reach the caller from next(); the destructor stops and joins it.
#pragma once

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "sinew/data/dataset.hpp"
#include "sinew/data/detail/loader_plan.hpp"
#include "sinew/data/loader_options.hpp"
#include "sinew/data/loader_spec.hpp"

namespace sinew::data {

/// A Loader (data/loader_spec.hpp) that keeps the dataset as uint8 and converts each batch on a background
/// thread (see the top of this file). Not copyable.
class ByteLoader {
 public:
  /// Takes the dataset (move it in to avoid a copy) and starts preparing epoch 0.
  explicit ByteLoader(Dataset data, LoaderOptions options = {})
      : data_(std::move(data)), plan_(data_, options), order_(plan_.epoch_indices(0)) {
    for (batch_buffer& buffer : buffers_) {
      buffer.images.resize(static_cast<std::size_t>(plan_.batch_size()) * plan_.image_size());
      buffer.labels.resize(static_cast<std::size_t>(plan_.batch_size()));
    }
    if (plan_.augments()) scratch_.resize(plan_.image_size());
    worker_ = std::thread([this] { prepare_batches(); });
  }

  ByteLoader(const ByteLoader&) = delete;
  ByteLoader& operator=(const ByteLoader&) = delete;

  ~ByteLoader() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    worker_.join();
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

  /// Drops whatever was prepared and starts over with the order of `epoch`.
  void start_epoch(int epoch) {
    std::vector<std::size_t> order = plan_.epoch_indices(epoch);  // shuffled while the worker still runs
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return !filling_; });  // the worker reads order_ while it fills
      order_ = std::move(order);
      epoch_ = epoch;
      prepared_ = taken_ = 0;
      for (batch_buffer& buffer : buffers_) buffer.ready = false;
      failure_ = nullptr;
    }
    changed_.notify_all();
  }

  /// Copies the next prepared batch into images (NCHW floats) and labels and returns its samples; 0 at the end
  /// of the epoch. Rethrows an exception of the background thread.
  std::size_t next(std::span<float> images, std::span<std::int32_t> labels) {
    plan_.check_buffers(images, labels);
    std::unique_lock lock(mutex_);
    if (taken_ == plan_.batches()) return 0;
    batch_buffer& buffer = buffers_[taken_ % buffers_.size()];
    changed_.wait(lock, [&] { return buffer.ready || failure_ != nullptr; });
    if (!buffer.ready) std::rethrow_exception(failure_);  // stays set: every later next() throws it too
    lock.unlock();
    // The worker leaves a ready buffer alone, so it can be read without the lock.
    std::copy_n(buffer.images.data(), buffer.count * plan_.image_size(), images.data());
    std::copy_n(buffer.labels.data(), buffer.count, labels.data());
    const std::size_t count = buffer.count;
    lock.lock();
    buffer.ready = false;
    ++taken_;
    lock.unlock();
    changed_.notify_all();
    return count;
  }

 private:
  struct batch_buffer {
    std::vector<float> images;
    std::vector<std::int32_t> labels;
    std::size_t count = 0;
    bool ready = false;  // filled and not yet taken by next()
  };

  // The worker: fills batch prepared_ into buffer prepared_ % 2 whenever that buffer is free.
  void prepare_batches() {
    std::unique_lock lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] {
        return stopping_ ||
               (failure_ == nullptr && prepared_ < plan_.batches() && !buffers_[prepared_ % buffers_.size()].ready);
      });
      if (stopping_) return;
      const std::size_t batch = prepared_;
      batch_buffer& buffer = buffers_[batch % buffers_.size()];
      filling_ = true;
      lock.unlock();
      std::exception_ptr failure;
      try {
        fill(buffer, batch);
      } catch (...) {
        failure = std::current_exception();
      }
      lock.lock();
      filling_ = false;
      if (failure != nullptr) {
        failure_ = failure;
      } else {
        buffer.ready = true;
        ++prepared_;
      }
      changed_.notify_all();
    }
  }

  void fill(batch_buffer& buffer, std::size_t batch) const {
    const auto batch_size = static_cast<std::size_t>(plan_.batch_size());
    const std::size_t first = batch * batch_size;
    buffer.count = std::min(batch_size, order_.size() - first);
    for (std::size_t i = 0; i < buffer.count; ++i) {
      const std::size_t sample = order_[first + i];
      float* out = buffer.images.data() + i * plan_.image_size();
      if (plan_.augments()) {
        plan_.convert(data_.pixels.data() + sample * data_.image_size(), scratch_.data());
        plan_.augment(scratch_.data(), out, epoch_, sample);
      } else {
        plan_.convert(data_.pixels.data() + sample * data_.image_size(), out);
      }
      buffer.labels[i] = data_.labels[sample];
    }
  }

  const Dataset data_;
  const detail::loader_plan plan_;

  // Guarded by mutex_, except as noted.
  std::vector<std::size_t> order_;         // this epoch's samples; changed only while !filling_
  int epoch_ = 0;                          // of order_, for the augmentation's draws; changed with it
  mutable std::vector<float> scratch_;     // one converted image before augmentation; the worker's alone
  std::array<batch_buffer, 2> buffers_;    // batch b lives in buffers_[b % 2]; a ready one belongs to next()
  std::size_t prepared_ = 0, taken_ = 0;   // batches of this epoch filled / returned by next()
  bool filling_ = false;                   // the worker is filling a buffer outside the lock
  bool stopping_ = false;
  std::exception_ptr failure_;             // thrown by fill(); re-thrown by next() until start_epoch
  std::mutex mutex_;
  std::condition_variable changed_;
  std::thread worker_;                     // last: started once everything above exists
};

static_assert(LoaderPolicy<ByteLoader>);

}  // namespace sinew::data
