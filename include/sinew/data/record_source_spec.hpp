// sinew/data/record_source_spec.hpp: what StreamingLoader asks of the records it streams.
//
// Contract of a RecordSource S (StreamingLoader reads it from several worker threads at once):
//   channels(), height(), width()  the shape of every record's image, uint8 CHW. Constant, positive.
//   num_classes()                  every label lies in [0, num_classes()). Constant.
//   size()                         the number of records. Constant.
//   read(i, pixels)                pre: i < size(), pixels.size() == channels() * height() * width().
//                                  Writes record i's image into pixels and returns its label. Reads the record
//                                  where it lies (a file at an offset, an image file): nothing of the data set
//                                  is held between calls. Safe to call from several threads at once. A record
//                                  that cannot be read, or whose label is out of range, throws data_error
//                                  naming the file (and the record).
// Optionally, read(i, pixels, epoch): a source whose records change per epoch (ImageFolder's random resized crop)
// takes the epoch, and StreamingLoader passes it; its draws must depend on (seed, epoch, i) alone.
// The readers' Dataset (dataset.hpp) holds the same records in memory: read(i) gives sample i of the Dataset
// that read_cifar10 / read_idx / ... return for the same files.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>

#include "sinew/core/error.hpp"

namespace sinew::data {

namespace req {

template <class S>
concept has_record_shape = requires(const S& source) {
  { source.channels() } -> std::same_as<int>;
  { source.height() } -> std::same_as<int>;
  { source.width() } -> std::same_as<int>;
  { source.num_classes() } -> std::same_as<int>;
  { source.size() } -> std::same_as<std::size_t>;
};

template <class S>
concept has_read = requires(const S& source, std::size_t index, std::span<std::uint8_t> pixels) {
  { source.read(index, pixels) } -> std::same_as<std::int32_t>;
};

}  // namespace req

/// Records a StreamingLoader can read one by one; see the contract above.
template <class S>
concept RecordSource = req::has_record_shape<S> && req::has_read<S>;

/// The smallest RecordSource: `count` 1x1 images whose pixel and label are the record's index modulo 2.
class example_record_source {
 public:
  explicit example_record_source(std::size_t count = 5) : count_(count) {}
  int channels() const { return 1; }
  int height() const { return 1; }
  int width() const { return 1; }
  int num_classes() const { return 2; }
  std::size_t size() const { return count_; }
  std::int32_t read(std::size_t index, std::span<std::uint8_t> pixels) const {
    if (index >= count_) throw data_error("example_record_source: record " + std::to_string(index) + " of " +
                                          std::to_string(count_));
    pixels[0] = static_cast<std::uint8_t>(index % 2);
    return static_cast<std::int32_t>(index % 2);
  }

 private:
  std::size_t count_;
};

static_assert(RecordSource<example_record_source>);

}  // namespace sinew::data
