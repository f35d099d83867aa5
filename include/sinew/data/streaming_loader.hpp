// sinew/data/streaming_loader.hpp: a loader that reads every batch from disk, as PyTorch's DataLoader does.
//
// The last of sinew's three loaders (loader_spec.hpp names them): it holds nothing of the dataset but the
// batches in its prefetch window. `workers` threads (DataLoader's num_workers) read each batch's records from
// the files (RecordSource: CIFAR records by offset, IDX the same), convert and augment them, up to
// `prefetch_batches` batches ahead of the trainer; with 0 workers next() reads the batch itself. Its batches are
// bit-identical to CachedLoader's for the same options and records, for any number of workers.
//
// Over a ShardSource (TarShards: WebDataset's tar shards) it reads as WebDataset does: each epoch the shards are
// shuffled (seed, epoch) and dealt out (rank r of W takes shards r, r + W, ...; with every_worker_reads_all each
// rank takes all, in its own order), read front to back, shuffled within a window of
// StreamingOptions::shuffle_buffer encoded samples, and batched: the stages of shard_views.hpp. The workers
// take the batches in turn from that one sequential stream and decode, convert and augment them in parallel.
// Shards hold unequal numbers of samples, so every rank takes size() / W samples per epoch (each the same
// number, the few left over unread): those of its shards, in order, going on into its first shard again where
// they hold fewer. The batches depend on (seed, epoch, rank, W) alone, not on the number of workers; they are
// not those of a RecordSource over the same images (the order is another).
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
#include <memory>
#include <mutex>
#include <optional>
#include <range/v3/view/chunk.hpp>
#include <range/v3/view/take_exactly.hpp>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "sinew/core/error.hpp"
#include "sinew/data/detail/loader_plan.hpp"
#include "sinew/data/loader_options.hpp"
#include "sinew/data/loader_spec.hpp"
#include "sinew/data/record_source_spec.hpp"
#include "sinew/data/shard_source_spec.hpp"
#include "sinew/data/shard_views.hpp"

namespace sinew::data {

/// StreamingLoader's own options, beside the LoaderOptions every loader shares.
struct StreamingOptions {
  int workers = 2;           ///< threads that read and convert batches; 0: next() reads each batch itself
  int prefetch_batches = 2;  ///< batches prepared ahead of the trainer (with workers > 0); at least 1
  /// Over a ShardSource: encoded samples held to shuffle within (WebDataset's shuffle(n)); 0 or 1: none
  std::size_t shuffle_buffer = 1000;
};

namespace detail {

/// This rank's epoch of a ShardSource: the stages of shard_views.hpp, to the batches (see the top of this file).
template <class S>
auto shard_pipeline(const S& source, const LoaderOptions& o, std::size_t shuffle_buffer, std::size_t samples,
                  int epoch) {
  const bool disjoint = o.sharding == Sharding::disjoint;
  // Every rank's shuffle buffer draws its own stream; every_worker_reads_all also deals each its own shard order.
  const std::uint64_t own_seed = o.seed ^ (static_cast<std::uint64_t>(o.rank) * 0x9E3779B97F4A7C15u);
  const std::size_t shards = source.shards();
  std::vector<std::size_t> deal = disjoint ? views::shard_deal(shards, o.seed, epoch, o.rank, o.world_size, o.shuffle)
                                           : views::shard_deal(shards, own_seed, epoch, 0, 1, o.shuffle);
  return views::shard_samples(source, std::move(deal)) | ranges::views::take_exactly(samples) |
         views::shuffle_buffer(o.shuffle ? shuffle_buffer : 1, own_seed, epoch) |
         ranges::views::chunk(static_cast<std::size_t>(o.batch_size));
}

/// A ShardSource's epoch as StreamingLoader reads it: the stages of shard_views.hpp composed into one
/// sequential stream, handed out a batch at a time, in batch order, to whichever thread asks.
template <class S>
class shard_stream {
 public:
  /// This rank's samples per epoch and the batches they make (see the top of streaming_loader.hpp).
  static std::pair<std::size_t, std::size_t> counts(const S& source, const LoaderOptions& o) {
    const auto world = static_cast<std::size_t>(o.world_size), batch = static_cast<std::size_t>(o.batch_size);
    const bool disjoint = o.sharding == Sharding::disjoint;
    if (disjoint && source.shards() < world)
      throw data_error("streaming loader: " + std::to_string(source.shards()) + " shards cannot be dealt to " +
                       std::to_string(world) + " ranks (each needs at least one; pack the data into more shards)");
    std::size_t samples = disjoint ? source.size() / world : source.size();
    const std::size_t batches = o.drop_last ? samples / batch : (samples + batch - 1) / batch;
    if (batches == 0)
      throw data_error("streaming loader: with drop_last, each rank's " + std::to_string(samples) +
                       " samples make no full batch of " + std::to_string(batch) +
                       " (lower batch_size, or set drop_last = false)");
    if (o.drop_last) samples = batches * batch;
    return {samples, batches};
  }

