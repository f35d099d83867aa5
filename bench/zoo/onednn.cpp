// bench/zoo/onednn.cpp: the zoo's networks on the OneDnn backend (a translation unit of its own, so the two
// backends' instantiations compile in parallel).
#include "zoo/measure.hpp"

namespace sinew::bench::zoo {
int measure_onednn(const Config& c) { return measure<backend::OneDnn>(c); }
}  // namespace sinew::bench::zoo
