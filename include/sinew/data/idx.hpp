// sinew/data/idx.hpp: the IDX files of MNIST and Fashion-MNIST, plain or gzip-compressed.
//
// An IDX file is a big-endian header, then its elements in row-major order. The header is a magic number
// 0x000008NN (0x08: unsigned bytes, NN: the number of dimensions) and one uint32 per dimension:
//   images  0x00000803  count, rows, columns
//   labels  0x00000801  count
// Every size is checked against the file, so a truncated download, a swapped pair or a file with bytes
// left over is an error that names the file, never a silently wrong dataset. The header is checked before the
// elements are read, and they are read only up to what it promises (detail/read_file.hpp): a header declaring
// 2^60 bytes or 2^31 images, or a .gz that inflates to far more than declared, costs no memory.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "sinew/core/error.hpp"
#include "sinew/data/dataset.hpp"
#include "sinew/data/detail/read_file.hpp"

namespace sinew::data {

namespace detail {

inline constexpr std::uint32_t kIdxImagesMagic = 0x00000803;
inline constexpr std::uint32_t kIdxLabelsMagic = 0x00000801;

inline std::uint32_t read_big_endian_u32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

/// "0x00000803": how the format's documentation writes a magic number.
inline std::string hex32(std::uint32_t value) {
  constexpr char kDigits[] = "0123456789ABCDEF";
  std::string text = "0x00000000";
  for (int i = 9; i >= 2; --i, value >>= 4) text[static_cast<std::size_t>(i)] = kDigits[value & 0xF];
  return text;
}

/// An IDX file checked against its header: its dimensions, and its bytes with the header cut off.
struct idx_contents {
  std::vector<std::size_t> dims;
  std::vector<std::uint8_t> elements;
};

/// The most element bytes an IDX file may hold (4 GiB; MNIST's training images are 47 MB, EMNIST's largest
/// split 640 MB): a header that promises more is corrupt, and is refused before anything is allocated.
inline constexpr std::uint64_t kIdxMaxBytes = std::uint64_t(1) << 32;
/// The most images or labels an IDX file may count (a Dataset indexes them with int).
inline constexpr std::uint64_t kIdxMaxCount = (std::uint64_t(1) << 31) - 1;

/// Reads the IDX file at `path`, which must carry `magic` (images or labels) and hold exactly the
/// elements its header promises. `element` ("pixel", "label") names them in messages. The header is read
/// first; the elements are read only up to the promised count (and one byte more, to tell that there are
/// too many), so a small .gz that inflates to gigabytes costs no more memory than its header promises.
inline idx_contents read_idx_file(const std::filesystem::path& path, std::uint32_t magic, std::string_view element) {
  file_source source(path, "idx");
  const std::string& name = source.where();
  const bool images = magic == kIdxImagesMagic;
  const std::string kind = images ? "an images file" : "a labels file";
  const std::size_t ndims = magic & 0xFF;
  const std::size_t header = 4 + 4 * ndims;

  std::uint8_t head[4 + 4 * 3] = {};
  static_assert(sizeof head >= 4 + 4 * (kIdxImagesMagic & 0xFF));
  const std::size_t got = source.read(head, header);
  if (got == 0) throw data_error(name + " is empty (0 bytes; truncated download?)");
  if (got < 4)
    throw data_error(name + " is " + std::to_string(got) + " bytes, too short for the " + std::to_string(header) +
                     "-byte header of " + kind + " (truncated download?)");
  if (const std::uint32_t found = read_big_endian_u32(head); found != magic) {
    const std::uint32_t other = images ? kIdxLabelsMagic : kIdxImagesMagic;
    const std::string hint = found == other ? kind + "; did you swap images and labels?"
                                            : kind + "; is this an IDX file of unsigned bytes?";
    throw data_error(name + ": wrong magic " + hex32(found) + ", expected " + hex32(magic) + " (" + hint + ")");
  }
  if (got < header)
    throw data_error(name + " is " + std::to_string(got) + " bytes, too short for the " + std::to_string(header) +
                     "-byte header of " + kind + " (truncated download?)");

  idx_contents contents;
  std::uint64_t promised = 1;  // at most (2^32 - 1)^3: below 2^96, so compared step by step against the bound
  bool too_large = false;
  for (std::size_t d = 0; d < ndims; ++d) {
    const std::uint64_t dim = read_big_endian_u32(head + 4 + 4 * d);
    contents.dims.push_back(static_cast<std::size_t>(dim));
    if (dim != 0 && promised > kIdxMaxBytes / dim) too_large = true;
    else promised *= dim;
  }
  if (contents.dims[0] > kIdxMaxCount)
    throw data_error(name + " declares " + std::to_string(contents.dims[0]) + (images ? " images" : " labels") +
                     ", more than the " + std::to_string(kIdxMaxCount) + " a dataset can hold (corrupt header?)");
  if (too_large || promised > kIdxMaxBytes)
    throw data_error(name + " declares more than " + std::to_string(kIdxMaxBytes) + " bytes of " +
                     std::string(element) + " data, more than an IDX data set holds (corrupt header?)");
  // What the file can hold: its size if plain (exact, so a short file is reported before reading), 1032 times
  // it if gzip (deflate's limit, so a header that promises more is refused before allocating).
  const std::uint64_t can_hold = source.max_content_size() - std::min<std::uint64_t>(header, source.max_content_size());
  if (promised > can_hold) {
    if (!source.compressed())
      throw data_error(name + " holds " + std::to_string(can_hold) + " bytes of " + std::string(element) +
                       " data, header promises " + std::to_string(promised) + " (truncated download?)");
    throw data_error(name + " is " + std::to_string(source.disk_size()) + " bytes of gzip, which cannot inflate to the " +
                     std::to_string(promised) + " bytes of " + std::string(element) +
                     " data its header promises (corrupt header, or truncated download?)");
  }
  if (!source.compressed() && can_hold > promised)
    throw data_error(name + " has " + std::to_string(can_hold - promised) + " extra bytes after the " +
                     std::to_string(promised) + " bytes of " + std::string(element) +
                     " data the header promises (wrong header, or two files joined?)");

  reserve_for(contents.elements, static_cast<std::size_t>(promised), source);
  append_from(source, contents.elements, static_cast<std::size_t>(promised));
  if (contents.elements.size() < promised)
    throw data_error(name + " holds " + std::to_string(contents.elements.size()) + " bytes of " +
                     std::string(element) + " data, header promises " + std::to_string(promised) +
                     " (truncated download?)");
  if (!source.at_end())
    throw data_error(name + " inflates to more than the " + std::to_string(promised) + " bytes of " +
                     std::string(element) + " data the header promises (wrong header, or two files joined?)");
  return contents;
}

}  // namespace detail

/// The images and labels of an IDX pair (MNIST layout), as 1-channel images. Either file may be gzip.
/// Every label must lie in [0, num_classes); num_classes is at most 256, as IDX labels are single bytes.
inline Dataset read_idx(const std::filesystem::path& images, const std::filesystem::path& labels,
                        int num_classes = 10) {
  if (num_classes < 1 || num_classes > 256)
    throw data_error("idx: num_classes is " + std::to_string(num_classes) + ", expected 1..256 (labels are bytes)");
  detail::idx_contents image_file = detail::read_idx_file(images, detail::kIdxImagesMagic, "pixel");
  const detail::idx_contents label_file = detail::read_idx_file(labels, detail::kIdxLabelsMagic, "label");
  const std::size_t count = image_file.dims[0], rows = image_file.dims[1], cols = image_file.dims[2];
  if (rows == 0 || cols == 0 || rows > 65535 || cols > 65535)
    throw data_error("idx: " + detail::file_name(images) + " declares " + std::to_string(rows) + "x" +
                     std::to_string(cols) + " images, expected 1..65535 on each side (corrupt header?)");
  if (label_file.dims[0] != count)
    throw data_error("idx: " + detail::file_name(images) + " holds " + std::to_string(count) + " images but " +
                     detail::file_name(labels) + " holds " + std::to_string(label_file.dims[0]) +
                     " labels (are both from the same split, train or t10k?)");

  Dataset data;
  data.channels = 1;
  data.height = static_cast<int>(rows);
  data.width = static_cast<int>(cols);
  data.num_classes = num_classes;
  data.labels.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const int label = label_file.elements[i];
    if (label >= num_classes)
      throw data_error("idx: " + detail::file_name(labels) + ": label " + std::to_string(label) + " at index " +
                       std::to_string(i) + " is out of range [0, " + std::to_string(num_classes) +
                       ") (wrong num_classes, or not a labels file?)");
    data.labels.push_back(label);
  }
  data.pixels = std::move(image_file.elements);
  return data;
}

