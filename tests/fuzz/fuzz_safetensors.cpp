// Fuzz target: the safetensors reader and a strict load into a network with every naming construct and a
// BatchNorm (so the I64 num_batches_tracked path runs). Any input may be refused with a sinew::error; a
// crash, a sanitizer report, another exception, or a refused load that changed the model is a bug.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_input_file.hpp"
#include "sinew/io/safetensors.hpp"
#include "sinew/layers.hpp"
#include "sinew/nets/sequential.hpp"

namespace {
using namespace sinew;
using Block = Module<"", Residual<Chain<Named<"conv", Conv2d<8, 3, 2, 1, false>>, Named<"bn", BatchNorm2d>>,
                                  ProjectIfNeeded<8, 2>>,
                     ReLU>;
using Net = Sequential<Input<3, 8, 8>, Named<"stem", Conv2d<4, 3, 1, 1, false>>, Named<"bn", BatchNorm2d>, ReLU,
                       Module<"blocks", Block>, GlobalAvgPool, Flatten, Dense<5>>;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = sinew::fuzz::input_file(data, size, ".safetensors");
  try {
    io::SafetensorsReader reader(path);
    for (const auto& t : reader.tensors()) {  // every tensor the reader accepts can be read
      std::vector<std::byte> bytes(t.end - t.begin);
      reader.read(t, bytes);
    }
  } catch (const sinew::error&) {
  }
  // A refused load leaves the model bit-identical (io/safetensors.hpp checks everything before the first write).
  static std::vector<float> params(Net::kParamSpan), buffers(Net::kBufferSpan);
  static const std::vector<float> pattern = [] {
    std::vector<float> p(Net::kParamSpan + Net::kBufferSpan);
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = float(i % 1009) * 0.5f - 7.25f;
    return p;
  }();
  std::copy_n(pattern.begin(), params.size(), params.begin());
  std::copy_n(pattern.begin() + std::ptrdiff_t(params.size()), buffers.size(), buffers.begin());
  try {
    io::load_safetensors<Net>(path, params, buffers);
  } catch (const sinew::error&) {
    if (std::memcmp(params.data(), pattern.data(), params.size() * sizeof(float)) != 0 ||
        std::memcmp(buffers.data(), pattern.data() + params.size(), buffers.size() * sizeof(float)) != 0)
      __builtin_trap();  // a refused file changed the model
  }
  return 0;
}
