// sinew/data/streaming_loader.hpp: a loader that reads every batch from disk, as PyTorch's DataLoader does.
//
// The last of sinew's three loaders (loader_spec.hpp names them): it holds nothing of the dataset but the
// batches in its prefetch window. `workers` threads (DataLoader's num_workers) read each batch's records from
// the files (RecordSource: CIFAR records by offset, IDX the same), convert and augment them, up to
// `prefetch_batches` batches ahead of the trainer; with 0 workers next() reads the batch itself. Its batches are
// bit-identical to CachedLoader's for the same options and records, for any number of workers.
//
// Memory: prefetch_batches batches of floats, one image of bytes and floats per worker, and the epoch's order
// (8 bytes per sample of this rank). The page cache may keep the files, as it would for DataLoader.
//
// times() splits the epoch's data loading as the paper does: `waited` is what next() blocked the trainer (the
// "loading" phase), `hidden` the rest of the workers' time, spent while the trainer computed.
//
// A worker's exception (a record that cannot be read names its file) reaches the caller from the next() of that
// very batch; the destructor stops the workers mid-epoch and joins every thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sinew/core/error.hpp"
#include "sinew/data/detail/loader_plan.hpp"
#include "sinew/data/loader_options.hpp"
#include "sinew/data/loader_spec.hpp"
#include "sinew/data/record_source_spec.hpp"

namespace sinew::data {

/// StreamingLoader's own options, beside the LoaderOptions every loader shares.
struct StreamingOptions {
  int workers = 2;           ///< threads that read and convert batches; 0: next() reads each batch itself
  int prefetch_batches = 2;  ///< batches prepared ahead of the trainer (with workers > 0); at least 1
};

/// Where a StreamingLoader's time went in the current epoch (since start_epoch).
struct LoaderTimes {
  double waited = 0;    ///< seconds next() blocked the caller: reading it did itself, or waiting for a worker
  double prepared = 0;  ///< seconds the workers spent reading, converting and augmenting, summed over workers
  /// The workers' time the caller did not wait for.
  double hidden() const { return prepared > waited ? prepared - waited : 0.0; }
};

template <class S>
/// A Loader (data/loader_spec.hpp) that reads every batch from disk with `workers` threads (see the top
/// of this file). S is a RecordSource: CifarRecords, IdxRecords, ImageFolder. Not copyable.
class StreamingLoader {
  // Not a constraint on S: CTAD from a Dataset must end in this sentence, not in a list of unmet requirements.
  static_assert(RecordSource<S>,
                "StreamingLoader reads records one by one from files: give it a RecordSource (CifarRecords, "
                "IdxRecords, ImageFolder); for a Dataset in memory use CachedLoader or ByteLoader");

 public:
  /// Takes the source; options as every loader's, streaming: the threads and how far ahead they read.
  /// Throws a data_error for workers < 0 or prefetch_batches < 1.
  StreamingLoader(S source, LoaderOptions options = {}, StreamingOptions streaming = {})
      : source_(std::move(source)),
        plan_(detail::record_shape{source_.channels(), source_.height(), source_.width(), source_.num_classes(),
                                   source_.size()},
              options),
        streaming_(checked(streaming)),
        order_(plan_.epoch_indices(0)) {
    const std::size_t slots = streaming_.workers == 0 ? 0 : static_cast<std::size_t>(streaming_.prefetch_batches);
    slots_.resize(slots);
    for (slot& s : slots_) {
      s.images.resize(static_cast<std::size_t>(plan_.batch_size()) * plan_.image_size());
      s.labels.resize(static_cast<std::size_t>(plan_.batch_size()));
    }
    inline_scratch_ = make_scratch();
    try {
      for (int w = 0; w < streaming_.workers; ++w) workers_.emplace_back([this] { work(); });
    } catch (...) {
      stop();
      throw;
    }
  }

  StreamingLoader(const StreamingLoader&) = delete;
  StreamingLoader& operator=(const StreamingLoader&) = delete;

  ~StreamingLoader() { stop(); }

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
  /// The record source it reads.
  const S& source() const { return source_; }
  /// The options it was built with.
  const StreamingOptions& streaming_options() const { return streaming_; }

  /// Drops whatever was prepared, waits for batches in flight, and starts over with the order of `epoch`.
  void start_epoch(int epoch) {
    std::vector<std::size_t> order = plan_.epoch_indices(epoch);  // shuffled while the workers still run
    {
      std::unique_lock lock(mutex_);
      ++generation_;       // fills in flight belong to the old epoch: dropped when they finish
      restarting_ = true;  // and no new claims until order_ is the new one
      changed_.wait(lock, [&] { return in_flight_ == 0; });
      restarting_ = false;
      order_ = std::move(order);
      epoch_ = epoch;
      claimed_ = taken_ = 0;
      for (slot& s : slots_) s.ready = false;
      failure_ = nullptr;
      times_ = {};
    }
    changed_.notify_all();
  }

  /// Copies the next batch into images (NCHW floats) and labels and returns its samples; 0 at the end of the
  /// epoch. Rethrows a worker's exception from the call that asks for that batch.
  std::size_t next(std::span<float> images, std::span<std::int32_t> labels) {
    plan_.check_buffers(images, labels);
    const auto start = clock::now();
    std::unique_lock lock(mutex_);
    if (taken_ == plan_.batches()) return 0;
    const std::size_t batch = taken_;
    if (slots_.empty()) {  // no workers: read here, straight into the caller's buffers
      lock.unlock();
      const std::size_t count = fill(batch, images.data(), labels.data(), inline_scratch_);
      lock.lock();
      ++taken_;
      times_.waited += seconds_since(start);
      return count;
    }
    slot& s = slots_[batch % slots_.size()];
    changed_.wait(lock, [&] { return (s.ready && s.batch == batch) || failed_at(batch); });
    if (!s.ready || s.batch != batch) std::rethrow_exception(failure_);  // stays set until start_epoch
    lock.unlock();
    // A ready slot is left alone until taken_ moves past it, so it can be read without the lock.
    std::copy_n(s.images.data(), s.count * plan_.image_size(), images.data());
    std::copy_n(s.labels.data(), s.count, labels.data());
    const std::size_t count = s.count;
    lock.lock();
    s.ready = false;
    ++taken_;
    times_.waited += seconds_since(start);
    lock.unlock();
    changed_.notify_all();
    return count;
  }