namespace detail {

/// Loads `prefix`-{images-idx3,labels-idx1}-ubyte from `dir`, gzip-compressed (.gz) or plain.
/// `set` ("fashion-mnist") and `fix` (how to get the files) go into the message when they are missing.
inline Dataset load_idx_split(std::string_view set, Split split, const std::filesystem::path& dir,
                              std::string_view fix) {
  const std::string where = std::string(set) + ": ";
  if (!std::filesystem::is_directory(dir))
    throw data_error(where + "directory " + dir.string() + " does not exist (" + std::string(fix) + ")");
  const std::string prefix = split == Split::train ? "train" : "t10k";
  const auto find = [&](const std::string& stem) {
    for (const auto& candidate : {dir / (stem + ".gz"), dir / stem})
      if (std::filesystem::exists(candidate)) return candidate;
    throw data_error(where + dir.string() + " holds neither " + stem + ".gz nor " + stem + " (" + std::string(fix) +
                     ")");
  };
  const auto images = find(prefix + "-images-idx3-ubyte");
  const auto labels = find(prefix + "-labels-idx1-ubyte");
  return read_idx(images, labels, 10);
}

}  // namespace detail

/// Where load_fashion_mnist looks by default: $SINEW_FASHION_MNIST_DIR if set, else where Debian's
/// dataset-fashion-mnist package installs the files.
inline std::filesystem::path default_fashion_mnist_dir() {
  if (const char* dir = std::getenv("SINEW_FASHION_MNIST_DIR"); dir != nullptr && *dir != '\0') return dir;
  return "/usr/share/datasets/fashion-mnist";
}

/// Fashion-MNIST: 60000 training or 10000 test images, 1x28x28, 10 classes.
/// `dir` holds {train,t10k}-{images-idx3,labels-idx1}-ubyte, each gzip-compressed (.gz) or plain.
inline Dataset load_fashion_mnist(Split split, const std::filesystem::path& dir = default_fashion_mnist_dir()) {
  return detail::load_idx_split(
      "fashion-mnist", split, dir,
      "apt-get install dataset-fashion-mnist, set SINEW_FASHION_MNIST_DIR, or pass the directory holding the files");
}

/// MNIST: 60000 training or 10000 test images, 1x28x28, 10 classes, in the same file layout as
/// load_fashion_mnist. No Debian package ships MNIST, so the directory is always given.
inline Dataset load_mnist(Split split, const std::filesystem::path& dir) {
  return detail::load_idx_split("mnist", split, dir,
                                "download MNIST's four -ubyte.gz files there, or pass the directory holding them");
}

}  // namespace sinew::data
