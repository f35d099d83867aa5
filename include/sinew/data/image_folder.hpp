// sinew/data/image_folder.hpp: a folder of JPEG/PNG images in torchvision's ImageFolder layout.
//
//   root/cat/001.jpg, root/cat/x/002.png, root/dog/003.jpg ...
//
// Each sub-folder of root is a class; classes are numbered by their names sorted, and the files of a class
// (searched recursively) by their paths sorted, as torchvision's ImageFolder does. Hidden files (".DS_Store")
// are left out; every other file must be a JPEG or PNG image (image_file.hpp tells them by content).
//
// ImageFolder is a RecordSource: construction lists the files and reads nothing else, and read(i) decodes file i
// and fits it to the folder's one size (ImageFolderOptions::height x width): resized whole (bilinear, resize.hpp),
// or, with random_resized_crop, a random crop as torchvision's RandomResizedCrop(scale, ratio) resized to that
// size, drawn from (seed, epoch, index). So StreamingLoader streams it; read_image_folder decodes all of it into
// a Dataset for the in-memory loaders (at the crops of one epoch).
//
// A bad file (empty, not an image, corrupt, truncated) ends in a data_error naming it. With skip_bad_files, the
// constructor instead decodes every file once, leaves the bad ones out and counts them (skipped()).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "sinew/core/error.hpp"
#include "sinew/core/rng.hpp"
#include "sinew/data/dataset.hpp"
#include "sinew/data/image_file.hpp"
#include "sinew/data/record_source_spec.hpp"
#include "sinew/data/resize.hpp"

namespace sinew::data {

/// How an ImageFolder fits its images to one size.
struct ImageFolderOptions {
  /// every image is fitted to this size (pixels)
  /// @{
  int height = 224, width = 224;  // every image is fitted to this size
  /// @}
  bool skip_bad_files = false;    ///< leave out files that do not decode (counted) instead of failing
  /// torchvision's RandomResizedCrop: a crop of scale[0]..scale[1] of the area, aspect ratio ratio[0]..ratio[1]
  /// (drawn log-uniformly), resized to height x width; a new draw per (seed, epoch, index). Off: the whole image.
  bool random_resized_crop = false;
  /// the crop's share of the image's area, [min, max] (torchvision: (0.08, 1))
  float scale[2] = {0.08f, 1.0f};
  /// the crop's aspect ratio width / height, [min, max], drawn log-uniformly
  float ratio[2] = {3.0f / 4.0f, 4.0f / 3.0f};
  /// fixes the crops, with the epoch and the image's index
  std::uint64_t seed = 0;
};

/// Where random_resized_crop cuts: rows [top, top + height), columns [left, left + width).
struct CropWindow {
  /// the window: its top-left corner and size, in pixels of the image
  /// @{
  int top = 0, left = 0, height = 0, width = 0;
  /// @}
};

/// torchvision's RandomResizedCrop.get_params for an image of height x width: ten tries at a window of random
/// area and aspect ratio that fits, else the centre crop at the nearest allowed ratio. Draws from (seed, epoch,
/// index) alone, with sinew's own generator (the values differ from torch's, the distribution does not).
inline CropWindow random_resized_crop_window(int height, int width, const float (&scale)[2], const float (&ratio)[2],
                                             std::uint64_t seed, int epoch, std::size_t index) {
  std::mt19937_64 rng(mix64(mix64(mix64(seed ^ 0x7272632d63726f70ull) ^ static_cast<std::uint64_t>(epoch)) ^ index));
  const auto uniform = [&](double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(rng() >> 11) * 0x1.0p-53;
  };
  const double area = static_cast<double>(height) * static_cast<double>(width);
  const double log_lo = std::log(static_cast<double>(ratio[0])), log_hi = std::log(static_cast<double>(ratio[1]));
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * uniform(scale[0], scale[1]);
    const double aspect = std::exp(uniform(log_lo, log_hi));
    const int w = static_cast<int>(std::lround(std::sqrt(target * aspect)));
    const int h = static_cast<int>(std::lround(std::sqrt(target / aspect)));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const int top = static_cast<int>(uniform(0, height - h + 1));
      const int left = static_cast<int>(uniform(0, width - w + 1));
      return {std::min(top, height - h), std::min(left, width - w), h, w};
    }
  }
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  int w = width, h = height;
  if (in_ratio < ratio[0]) {
    h = static_cast<int>(std::lround(w / static_cast<double>(ratio[0])));
  } else if (in_ratio > ratio[1]) {
    w = static_cast<int>(std::lround(h * static_cast<double>(ratio[1])));
  }
  h = std::clamp(h, 1, height), w = std::clamp(w, 1, width);
  return {(height - h) / 2, (width - w) / 2, h, w};
}

