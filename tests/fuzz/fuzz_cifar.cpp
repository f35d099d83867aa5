// Fuzz target: the CIFAR-10 and CIFAR-100 readers on one file, plain or gzip.
#include <cstddef>
#include <cstdint>

#include "fuzz_input_file.hpp"
#include "sinew/data/cifar.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = sinew::fuzz::input_file(data, size, "-cifar.bin");
  try {
    const auto set = sinew::data::read_cifar10(path);
    if (set.pixels.size() != set.size() * 3072 || set.num_classes != 10) __builtin_trap();
  } catch (const sinew::data_error&) {
  }
  try {
    const auto set = sinew::data::read_cifar100(path, sinew::data::Cifar100Label::coarse);
    if (set.pixels.size() != set.size() * 3072 || set.num_classes != 20) __builtin_trap();
  } catch (const sinew::data_error&) {
  }
  return 0;
}
