// sinew/data/cifar.hpp: the binary versions of CIFAR-10 and CIFAR-100.
//
// A file is a plain run of records with no header. Each record is its label byte(s), then a 32x32 colour
// image as three 1024-byte planes, red, green, blue, each row-major: already the CHW order a Dataset holds.
//   CIFAR-10   3073 bytes: label (0..9), pixels
//   CIFAR-100  3074 bytes: coarse label (0..19), fine label (0..99), pixels
// Files may also be gzip-compressed; zlib tells them by their magic bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sinew/core/error.hpp"
#include "sinew/data/dataset.hpp"
#include "sinew/data/detail/read_file.hpp"

namespace sinew::data {

/// Which of a CIFAR-100 record's two labels becomes Dataset::labels.
enum class Cifar100Label {
  fine,    // 100 classes
  coarse,  // 20 superclasses
};

namespace detail {

inline constexpr int kCifarSide = 32;
inline constexpr std::size_t kCifarImageBytes = 3 * kCifarSide * kCifarSide;

/// One label byte of a record: what messages call it and how many values it may take.
struct cifar_label_field {
  std::string_view name;
  int num_classes;
};

inline constexpr std::array<cifar_label_field, 1> kCifar10Fields{{{"label", 10}}};
inline constexpr std::array<cifar_label_field, 2> kCifar100Fields{{{"coarse label", 20}, {"fine label", 100}}};

/// Appends the records of `path` to `out`, keeping label byte `chosen`. Every label byte is checked,
/// the unused one too: a byte out of range means the file is not what the caller thinks it is.
inline void append_cifar_file(const std::filesystem::path& path, std::span<const cifar_label_field> fields,
                              std::size_t chosen, Dataset& out) {
  const std::vector<std::uint8_t> bytes = read_file(path, "cifar");
  const std::string name = "cifar: " + file_name(path);
  const std::size_t record = fields.size() + kCifarImageBytes;
  if (bytes.empty()) throw data_error(name + " is empty (0 bytes; truncated download?)");
  if (bytes.size() % record != 0) {
    const bool cifar10 = fields.size() == 1;
    const std::size_t other_record = cifar10 ? record + 1 : record - 1;
    const std::string hint = bytes.size() % other_record != 0 ? "truncated download?"
                             : cifar10 ? "a CIFAR-100 file? use read_cifar100"
                                       : "a CIFAR-10 file? use read_cifar10";
    throw data_error(name + " is " + std::to_string(bytes.size()) + " bytes, expected a multiple of " +
                     std::to_string(record) + " (" + hint + ")");
  }
  const std::size_t count = bytes.size() / record;
  const std::size_t first = out.size();
  out.labels.reserve(first + count);
  out.pixels.resize((first + count) * kCifarImageBytes);
  for (std::size_t r = 0; r < count; ++r) {
    const std::uint8_t* in = bytes.data() + r * record;
    for (std::size_t f = 0; f < fields.size(); ++f)
      if (in[f] >= fields[f].num_classes)
        throw data_error(name + ": record " + std::to_string(r) + " has " + std::string(fields[f].name) + " " +
                         std::to_string(in[f]) + ", expected 0.." + std::to_string(fields[f].num_classes - 1) +
                         " (corrupt file, or not CIFAR-" + (fields.size() == 1 ? "10" : "100") + "?)");
    out.labels.push_back(in[chosen]);
    std::memcpy(out.pixels.data() + (first + r) * kCifarImageBytes, in + fields.size(), kCifarImageBytes);
  }
}

inline Dataset read_cifar(std::span<const std::filesystem::path> files, std::span<const cifar_label_field> fields,
                          std::size_t chosen) {
  if (files.empty()) throw data_error("cifar: no files given (pass at least one .bin file)");
  Dataset data;
  data.channels = 3;
  data.height = kCifarSide;
  data.width = kCifarSide;
  data.num_classes = fields[chosen].num_classes;
  for (const auto& file : files) append_cifar_file(file, fields, chosen, data);
  return data;
}

inline std::vector<std::filesystem::path> paths_in(const std::filesystem::path& dir,
                                                   std::initializer_list<std::string_view> names) {
  std::vector<std::filesystem::path> paths;
  for (const std::string_view name : names) paths.push_back(dir / name);
  return paths;
}

}  // namespace detail

/// The records of every file, in order, as 3x32x32 images with 10 classes.
inline Dataset read_cifar10(std::span<const std::filesystem::path> files) {
  return detail::read_cifar(files, detail::kCifar10Fields, 0);
}

inline Dataset read_cifar10(const std::filesystem::path& file) { return read_cifar10(std::span(&file, 1)); }

/// The records of every file, in order, as 3x32x32 images labelled with 100 fine classes or 20 coarse ones.
inline Dataset read_cifar100(std::span<const std::filesystem::path> files,
                             Cifar100Label label = Cifar100Label::fine) {
  return detail::read_cifar(files, detail::kCifar100Fields, label == Cifar100Label::coarse ? 0 : 1);
}

inline Dataset read_cifar100(const std::filesystem::path& file, Cifar100Label label = Cifar100Label::fine) {
  return read_cifar100(std::span(&file, 1), label);
}

/// The named files of a cifar-10-batches-bin directory, in order:
///   load_cifar10(dir, {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin"})  // train
///   load_cifar10(dir, {"data_batch_5.bin"})                                                              // held out
inline Dataset load_cifar10(const std::filesystem::path& dir, std::initializer_list<std::string_view> names) {
  return read_cifar10(detail::paths_in(dir, names));
}

/// The named files of a cifar-100-binary directory ("train.bin", "test.bin"), in order.
inline Dataset load_cifar100(const std::filesystem::path& dir, std::initializer_list<std::string_view> names,
                             Cifar100Label label = Cifar100Label::fine) {
  return read_cifar100(detail::paths_in(dir, names), label);
}

}  // namespace sinew::data
