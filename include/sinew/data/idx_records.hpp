// sinew/data/idx_records.hpp: an IDX pair (MNIST, Fashion-MNIST) as records read by offset, for StreamingLoader.
//
// After the header, image i is rows * columns bytes at 16 + i * rows * columns of the images file and its label
// the byte at 8 + i of the labels file. The headers and sizes are checked when the files are opened (as read_idx
// checks them); each label when its record is read. A .gz file is inflated once into an anonymous temporary
// file and read from there (detail/record_file.hpp): gzip cannot be read by offset.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <span>
#include <string>

#include "sinew/core/error.hpp"
#include "sinew/data/detail/record_file.hpp"
#include "sinew/data/idx.hpp"
#include "sinew/data/record_source_spec.hpp"

namespace sinew::data {

/// An IDX pair (MNIST layout) as a RecordSource (data/record_source_spec.hpp) for StreamingLoader.
class IdxRecords {
 public:
  /// Opens and checks the images and labels files (either may be .gz); labels must lie in [0, num_classes),
  /// num_classes in 1..256.
  IdxRecords(const std::filesystem::path& images, const std::filesystem::path& labels, int num_classes = 10)
      : images_(images, "idx"), labels_(labels, "idx"), num_classes_(num_classes) {
    if (num_classes < 1 || num_classes > 256)
      throw data_error("idx: num_classes is " + std::to_string(num_classes) + ", expected 1..256 (labels are bytes)");
    const auto image_dims = header(images_, detail::kIdxImagesMagic, "an images file", "pixel");
    const auto label_dims = header(labels_, detail::kIdxLabelsMagic, "a labels file", "label");
    count_ = image_dims[0];
    rows_ = image_dims[1];
    cols_ = image_dims[2];
    if (rows_ == 0 || cols_ == 0 || rows_ > 65535 || cols_ > 65535)
      throw data_error("idx: " + images_.name() + " declares " + std::to_string(rows_) + "x" + std::to_string(cols_) +
                       " images, expected 1..65535 on each side (corrupt header?)");
    if (label_dims[0] != count_)
      throw data_error("idx: " + images_.name() + " holds " + std::to_string(count_) + " images but " +
                       labels_.name() + " holds " + std::to_string(label_dims[0]) +
                       " labels (are both from the same split, train or t10k?)");
  }

  /// The RecordSource contract (data/record_source_spec.hpp): the shape and class count of every record, and
  /// the number of records.
  /// @{
  int channels() const { return 1; }
  int height() const { return static_cast<int>(rows_); }
  int width() const { return static_cast<int>(cols_); }
  int num_classes() const { return num_classes_; }
  std::size_t size() const { return count_; }
  /// @}

  /// Reads record `index` (< size()): its pixels into `pixels`, and returns its label (checked).
  std::int32_t read(std::size_t index, std::span<std::uint8_t> pixels) const {
    if (index >= count_)
      throw data_error("idx: record " + std::to_string(index) + " asked of " + std::to_string(count_));
    if (pixels.size() != rows_ * cols_)
      throw shape_error("idx: read() got room for " + std::to_string(pixels.size()) + " bytes, an image is " +
                        std::to_string(rows_ * cols_));
    std::uint8_t label = 0;
    labels_.read(8 + index, std::span(&label, 1));
    if (label >= num_classes_)
      throw data_error("idx: " + labels_.name() + ": label " + std::to_string(label) + " at index " +
                       std::to_string(index) + " is out of range [0, " + std::to_string(num_classes_) +
                       ") (wrong num_classes, or not a labels file?)");
    images_.read(16 + static_cast<std::uint64_t>(index) * rows_ * cols_, pixels);
    return label;
  }

 private:
  // The dimensions in `file`'s header, checked against its magic and its size.
  static std::array<std::size_t, 3> header(const detail::record_file& file, std::uint32_t magic,
                                           const std::string& kind, const std::string& element) {
    const std::string name = "idx: " + file.name();
    const std::size_t ndims = magic & 0xFF, bytes = 4 + 4 * ndims;
    if (file.size() == 0) throw data_error(name + " is empty (0 bytes; truncated download?)");
    const auto too_short = [&] {
      return data_error(name + " is " + std::to_string(file.size()) + " bytes, too short for the " +
                        std::to_string(bytes) + "-byte header of " + kind + " (truncated download?)");
    };
    if (file.size() < 4) throw too_short();
    std::array<std::uint8_t, 16> head{};
    file.read(0, std::span(head.data(), 4));
    if (const std::uint32_t found = detail::read_big_endian_u32(head.data()); found != magic) {
      const std::uint32_t other = magic == detail::kIdxImagesMagic ? detail::kIdxLabelsMagic : detail::kIdxImagesMagic;
      const std::string hint = found == other ? kind + "; did you swap images and labels?"
                                              : kind + "; is this an IDX file of unsigned bytes?";
      throw data_error(name + ": wrong magic " + detail::hex32(found) + ", expected " + detail::hex32(magic) + " (" +
                       hint + ")");
    }
    if (file.size() < bytes) throw too_short();
    file.read(0, std::span(head.data(), bytes));
    std::array<std::size_t, 3> dims{1, 1, 1};
    std::uint64_t promised = 1;
    bool overflow = false;
    for (std::size_t d = 0; d < ndims; ++d) {
      dims[d] = detail::read_big_endian_u32(head.data() + 4 + 4 * d);
      if (dims[d] != 0 && promised > std::numeric_limits<std::uint64_t>::max() / dims[d]) overflow = true;
      promised *= dims[d];
    }
    const std::uint64_t held = file.size() - bytes;
    if (overflow || held < promised)
      throw data_error(name + " holds " + std::to_string(held) + " bytes of " + element + " data, header promises " +
                       (overflow ? std::string("more than 2^64") : std::to_string(promised)) +
                       " (truncated download?)");
    if (held > promised)
      throw data_error(name + " has " + std::to_string(held - promised) + " extra bytes after the " +
                       std::to_string(promised) + " bytes of " + element +
                       " data the header promises (wrong header, or two files joined?)");
    return dims;
  }

  detail::record_file images_, labels_;
  int num_classes_;
  std::size_t count_ = 0, rows_ = 0, cols_ = 0;
};

static_assert(RecordSource<IdxRecords>);

/// Fashion-MNIST's `split` in `dir` as records, like load_fashion_mnist but read on demand: the
/// {train,t10k}-{images-idx3,labels-idx1}-ubyte files, gzip-compressed (.gz, inflated once to a temporary file)
/// or plain.
inline IdxRecords fashion_mnist_records(Split split, const std::filesystem::path& dir = default_fashion_mnist_dir()) {
  if (!std::filesystem::is_directory(dir))
    throw data_error("fashion-mnist: directory " + dir.string() +
                     " does not exist (apt-get install dataset-fashion-mnist, set SINEW_FASHION_MNIST_DIR, or pass "
                     "the directory holding the files)");
  const std::string prefix = split == Split::train ? "train" : "t10k";
  const auto find = [&](const std::string& stem) {
    for (const auto& candidate : {dir / (stem + ".gz"), dir / stem})
      if (std::filesystem::exists(candidate)) return candidate;
    throw data_error("fashion-mnist: " + dir.string() + " holds neither " + stem + ".gz nor " + stem);
  };
  const auto images = find(prefix + "-images-idx3-ubyte");  // images first: the message names the first missing
  const auto labels = find(prefix + "-labels-idx1-ubyte");
  return IdxRecords(images, labels, 10);
}

}  // namespace sinew::data
