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
#include <new>
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

/// The most records one CIFAR file may hold: the largest official file, CIFAR-100's train.bin, has 50000.
/// A file has no header, so this bound is what keeps /dev/zero or a gzip bomb from filling the memory.
inline constexpr std::size_t kCifarMaxRecords = std::size_t(1) << 17;

/// Appends the records of `path` to `out`, keeping label byte `chosen`. Every label byte is checked,
/// the unused one too: a byte out of range means the file is not what the caller thinks it is. A plain
/// file's size is checked before reading; a gzip file is inflated record by record, never past the bound.
inline void append_cifar_file(const std::filesystem::path& path, std::span<const cifar_label_field> fields,
                              std::size_t chosen, Dataset& out) {
  file_source source(path, "cifar");
  const std::string& name = source.where();
  const bool cifar10 = fields.size() == 1;
  const std::size_t record = fields.size() + kCifarImageBytes;
  const std::uint64_t bound = std::uint64_t(kCifarMaxRecords) * record;
  const auto too_large = [&](const std::string& size) {
    return data_error(name + " is " + size + " bytes, more than the " + std::to_string(kCifarMaxRecords) +
                      " records of " + std::to_string(record) + " bytes a CIFAR file may hold (not a CIFAR-" +
                      (cifar10 ? "10" : "100") + " file? split it into files of at most that many records)");
  };
  const auto not_a_multiple = [&](std::uint64_t size) {
    const std::size_t other_record = cifar10 ? record + 1 : record - 1;
    const std::string hint = size % other_record != 0 ? "truncated download?"
                             : cifar10                ? "a CIFAR-100 file? use read_cifar100"
                                                      : "a CIFAR-10 file? use read_cifar10";
    return data_error(name + " is " + std::to_string(size) + " bytes, expected a multiple of " +
                      std::to_string(record) + " (" + hint + ")");
  };
  if (!source.compressed()) {
    if (source.disk_size() > bound) throw too_large(std::to_string(source.disk_size()));
    if (source.disk_size() % record != 0 && source.disk_size() != 0) throw not_a_multiple(source.disk_size());
    const std::size_t count = static_cast<std::size_t>(source.disk_size() / record);
    try {
      out.labels.reserve(out.size() + count);
      out.pixels.reserve(out.pixels.size() + count * kCifarImageBytes);
    } catch (const std::bad_alloc&) {
      throw data_error(name + ": cannot allocate memory for its " + std::to_string(count) +
                       " images (not enough memory; read fewer files at once)");
    }
  }

  const std::size_t first = out.size();
  std::vector<std::uint8_t> in(record);
  for (std::size_t r = 0;; ++r) {
    const std::size_t got = source.read(in.data(), record);
    if (got == 0) break;
    if (got < record) throw not_a_multiple(std::uint64_t(r) * record + got);
    if (r == kCifarMaxRecords) throw too_large("more than " + std::to_string(bound));
    for (std::size_t f = 0; f < fields.size(); ++f)
      if (in[f] >= fields[f].num_classes)
        throw data_error(name + ": record " + std::to_string(r) + " has " + std::string(fields[f].name) + " " +
                         std::to_string(in[f]) + ", expected 0.." + std::to_string(fields[f].num_classes - 1) +
                         " (corrupt file, or not CIFAR-" + (cifar10 ? "10" : "100") + "?)");
    try {
      out.labels.push_back(in[chosen]);
      out.pixels.insert(out.pixels.end(), in.begin() + std::ptrdiff_t(fields.size()), in.end());
    } catch (const std::bad_alloc&) {
      throw data_error(name + ": cannot allocate memory for record " + std::to_string(r) + " (" +
                       std::to_string(out.pixels.size()) + " bytes of images held; not enough memory)");
    }
  }
  if (out.size() == first) throw data_error(name + " is empty (0 bytes; truncated download?)");
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
