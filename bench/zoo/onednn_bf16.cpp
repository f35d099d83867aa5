// bench/zoo/onednn_bf16.cpp: the zoo's networks on backend::OneDnnBf16 (--precision bf16), a translation unit
// of its own as each backend's.
#include "zoo/measure.hpp"

namespace sinew::bench::zoo {
int measure_onednn_bf16(const Config& c) { return measure<backend::OneDnnBf16>(c); }
}  // namespace sinew::bench::zoo
