// Fuzz target: the IDX reader on one file, plain or gzip (the reader tells them by their magic bytes), read as
// an images file and as a labels file, then as the images of a pair with a fixed, valid labels file.
#include <cstddef>
#include <cstdint>

#include "fuzz_input_file.hpp"
#include "sinew/data/idx.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace d = sinew::data::detail;
  const auto path = sinew::fuzz::input_file(data, size, "-idx");
  for (const std::uint32_t magic : {d::kIdxImagesMagic, d::kIdxLabelsMagic}) {
    try {
      d::read_idx_file(path, magic, "element");
    } catch (const sinew::data_error&) {
    }
  }
  static const auto labels = [] {
    const std::uint8_t file[] = {0, 0, 8, 1, 0, 0, 0, 2, 3, 7};  // two labels, 3 and 7
    return sinew::fuzz::input_file(file, sizeof file, "-labels");
  }();
  try {
    const auto set = sinew::data::read_idx(path, labels);
    if (set.pixels.size() != set.size() * set.image_size()) __builtin_trap();
  } catch (const sinew::data_error&) {
  }
  return 0;
}
