// Times own_reorder (backend/onednn/reorder.hpp) against oneDNN's reorder primitive on the same tensors in one run:
// activations and weights of 24 channels, padded to blocks of 16, and one large 3x3 weight. Built against the
// include/ of the commit to time: g++ -std=c++20 -O3 -march=native -fopenmp -I include reorders.cpp -ldnnl
#include <chrono>
#include <cstdio>
#include <vector>
#include "sinew/backend/onednn/reorder.hpp"
using namespace dnnl; using tag = memory::format_tag; using sinew::backend::onednn::own_reorder;
int main() {
  engine eng(engine::kind::cpu, 0); stream s(eng);
  struct C { memory::dims d; tag from, to; const char* name; } cases[] = {
    {{42, 24, 56, 56}, tag::nchw, tag::nChw16c, "act 42x24x56x56 nchw->nChw16c"},
    {{42, 24, 56, 56}, tag::nChw16c, tag::nchw, "act 42x24x56x56 nChw16c->nchw"},
    {{144, 24, 1, 1}, tag::oihw, tag::OIhw16i16o, "w 144x24x1x1 oihw->OIhw16i16o"},
    {{320, 1000, 3, 3}, tag::oihw, tag::OIhw16i16o, "w 320x1000x3x3"},
  };
  for (auto& c : cases) {
    memory::desc a(c.d, memory::data_type::f32, c.from), b(c.d, memory::data_type::f32, c.to);
    std::vector<float> x(a.get_size() / 4, 1.f), y(b.get_size() / 4), z(b.get_size() / 4);
    memory ma(a, eng, x.data()), mb(b, eng, y.data());
    reorder r(ma, mb); own_reorder o(a, b);
    auto time = [&](auto f) { double best = 1e9; for (int i = 0; i < 15; ++i) { auto t0 = std::chrono::steady_clock::now(); f(); double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); if (i > 2 && t < best) best = t; } return best * 1e3; };
    double tr = time([&] { r.execute(s, ma, mb); s.wait(); });
    double to = time([&] { o.run(x.data(), z.data()); });
    std::printf("%-34s elems %9zu  onednn %8.3f ms  own %8.3f ms  (%.1fx)  same %d\n", c.name, z.size(), tr, to, to / tr, int(y == z));
  }
}