  shard_stream(const S& source, const LoaderOptions& o, std::size_t shuffle_buffer, std::size_t samples, int epoch)
      : pipeline_(shard_pipeline(source, o, shuffle_buffer, samples, epoch)) {}

  /// Waits until the batches before `batch` were taken, then moves batch `batch`'s samples into `out`.
  void take(std::size_t batch, std::vector<ShardSample>& out) {
    std::unique_lock lock(mutex_);
    turned_.wait(lock, [&] { return turn_ == batch; });
    struct next_turn {  // also when reading throws: the batches after it must not wait for ever
      shard_stream* s;
      ~next_turn() {
        ++s->turn_;
        s->turned_.notify_all();
      }
    } pass_on{this};
    if (broken_)
      throw data_error("streaming loader: batch " + std::to_string(batch) +
                       " follows one whose shard could not be read");
    broken_ = true;  // until this batch is read whole
    if (!it_) it_.emplace(ranges::begin(*pipeline_));
    out.clear();
    if (*it_ != ranges::end(*pipeline_)) {
      for (ShardSample& sample : **it_) out.push_back(std::move(sample));
      ++*it_;
    }
    broken_ = false;
  }

 private:
  using pipeline = decltype(shard_pipeline(std::declval<const S&>(), LoaderOptions{}, 0, 0, 0));
  std::optional<pipeline> pipeline_;
  std::optional<ranges::iterator_t<pipeline>> it_;  // begun by the first take: building an epoch reads nothing
  std::size_t turn_ = 0;
  bool broken_ = false;
  std::mutex mutex_;
  std::condition_variable turned_;
};

}  // namespace detail

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
  static_assert(RecordSource<S> || ShardSource<S>,
                "StreamingLoader reads records one by one from files: give it a RecordSource (CifarRecords, "
                "IdxRecords, ImageFolder) or a ShardSource (TarShards); for a Dataset in memory use CachedLoader "
                "or ByteLoader");
  static constexpr bool kShards = !RecordSource<S>;  // read as shards, front to back
  struct no_stream {};
  // Named, not instantiated, for a RecordSource (whose records shard_stream could not read).
  using stream_type = std::conditional_t<kShards, detail::shard_stream<S>, no_stream>;

