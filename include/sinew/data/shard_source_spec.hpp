// sinew/data/shard_source_spec.hpp: what ShardLoader asks of the sharded records it reads.
//
// A RecordSource (record_source_spec.hpp) is read at random; shards are read front to back, one pass each, as
// WebDataset reads its tars: what suits archives on a shared or networked file system.
//
// Contract of a ShardSource S (ShardLoader uses it from several worker threads at once):
//   channels(), height(), width()  the shape every decoded sample is fitted to, uint8 CHW. Constant, positive.
//   num_classes()                  every label lies in [0, num_classes()). Constant.
//   size()                         the samples of all shards. Constant.
//   shards(), shard_size(s)        the number of shards, and the samples shard s hands out; constant, they sum
//                                  to size(), and the samples of shard s are numbered (ShardSample::index) from
//                                  the sum of the sizes of the shards before it.
//   open(s)                        pre: s < shards(). A cursor on shard s that reads it sequentially:
//                                  cursor.next(sample) fills the shard's next sample (its index, its name for
//                                  messages, its encoded image, its label) and returns true, shard_size(s) times,
//                                  then returns false. Cursors are independent: several may be open, on any
//                                  threads. A shard that cannot be read throws data_error naming it.
//   decode(sample, pixels, epoch)  pre: pixels.size() == channels() * height() * width(). Writes the sample's
//                                  image fitted to that shape and returns its label. Random draws (a random
//                                  resized crop) depend on (seed, epoch, sample.index) alone. Safe to call from
//                                  several threads at once. A sample that does not decode throws data_error naming
//                                  the shard and the member.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sinew/core/error.hpp"
#include "sinew/data/record_source_spec.hpp"

namespace sinew::data {

/// One sample as a shard holds it: encoded, not yet decoded.
struct ShardSample {
  std::size_t index = 0;            ///< its number among all shards' samples (fixes its random draws)
  std::string name;                 ///< how messages call it: "shard-000003.tar: 000042.jpg"
  std::vector<std::uint8_t> bytes;  ///< the encoded image (a JPEG or PNG file's bytes)
  std::int32_t label = 0;           ///< its class
};

namespace req {

template <class S>
concept has_shards = requires(const S& source, std::size_t shard) {
  { source.shards() } -> std::same_as<std::size_t>;
  { source.shard_size(shard) } -> std::same_as<std::size_t>;
};

template <class S>
concept has_open = requires(const S& source, std::size_t shard, ShardSample& sample) {
  { source.open(shard).next(sample) } -> std::same_as<bool>;
};

template <class S>
concept has_decode = requires(const S& source, const ShardSample& sample, std::span<std::uint8_t> pixels, int epoch) {
  { source.decode(sample, pixels, epoch) } -> std::same_as<std::int32_t>;
};

}  // namespace req

/// Shards a ShardLoader can read front to back; see the contract above.
template <class S>
concept ShardSource = req::has_record_shape<S> && req::has_shards<S> && req::has_open<S> && req::has_decode<S>;

/// The smallest ShardSource: two shards of `first` and `second` 1x1 samples, whose one byte and label are the
/// sample's index modulo 2.
class example_shard_source {
 public:
  explicit example_shard_source(std::size_t first = 2, std::size_t second = 3) : sizes_{first, second} {}
  int channels() const { return 1; }
  int height() const { return 1; }
  int width() const { return 1; }
  int num_classes() const { return 2; }
  std::size_t size() const { return sizes_[0] + sizes_[1]; }
  std::size_t shards() const { return 2; }
  std::size_t shard_size(std::size_t shard) const { return sizes_[shard]; }

  /// Hands out shard `shard`'s samples in order.
  class cursor {
   public:
    cursor(std::size_t next, std::size_t end) : next_(next), end_(end) {}
    bool next(ShardSample& sample) {
      if (next_ == end_) return false;
      sample.index = next_;
      sample.name = "example: sample " + std::to_string(next_);
      sample.bytes.assign(1, static_cast<std::uint8_t>(next_ % 2));
      sample.label = static_cast<std::int32_t>(next_ % 2);
      ++next_;
      return true;
    }

   private:
    std::size_t next_, end_;
  };

  cursor open(std::size_t shard) const {
    if (shard >= 2) throw data_error("example_shard_source: shard " + std::to_string(shard) + " of 2");
    return shard == 0 ? cursor(0, sizes_[0]) : cursor(sizes_[0], size());
  }

  std::int32_t decode(const ShardSample& sample, std::span<std::uint8_t> pixels, int /*epoch*/) const {
    pixels[0] = sample.bytes.at(0);
    return sample.label;
  }

 private:
  std::size_t sizes_[2];
};

static_assert(ShardSource<example_shard_source>);

}  // namespace sinew::data