/// Throws a data_error naming `who` unless `options` give a size and a crop fit_image can use.
inline void check_fit_options(const ImageFolderOptions& options, const std::string& who) {
  if (options.height <= 0 || options.width <= 0 || options.height > 16384 || options.width > 16384)
    throw data_error(who + ": the size is " + std::to_string(options.height) + "x" + std::to_string(options.width) +
                     "; give 1..16384 pixels on each side");
  if (!(options.scale[0] > 0 && options.scale[0] <= options.scale[1] && options.scale[1] <= 1) ||
      !(options.ratio[0] > 0 && options.ratio[0] <= options.ratio[1]))
    throw data_error(who + ": random_resized_crop needs 0 < scale[0] <= scale[1] <= 1 and 0 < ratio[0] <= ratio[1]");
}

/// Fits a decoded image to options.height x options.width into `pixels` (3 x height x width bytes) as an
/// ImageFolder does: with random_resized_crop the window of (options.seed, epoch, index) resized, else the whole
/// image resized (copied when it already has that size). TarShards fits its members the same way.
inline void fit_image(const Image& image, const ImageFolderOptions& options, int epoch, std::size_t index,
                      std::span<std::uint8_t> pixels) {
  if (options.random_resized_crop) {
    const CropWindow w =
        random_resized_crop_window(image.height, image.width, options.scale, options.ratio, options.seed, epoch, index);
    std::vector<std::uint8_t> crop(3 * static_cast<std::size_t>(w.height) * static_cast<std::size_t>(w.width));
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < w.height; ++y) {
        const std::uint8_t* src = image.pixels.data() +
                                  (static_cast<std::size_t>(c) * static_cast<std::size_t>(image.height) +
                                   static_cast<std::size_t>(w.top + y)) * static_cast<std::size_t>(image.width) +
                                  static_cast<std::size_t>(w.left);
        std::copy_n(src, w.width,
                    crop.data() + (static_cast<std::size_t>(c) * static_cast<std::size_t>(w.height) +
                                   static_cast<std::size_t>(y)) * static_cast<std::size_t>(w.width));
      }
    resize_bilinear(crop.data(), 3, w.height, w.width, pixels.data(), options.height, options.width);
  } else if (image.height == options.height && image.width == options.width) {
    std::copy(image.pixels.begin(), image.pixels.end(), pixels.begin());
  } else {
    resize_bilinear(image.pixels.data(), 3, image.height, image.width, pixels.data(), options.height, options.width);
  }
}

/// A folder of JPEG/PNG images in torchvision's ImageFolder layout, as a RecordSource for StreamingLoader
/// (see the top of this file; read_image_folder reads it into a Dataset).
class ImageFolder {
 public:
  /// Lists the classes and files under `root` (nothing is decoded unless options.skip_bad_files). Throws a
  /// data_error when root is missing or holds no class folder or no image.
  explicit ImageFolder(const std::filesystem::path& root, ImageFolderOptions options = {})
      : root_(root), options_(options) {
    check_fit_options(options, "image folder");
    std::error_code ec;
    if (!std::filesystem::is_directory(root, ec))
      throw data_error("image folder: " + root.string() + " is not a directory (give the folder that holds one " +
                       "sub-folder per class)");
    for (const auto& entry : std::filesystem::directory_iterator(root))
      if (entry.is_directory() && !hidden(entry.path())) classes_.push_back(entry.path().filename().string());
    std::sort(classes_.begin(), classes_.end());
    if (classes_.empty())
      throw data_error("image folder: " + root.string() + " holds no sub-folders; put each class's images in a " +
                       "sub-folder named after the class");
    for (std::size_t c = 0; c < classes_.size(); ++c) {
      std::vector<std::filesystem::path> found;
      for (const auto& entry : std::filesystem::recursive_directory_iterator(
               root / classes_[c], std::filesystem::directory_options::follow_directory_symlink))
        if (entry.is_regular_file() && !hidden(entry.path())) found.push_back(entry.path());
      std::sort(found.begin(), found.end());
      for (auto& path : found) files_.push_back({std::move(path), static_cast<std::int32_t>(c)});
    }
    if (options.skip_bad_files) drop_bad_files();
    if (files_.empty())
      throw data_error("image folder: " + root.string() + " holds no image files in its " +
                       std::to_string(classes_.size()) + " class folders" +
                       (skipped_ > 0 ? " that decode (" + std::to_string(skipped_) + " skipped as bad)" : ""));
  }