 public:
  /// Takes the source; options as every loader's, streaming: the threads and how far ahead they read.
  /// Throws a data_error for workers < 0 or prefetch_batches < 1.
  StreamingLoader(S source, LoaderOptions options = {}, StreamingOptions streaming = {})
      : source_(std::move(source)),
        plan_(detail::record_shape{source_.channels(), source_.height(), source_.width(), source_.num_classes(),
                                   source_.size()},
              options),
        options_(options),
        streaming_(checked(streaming)) {
    if constexpr (kShards) {
      std::tie(samples_, batches_) = detail::shard_stream<S>::counts(source_, options);
      stream_ = std::make_unique<stream_type>(source_, options, streaming_.shuffle_buffer, samples_, 0);
    } else {
      samples_ = plan_.samples(), batches_ = plan_.batches();
      order_ = plan_.epoch_indices(0);
    }
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
  std::size_t size() const { return samples_; }
  int batch_size() const { return plan_.batch_size(); }
  /// @}
  /// LoaderOptions::seed, which with the epoch fixes the order (checkpoints record it).
  std::uint64_t shuffle_seed() const { return plan_.seed(); }
  /// Calls to next() per epoch that return samples (Loader contract).
  std::size_t batches_per_epoch() const { return batches_; }
  /// The record source it reads.
  const S& source() const { return source_; }
  /// The options it was built with.
  const StreamingOptions& streaming_options() const { return streaming_; }

  /// Drops whatever was prepared, waits for batches in flight, and starts over with the order of `epoch`.
  void start_epoch(int epoch) {
    // Shuffled (or composed, for shards) while the workers still run.
    std::vector<std::size_t> order;
    std::unique_ptr<stream_type> stream;
    if constexpr (kShards)
      stream = std::make_unique<stream_type>(source_, options_, streaming_.shuffle_buffer, samples_, epoch);
    else
      order = plan_.epoch_indices(epoch);
    {
      std::unique_lock lock(mutex_);
      ++generation_;       // fills in flight belong to the old epoch: dropped when they finish
      restarting_ = true;  // and no new claims until order_ is the new one
      changed_.wait(lock, [&] { return in_flight_ == 0; });
      restarting_ = false;
      order_ = std::move(order);
      stream_ = std::move(stream);
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
    if (taken_ == batches_) return 0;
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
    std::vector<std::uint8_t> bytes;   // one record as read
    std::vector<float> converted;      // it converted, before augmentation
    std::vector<ShardSample> samples;  // a batch's samples as a shard holds them (shards only)
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
    if constexpr (kShards) {
      stream_->take(batch, s.samples);  // in batch order; the decoding below runs in parallel
      for (std::size_t i = 0; i < s.samples.size(); ++i) {
        labels[i] = source_.decode(s.samples[i], std::span(s.bytes), epoch_);
        if (labels[i] < 0 || labels[i] >= source_.num_classes())
          throw data_error("streaming loader: " + s.samples[i].name + " has label " + std::to_string(labels[i]) +
                           ", outside [0, " + std::to_string(source_.num_classes()) + ")");
        convert_and_augment(s, images + i * plan_.image_size(), s.samples[i].index);
      }
      return s.samples.size();
    } else {
      const auto batch_size = static_cast<std::size_t>(plan_.batch_size());
      const std::size_t first = batch * batch_size;
      const std::size_t count = std::min(batch_size, order_.size() - first);
      for (std::size_t i = 0; i < count; ++i) {
        const std::size_t sample = order_[first + i];
        if constexpr (requires { source_.read(sample, std::span(s.bytes), epoch_); })
          labels[i] = source_.read(sample, std::span(s.bytes), epoch_);  // a source that draws per epoch
        else
          labels[i] = source_.read(sample, std::span(s.bytes));
        convert_and_augment(s, images + i * plan_.image_size(), sample);
      }
      return count;
    }
  }

  // s.bytes, a record as read, to `out` converted and augmented; `sample` fixes the augmentation's draws.
  void convert_and_augment(scratch& s, float* out, std::size_t sample) const {
    if (plan_.augments()) {
      plan_.convert(s.bytes.data(), s.converted.data());
      plan_.augment(s.converted.data(), out, epoch_, sample);
    } else {
      plan_.convert(s.bytes.data(), out);
    }
  }

  // A worker: claims the next batch whose slot is free, fills it outside the lock, marks it ready.
  void work() {
    scratch s = make_scratch();
    std::unique_lock lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] {
        return stopping_ || (!restarting_ && failure_ == nullptr && claimed_ < batches_ && claimed_ < taken_ + slots_.size());
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
  const LoaderOptions options_;
  const StreamingOptions streaming_;
  std::size_t samples_ = 0, batches_ = 0;  // per epoch, this rank's
  scratch inline_scratch_;  // for next() itself when there are no workers

  // Guarded by mutex_, except as noted.
  std::vector<std::size_t> order_;  // this epoch's samples; changed only while in_flight_ == 0
  std::unique_ptr<stream_type> stream_;  // for shards, in place of order_; changed with it
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
