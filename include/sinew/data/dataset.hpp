// sinew/data/dataset.hpp: a labelled image set held as decoded bytes, the form every reader returns.
//
// Images stay uint8 (a quarter of the memory of float) until a loader converts a batch; the readers
// (idx.hpp, cifar.hpp) fill a Dataset, and take/concat cut and join them for held-out splits and small tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sinew/core/error.hpp"

namespace sinew::data {

/// Which half of a data set that ships a training and a test part.
enum class Split { train, test };

/// Labelled images, NCHW uint8: image i is pixels[i * image_size(), (i + 1) * image_size()).
struct Dataset {
  /// image shape: channels, height, width
  /// @{
  int channels = 0, height = 0, width = 0;
  /// @}
  /// labels lie in [0, num_classes)
  int num_classes = 0;
  std::vector<std::uint8_t> pixels;  ///< size() * image_size() bytes
  std::vector<std::int32_t> labels;  ///< each in [0, num_classes)

  /// The number of images.
  std::size_t size() const { return labels.size(); }
  /// Bytes per image: channels x height x width.
  std::size_t image_size() const {
    return static_cast<std::size_t>(channels) * static_cast<std::size_t>(height) * static_cast<std::size_t>(width);
  }
};

namespace detail {

/// "3x32x32 with 10 classes", for messages that compare datasets.
inline std::string describe_shape(const Dataset& d) {
  return std::to_string(d.channels) + "x" + std::to_string(d.height) + "x" + std::to_string(d.width) + " with " +
         std::to_string(d.num_classes) + " classes";
}

}  // namespace detail

/// A copy of samples [first, first + count) of `data`, for a held-out split or a small test.
inline Dataset take(const Dataset& data, std::size_t first, std::size_t count) {
  if (first > data.size() || count > data.size() - first)
    throw data_error("take: samples [" + std::to_string(first) + ", " + std::to_string(first + count) +
                     ") lie outside a dataset of " + std::to_string(data.size()));
  Dataset part;
  part.channels = data.channels;
  part.height = data.height;
  part.width = data.width;
  part.num_classes = data.num_classes;
  const auto first_label = data.labels.begin() + static_cast<std::ptrdiff_t>(first);
  part.labels.assign(first_label, first_label + static_cast<std::ptrdiff_t>(count));
  const auto first_pixel = data.pixels.begin() + static_cast<std::ptrdiff_t>(first * data.image_size());
  part.pixels.assign(first_pixel, first_pixel + static_cast<std::ptrdiff_t>(count * data.image_size()));
  return part;
}

/// The samples of every part, in order. The parts must agree on image shape and number of classes:
/// joining CIFAR-10 with CIFAR-100, or MNIST with padded MNIST, is a mistake worth an error.
inline Dataset concat(std::span<const Dataset> parts) {
  if (parts.empty()) return {};
  Dataset joined;
  joined.channels = parts[0].channels;
  joined.height = parts[0].height;
  joined.width = parts[0].width;
  joined.num_classes = parts[0].num_classes;
  std::size_t total = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const Dataset& part = parts[i];
    if (part.channels != joined.channels || part.height != joined.height || part.width != joined.width ||
        part.num_classes != joined.num_classes)
      throw data_error("concat: dataset " + std::to_string(i) + " is " + detail::describe_shape(part) +
                       ", but dataset 0 is " + detail::describe_shape(parts[0]) + " (all parts must match)");
    total += part.size();
  }
  joined.labels.reserve(total);
  joined.pixels.reserve(total * joined.image_size());
  for (const Dataset& part : parts) {
    joined.labels.insert(joined.labels.end(), part.labels.begin(), part.labels.end());
    joined.pixels.insert(joined.pixels.end(), part.pixels.begin(), part.pixels.end());
  }
  return joined;
}

}  // namespace sinew::data
