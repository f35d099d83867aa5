// guide_blocks: the driver of the documentation's tests. The C++ blocks of README.md and docs/*.md are compiled
// into this program (doc_blocks.cpp, generated) but not run; it
//   --blocks               reports how many blocks of each page were compiled (docs.guide_blocks);
//   --write-weights FILE   writes LeNet-5's (3x32x32, 10 classes) state_dict to FILE as sinew saves it, every
//                          parameter p[i] = (i % 1000) / 1000, and prints "key offset count" per tensor, for
//                          the guide's Python reader to be checked against (docs.guide_python).
#include <cstdio>
#include <cstring>
#include <exception>
#include <utility>
#include <vector>

#include "sinew/io/safetensors.hpp"
#include "sinew/nets/lenet5.hpp"

namespace doc_blocks {
extern const int kCount;
extern const std::pair<const char*, int> kPages[];  // (page, its blocks), ended by a null page
}

int main(int argc, char** argv) {
  try {
    if (argc == 2 && std::strcmp(argv[1], "--blocks") == 0) {
      for (const auto* p = doc_blocks::kPages; p->first != nullptr; ++p)
        std::printf("%s: %d C++ blocks compiled\n", p->first, p->second);
      return doc_blocks::kCount > 0 ? 0 : 1;
    }
    if (argc == 3 && std::strcmp(argv[1], "--write-weights") == 0) {
      using Net = sinew::nets::LeNet5<sinew::Input<3, 32, 32>, 10>;
      std::vector<float> params(Net::kParamSpan), buffers(Net::kBufferSpan);
      for (std::size_t i = 0; i < params.size(); ++i) params[i] = float(i % 1000) / 1000.0f;
      sinew::io::save_safetensors<Net>(argv[2], params, buffers, 0);
      for (const sinew::StateEntry& e : sinew::state_dict_entries<Net>())
        std::printf("%s %zu %zu\n", e.key.c_str(), e.offset, e.size());
      return 0;
    }
    std::fprintf(stderr, "usage: %s --blocks | --write-weights FILE\n", argv[0]);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "guide_blocks: %s\n", e.what());
    return 1;
  }
}
