// bench/support/peak.hpp: the machine's measured peak for a precision, as the benchmarks' denominator of "share
// of peak": oneDNN's matmul on square matrices large enough to run at its kernels' best, on `threads` threads,
// in the same run as the figures it divides.
//
// f32: f32 inputs and output. bf16: bf16 inputs, f32 output, as OneDnnBf16's convolutions and inner products
// read and write; 0 where oneDNN has no bf16 kernels here (its effective ISA lacks avx512_core_bf16), since its
// reference kernels would measure nothing about the machine. The second operand lies in the layout the matmul
// picks (packed once, as a convolution's weights are): on a Zen 4, 2 threads, that ran at 214 (f32) and 419
// (bf16) GFLOP/s against 194 and 385 row-major, where ResNet-18's f32 training already reached 195.
#pragma once

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <unordered_map>
#include <vector>

#include "sinew/backend/onednn/compat.hpp"

namespace sinew::bench {

/// GFLOP/s of the best of `repeats` timed n x n x n matmuls (after one untimed) in `precision` ("f32" or
/// "bf16") on `threads` OpenMP threads; 0 for bf16 where oneDNN has no bf16 kernels.
inline double matmul_peak_gflops(const std::string& precision, int threads, long n = 2048, int repeats = 5) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const bool bf16 = precision == "bf16";
  if (bf16) {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto want = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    if ((isa & want) != want) return 0.0;
  }
  if (threads > 0) omp_set_num_threads(threads);
  const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(eng);
  const dt in = bf16 ? dt::bf16 : dt::f32;
  const dnnl::memory::desc a_md({n, n}, in, tag::ab), b_md({n, n}, in, tag::any), c_md({n, n}, dt::f32, tag::ab);
  const auto pd = sinew::backend::onednn::compat::forward<dnnl::matmul>(eng, {}, a_md, b_md, c_md);
  const dnnl::matmul mm(pd);
  dnnl::memory a(a_md, eng), b(pd.weights_desc(), eng), c(c_md, eng);
  // Ones (0x3f80 in bf16) in every float of the buffers, whatever their layout: every page touched, nothing that
  // could be a denormal.
  for (dnnl::memory* m : {&a, &b}) {
    const std::size_t bytes = m->get_desc().get_size();
    if (bf16)
      std::fill_n(static_cast<unsigned short*>(m->get_data_handle()), bytes / 2, static_cast<unsigned short>(0x3f80));
    else
      std::fill_n(static_cast<float*>(m->get_data_handle()), bytes / 4, 1.0f);
  }
  const std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}};
  mm.execute(stream, args);
  stream.wait();
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    mm.execute(stream, args);
    stream.wait();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * double(n) * double(n) * double(n) / best / 1e9;
}

}  // namespace sinew::bench