  /// This epoch's time split; read it between batches, from the caller's thread.
  LoaderTimes times() const {
    std::lock_guard lock(mutex_);
    return times_;
  }

 private:
  using clock = std::chrono::steady_clock;

  struct slot {
    std::vector<float> images;
    std::vector<std::int32_t> labels;
    std::size_t batch = 0, count = 0;
    bool ready = false;  // holds batch `batch`, not yet taken by next()
  };

  struct scratch {
    std::vector<std::uint8_t> bytes;  // one record as read
    std::vector<float> converted;     // it converted, before augmentation
  };

  static double seconds_since(clock::time_point start) {
    return std::chrono::duration<double>(clock::now() - start).count();
  }

  static StreamingOptions checked(StreamingOptions o) {
    if (o.workers < 0 || o.workers > 256)
      throw data_error("streaming loader: workers is " + std::to_string(o.workers) +
                       "; it must be between 0 (read in next()) and 256");
    if (o.prefetch_batches < 1)
      throw data_error("streaming loader: prefetch_batches is " + std::to_string(o.prefetch_batches) +
                       "; it must be at least 1");
    return o;
  }

  scratch make_scratch() const {
    scratch s;
    s.bytes.resize(static_cast<std::size_t>(source_.channels()) * static_cast<std::size_t>(source_.height()) *
                   static_cast<std::size_t>(source_.width()));
    if (plan_.augments()) s.converted.resize(plan_.image_size());
    return s;
  }

  // Whether next() must give up waiting for `batch`: a worker failed on it or on an earlier one.
  bool failed_at(std::size_t batch) const { return failure_ != nullptr && failed_batch_ <= batch; }

  // Reads, converts and augments `batch` of the current order into images/labels; returns its sample count.
  std::size_t fill(std::size_t batch, float* images, std::int32_t* labels, scratch& s) const {
    const auto batch_size = static_cast<std::size_t>(plan_.batch_size());
    const std::size_t first = batch * batch_size;
    const std::size_t count = std::min(batch_size, order_.size() - first);
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t sample = order_[first + i];
      if constexpr (requires { source_.read(sample, std::span(s.bytes), epoch_); })
        labels[i] = source_.read(sample, std::span(s.bytes), epoch_);  // a source that draws per epoch
      else
        labels[i] = source_.read(sample, std::span(s.bytes));
      float* out = images + i * plan_.image_size();
      if (plan_.augments()) {
        plan_.convert(s.bytes.data(), s.converted.data());
        plan_.augment(s.converted.data(), out, epoch_, sample);
      } else {
        plan_.convert(s.bytes.data(), out);
      }
    }
    return count;
  }

  // A worker: claims the next batch whose slot is free, fills it outside the lock, marks it ready.
  void work() {
    scratch s = make_scratch();
    std::unique_lock lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] {
        return stopping_ || (!restarting_ && failure_ == nullptr && claimed_ < plan_.batches() && claimed_ < taken_ + slots_.size());
      });
      if (stopping_) return;
      const std::size_t batch = claimed_++;
      const std::uint64_t generation = generation_;
      slot& target = slots_[batch % slots_.size()];
      ++in_flight_;
      lock.unlock();
      const auto start = clock::now();
      std::exception_ptr failure;
      std::size_t count = 0;
      try {
        count = fill(batch, target.images.data(), target.labels.data(), s);
      } catch (...) {
        failure = std::current_exception();
      }
      const double took = seconds_since(start);
      lock.lock();
      --in_flight_;
      if (generation == generation_) {  // else start_epoch is waiting to drop it
        times_.prepared += took;
        if (failure != nullptr) {
          if (failure_ == nullptr || batch < failed_batch_) failure_ = failure, failed_batch_ = batch;
        } else {
          target.batch = batch;
          target.count = count;
          target.ready = true;
        }
      }
      changed_.notify_all();
    }
  }

  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    for (std::thread& t : workers_)
      if (t.joinable()) t.join();
  }

  const S source_;
  const detail::loader_plan plan_;
  const StreamingOptions streaming_;
  scratch inline_scratch_;  // for next() itself when there are no workers

  // Guarded by mutex_, except as noted.
  std::vector<std::size_t> order_;  // this epoch's samples; changed only while in_flight_ == 0
  int epoch_ = 0;                   // of order_, for the augmentation's draws; changed with it
  std::vector<slot> slots_;         // batch b lives in slots_[b % size]; a ready one belongs to next()
  std::size_t claimed_ = 0;         // batches of this epoch handed to workers
  std::size_t taken_ = 0;           // batches of this epoch returned by next()
  std::size_t in_flight_ = 0;       // batches being filled outside the lock
  std::uint64_t generation_ = 0;    // bumped by start_epoch: fills of an older one are dropped
  bool restarting_ = false;         // start_epoch waits for the fills in flight
  bool stopping_ = false;
  std::exception_ptr failure_;      // the first failing batch's exception; re-thrown by next() until start_epoch
  std::size_t failed_batch_ = 0;
  LoaderTimes times_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::thread> workers_;  // last: started once everything above exists
};

}  // namespace sinew::data