  /// The RecordSource contract: 3 channels (every image is decoded as RGB), the fitted size, the classes found,
  /// the files listed.
  /// @{
  int channels() const { return 3; }
  int height() const { return options_.height; }
  int width() const { return options_.width; }
  int num_classes() const { return static_cast<int>(classes_.size()); }
  std::size_t size() const { return files_.size(); }
  /// @}

  /// Class c's folder name; classes are numbered in sorted order.
  const std::string& class_name(int c) const { return classes_.at(static_cast<std::size_t>(c)); }
  /// Record i's file.
  const std::filesystem::path& path(std::size_t i) const { return files_.at(i).path; }
  /// Files left out by skip_bad_files, and their messages.
  std::size_t skipped() const { return skipped_; }
  /// The messages of the files left out by skip_bad_files, one per file.
  const std::vector<std::string>& skipped_messages() const { return skipped_messages_; }

  /// Record `index` fitted to height() x width() (the crop of epoch 0 with random_resized_crop).
  std::int32_t read(std::size_t index, std::span<std::uint8_t> pixels) const { return read(index, pixels, 0); }

  /// Record `index` as epoch `epoch` sees it: StreamingLoader passes the epoch, so crops change per epoch.
  std::int32_t read(std::size_t index, std::span<std::uint8_t> pixels, int epoch) const {
    if (index >= files_.size())
      throw data_error("image folder: record " + std::to_string(index) + " asked of " + std::to_string(size()));
    const std::size_t expected = 3 * static_cast<std::size_t>(options_.height) * static_cast<std::size_t>(options_.width);
    if (pixels.size() != expected)
      throw shape_error("image folder: read() got room for " + std::to_string(pixels.size()) + " bytes, an image is " +
                        std::to_string(expected));
    fit_image(read_image(files_[index].path, shown(index)), options_, epoch, index, pixels);
    return files_[index].label;
  }

 private:
  struct file {
    std::filesystem::path path;
    std::int32_t label;
  };

  static bool hidden(const std::filesystem::path& p) {
    const std::string name = p.filename().string();
    return !name.empty() && name[0] == '.';
  }

  // "cat/001.jpg": the path below root, enough to find the file and short enough to read.
  std::string shown(std::size_t index) const {
    return std::filesystem::relative(files_[index].path, root_).string();
  }

  void drop_bad_files() {
    std::vector<file> good;
    for (std::size_t i = 0; i < files_.size(); ++i) {
      try {
        read_image(files_[i].path, shown(i));
        good.push_back(files_[i]);
      } catch (const data_error& e) {
        ++skipped_;
        skipped_messages_.push_back(e.what());
      }
    }
    files_ = std::move(good);
  }

  std::filesystem::path root_;
  ImageFolderOptions options_;
  std::vector<std::string> classes_;
  std::vector<file> files_;
  std::size_t skipped_ = 0;
  std::vector<std::string> skipped_messages_;
};

static_assert(RecordSource<ImageFolder>);

/// Every image of `folder` decoded and fitted (the crops of `epoch` with random_resized_crop), as a Dataset for
/// CachedLoader or ByteLoader: channels x height x width bytes per image in memory.
inline Dataset read_image_folder(const ImageFolder& folder, int epoch = 0) {
  Dataset d;
  d.channels = folder.channels();
  d.height = folder.height();
  d.width = folder.width();
  d.num_classes = folder.num_classes();
  d.pixels.resize(folder.size() * d.image_size());
  d.labels.resize(folder.size());
  for (std::size_t i = 0; i < folder.size(); ++i)
    d.labels[i] = folder.read(i, std::span(d.pixels.data() + i * d.image_size(), d.image_size()), epoch);
  return d;
}

}  // namespace sinew::data
