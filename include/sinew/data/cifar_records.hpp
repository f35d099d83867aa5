// sinew/data/cifar_records.hpp: CIFAR-10/100 binary files as records read by offset, for StreamingLoader.
//
// The files are a plain run of fixed-size records (cifar.hpp describes them), so record i is read at
// i * record_bytes of its file, and nothing else is held. A gzip-compressed file is inflated once into an
// anonymous temporary file and read from there (detail/record_file.hpp). Sizes are checked when the files
// are opened; each label byte, the unused CIFAR-100 one too, when its record is read.
#pragma once

#include <algorithm>
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
#include "sinew/data/cifar.hpp"
#include "sinew/data/detail/record_file.hpp"
#include "sinew/data/record_source_spec.hpp"

namespace sinew::data {

/// CIFAR-10/100 binary files as a RecordSource (data/record_source_spec.hpp) for StreamingLoader: record i
/// read by offset (see the top of this file).
class CifarRecords {
 public:
  /// CIFAR-10 files (3073-byte records), in order.
  static CifarRecords cifar10(std::span<const std::filesystem::path> files) {
    return CifarRecords(files, detail::kCifar10Fields, 0);
  }
  /// CIFAR-100 files (3074-byte records), in order, labelled with the fine or the coarse label.
  static CifarRecords cifar100(std::span<const std::filesystem::path> files,
                               Cifar100Label label = Cifar100Label::fine) {
    return CifarRecords(files, detail::kCifar100Fields, label == Cifar100Label::coarse ? 0 : 1);
  }

  /// The RecordSource contract (data/record_source_spec.hpp): the shape and class count of every record, and
  /// the number of records.
  /// @{
  int channels() const { return 3; }
  int height() const { return detail::kCifarSide; }
  int width() const { return detail::kCifarSide; }
  int num_classes() const { return fields_[chosen_].num_classes; }
  std::size_t size() const { return first_.back(); }
  /// @}

  /// Reads record `index` (< size()): its 3x32x32 pixels into `pixels` (CHW), and returns its label. Throws
  /// a data_error naming the file for a short read or a label out of range.
  std::int32_t read(std::size_t index, std::span<std::uint8_t> pixels) const {
    if (index >= size())
      throw data_error("cifar: record " + std::to_string(index) + " asked of " + std::to_string(size()));
    if (pixels.size() != detail::kCifarImageBytes)
      throw shape_error("cifar: read() got room for " + std::to_string(pixels.size()) + " bytes, a record's image is " +
                        std::to_string(detail::kCifarImageBytes));
    const auto f = static_cast<std::size_t>(std::upper_bound(first_.begin(), first_.end(), index) - first_.begin()) - 1;
    const std::size_t r = index - first_[f];
    std::array<std::uint8_t, 2 + detail::kCifarImageBytes> record;
    const std::size_t bytes = fields_.size() + detail::kCifarImageBytes;
    files_[f].read(static_cast<std::uint64_t>(r) * bytes, std::span(record.data(), bytes));
    for (std::size_t k = 0; k < fields_.size(); ++k)
      if (record[k] >= fields_[k].num_classes)
        throw data_error("cifar: " + files_[f].name() + ": record " + std::to_string(r) + " has " +
                         std::string(fields_[k].name) + " " + std::to_string(record[k]) + ", expected 0.." +
                         std::to_string(fields_[k].num_classes - 1) + " (corrupt file, or not CIFAR-" +
                         (fields_.size() == 1 ? "10" : "100") + "?)");
    std::memcpy(pixels.data(), record.data() + fields_.size(), detail::kCifarImageBytes);
    return record[chosen_];
  }

 private:
  CifarRecords(std::span<const std::filesystem::path> files, std::span<const detail::cifar_label_field> fields,
               std::size_t chosen)
      : fields_(fields), chosen_(chosen) {
    if (files.empty()) throw data_error("cifar: no files given (pass at least one .bin file)");
    const std::size_t record = fields.size() + detail::kCifarImageBytes;
    first_.push_back(0);
    for (const auto& path : files) {
      detail::record_file& file = files_.emplace_back(path, "cifar");
      const std::uint64_t bytes = file.size();
      if (bytes == 0) throw data_error("cifar: " + file.name() + " is empty (0 bytes; truncated download?)");
      if (bytes % record != 0) {
        const bool cifar10 = fields.size() == 1;
        const std::size_t other_record = cifar10 ? record + 1 : record - 1;
        const std::string hint = bytes % other_record != 0 ? "truncated download?"
                                 : cifar10                 ? "a CIFAR-100 file? use CifarRecords::cifar100"
                                                           : "a CIFAR-10 file? use CifarRecords::cifar10";
        throw data_error("cifar: " + file.name() + " is " + std::to_string(bytes) + " bytes, expected a multiple of " +
                         std::to_string(record) + " (" + hint + ")");
      }
      first_.push_back(first_.back() + static_cast<std::size_t>(bytes / record));
    }
  }

  std::span<const detail::cifar_label_field> fields_;  // points into a constant of cifar.hpp
  std::size_t chosen_;
  std::vector<detail::record_file> files_;
  std::vector<std::size_t> first_;  // first_[f]: the index of file f's first record; back(): the total
};

static_assert(RecordSource<CifarRecords>);

/// The named files of a cifar-10-batches-bin directory as records, like load_cifar10 but read on demand.
inline CifarRecords cifar10_records(const std::filesystem::path& dir, std::initializer_list<std::string_view> names) {
  const auto paths = detail::paths_in(dir, names);
  return CifarRecords::cifar10(paths);
}

/// The named files of a cifar-100-binary directory ("train.bin", "test.bin") as records.
inline CifarRecords cifar100_records(const std::filesystem::path& dir, std::initializer_list<std::string_view> names,
                                     Cifar100Label label = Cifar100Label::fine) {
  const auto paths = detail::paths_in(dir, names);
  return CifarRecords::cifar100(paths, label);
}

}  // namespace sinew::data
