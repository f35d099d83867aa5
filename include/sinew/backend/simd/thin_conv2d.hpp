// sinew/backend/simd/thin_conv2d.hpp: the register tiles of a stride-1 convolution with few channels, on xsimd.
//
// A convolution of a "wide" image: the input plane is stored with row stride Wx (its padded width) and the output
// is computed at every position p = oy * Wx + ox of the same row stride, ox < Wx, so that the tap (c, ky, kx)
// reads the input at the fixed offset off[t] = c * plane + ky * Wx + kx from p: every tap is a contiguous,
// unaligned vector load, with no im2col buffer. The K - 1 columns ox >= OW of each row are computed and dropped
// (LeNet-5's first layer: 28 of 32). With 3 to 16 channels oneDNN 2.6 ran these layers at a quarter of peak (its
// kernels block channels by 16 and vectorise over them); here the pixels are the vector dimension and the output
// channels the rows of accumulators, so a thin layer fills whole vectors.
//
//   forward_tiles: out[o][p] = bias[o] + sum_t w[t][o] x[off[t] + p]
//   weights_tiles: dw[o][t] += sum_p dz[o][p] x[off[t] + p]                 (summed over images too)
//   data_tiles:    dx[off[t] + p] += sum_o w[o][t] dz[o][p]                  (the rows are taps)
//
// Tiles are OB output channels (or taps, data_tiles) by NV vectors, or OB channels by TB taps (weights), as many accumulators as the
// instruction set's registers hold (32 zmm, 16 ymm). Arch is an xsimd architecture; the default is the widest
// the compiler targets (-march=native), and the tests also run xsimd::avx2 where the compiler allows it.
#pragma once

#include <cstddef>
#include <type_traits>

#include "sinew/core/detail/xsimd_compat.hpp"

namespace sinew::simd::thin_conv {

/// The default architecture: the widest the compiler targets.
using default_arch = xsimd::default_arch;

/// Floats per vector of Arch.
template <class Arch>
inline constexpr std::size_t kWidth = xsimd::batch<float, Arch>::size;

/// Vector registers of Arch (AVX-512 has 32, AVX2 16).
template <class Arch>
inline constexpr int kRegisters = kWidth<Arch> >= 16 ? 32 : 16;

/// Vectors (forward) or taps (weights) a tile of OB rows holds: OB x N accumulators, N loaded operands and a
/// broadcast fit the registers.
template <class Arch, int OB>
inline constexpr int kTileWidth = (kRegisters<Arch> - 1) / (OB + 1) > 0 ? (kRegisters<Arch> - 1) / (OB + 1) : 1;

/// The output-channel blocks the tiles come in; rows past the layer's channels are zero weights.
inline constexpr int kBlocks[] = {4, 6, 8};

/// The block for a layer of `channels` output channels: the one that pads the fewest rows, the larger on ties.
constexpr int block_for(int channels) noexcept {
  int best = 8, best_rows = 1 << 30;
  for (int b : kBlocks) {
    const int rows = (channels + b - 1) / b * b;
    if (rows < best_rows || (rows == best_rows && b > best)) best = b, best_rows = rows;
  }
  return best;
}

namespace detail {

/// Keeps `v` in a register: GCC otherwise folds a loaded or broadcast operand that several FMAs share into each
/// of them as a memory operand, so the tile loads it once per FMA and becomes bound by loads instead of FMAs (the
/// weights' tile of LeNet-5's first layer, OB 6 x TB 4: 28 loads per 24 FMAs and one accumulator spilled).
template <class B>
inline void in_register([[maybe_unused]] B& v) noexcept {
#if defined(__GNUC__)
  asm("" : "+v"(v.data));
#endif
}

template <class Arch, int OB, int NV>
inline void forward_tile(const float* w, const float* bias, const float* x, const std::ptrdiff_t* off, int taps,
                         float* out, std::size_t out_stride) {
  using B = xsimd::batch<float, Arch>;
  constexpr std::size_t V = B::size;
  B acc[OB][NV];
#pragma GCC unroll 16
  for (int o = 0; o < OB; ++o)
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) acc[o][j] = B(bias ? bias[o] : 0.0f);
  for (int t = 0; t < taps; ++t) {
    const float* xs = x + off[t];
    B xv[NV];
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) xv[j] = B::load_unaligned(xs + std::size_t(j) * V);
    const float* wt = w + std::size_t(t) * OB;
#pragma GCC unroll 16
    for (int o = 0; o < OB; ++o) {
      const B wv(wt[o]);
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j) acc[o][j] = xsimd::fma(wv, xv[j], acc[o][j]);
    }
  }
#pragma GCC unroll 16
  for (int o = 0; o < OB; ++o)
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) acc[o][j].store_unaligned(out + std::size_t(o) * out_stride + std::size_t(j) * V);
}

template <class Arch, int OB, int TB>
inline void weights_tile(const float* dz, std::size_t dz_stride, std::size_t dz_image, const float* x,
                         std::size_t x_image, int images, const std::ptrdiff_t* off, std::size_t positions, float* dw,
                         std::size_t dw_stride) {
  using B = xsimd::batch<float, Arch>;
  constexpr std::size_t V = B::size;
  B acc[OB][TB];
#pragma GCC unroll 16
  for (int o = 0; o < OB; ++o)
#pragma GCC unroll 16
    for (int t = 0; t < TB; ++t) acc[o][t] = B(0.0f);
  for (int i = 0; i < images; ++i) {
    const float* xs[TB];
#pragma GCC unroll 16
    for (int t = 0; t < TB; ++t) xs[t] = x + std::size_t(i) * x_image + off[t];
    const float* d = dz + std::size_t(i) * dz_image;
    for (std::size_t p = 0; p < positions; p += V) {
      B xv[TB];
#pragma GCC unroll 16
      for (int t = 0; t < TB; ++t) xv[t] = B::load_unaligned(xs[t] + p);
#pragma GCC unroll 16
      for (int o = 0; o < OB; ++o) {
        B dv = B::load_unaligned(d + std::size_t(o) * dz_stride + p);
        in_register(dv);
#pragma GCC unroll 16
        for (int t = 0; t < TB; ++t) acc[o][t] = xsimd::fma(dv, xv[t], acc[o][t]);
      }
    }
  }
#pragma GCC unroll 16
  for (int o = 0; o < OB; ++o)
#pragma GCC unroll 16
    for (int t = 0; t < TB; ++t) dw[std::size_t(o) * dw_stride + std::size_t(t)] += simd_compat::reduce_add(acc[o][t]);
}

template <class Arch, int RB, int NV>
inline void data_tile(const float* w, const float* dz, std::size_t dz_stride, int channels, const std::ptrdiff_t* off,
                      float* dx) {
  using B = xsimd::batch<float, Arch>;
  constexpr std::size_t V = B::size;
  B acc[RB][NV];
#pragma GCC unroll 16
  for (int r = 0; r < RB; ++r)
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) acc[r][j] = B(0.0f);
  for (int o = 0; o < channels; ++o) {
    B dv[NV];
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) dv[j] = B::load_unaligned(dz + std::size_t(o) * dz_stride + std::size_t(j) * V);
    const float* wo = w + std::size_t(o) * RB;
#pragma GCC unroll 16
    for (int r = 0; r < RB; ++r) {
      const B wv(wo[r]);
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j) acc[r][j] = xsimd::fma(wv, dv[j], acc[r][j]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < RB; ++r)
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) {
      float* to = dx + off[r] + std::ptrdiff_t(j * V);
      (B::load_unaligned(to) + acc[r][j]).store_unaligned(to);
    }
}

// One tile of R output rows by Q consecutive pixels by CV vectors of output channels (channel_forward_rows): the
// pixels' taps are read at x + r * wp + q + off[t].
template <class Arch, int CV, int R, int Q>
inline void channel_forward_tile(const float* w, const float* bias, const float* x, std::ptrdiff_t wp,
                                 const std::ptrdiff_t* off, int taps, float* out, std::size_t out_row) {
  using B = xsimd::batch<float, Arch>;
  constexpr std::size_t V = B::size;
  B acc[R][Q][CV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int q = 0; q < Q; ++q)
#pragma GCC unroll 4
      for (int c = 0; c < CV; ++c) acc[r][q][c] = B::load_unaligned(bias + std::size_t(c) * V);
  // One base pointer per row and the tap's offset as the index: each broadcast is one addressing mode (with
  // r * wp computed per tap instead, the row offsets spilled from the general registers and ran slower).
  const float* rows[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) rows[r] = x + r * wp;
  for (int t = 0; t < taps; ++t) {
    const std::ptrdiff_t o = off[t];
    B wv[CV];
#pragma GCC unroll 4
    for (int c = 0; c < CV; ++c) wv[c] = B::load_aligned(w + (std::size_t(t) * CV + std::size_t(c)) * V);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
      for (int q = 0; q < Q; ++q) {
        const B xb(rows[r][o + q]);
#pragma GCC unroll 4
        for (int c = 0; c < CV; ++c) acc[r][q][c] = xsimd::fma(wv[c], xb, acc[r][q][c]);
      }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int q = 0; q < Q; ++q)
#pragma GCC unroll 4
      for (int c = 0; c < CV; ++c)
        acc[r][q][c].store_unaligned(out + std::size_t(r) * out_row + (std::size_t(q) * CV + std::size_t(c)) * V);
}

}  // namespace detail

/// out[o][p] = bias[o] + sum_t w[t][o] * x[off[t] + p] for OB rows o and p in [0, positions), `positions` a
/// multiple of kWidth<Arch>. `w` holds [taps][OB] (one block's weights, tap-major), `bias` OB floats or null
/// (zero); `out` rows are `out_stride` apart. Reads x up to off[t] + positions - 1 for every tap.
template <int OB, class Arch = default_arch>
void forward_tiles(const float* w, const float* bias, const float* x, const std::ptrdiff_t* off, int taps,
                   std::size_t positions, float* out, std::size_t out_stride) {
  constexpr int NV = kTileWidth<Arch, OB>;
  constexpr std::size_t V = kWidth<Arch>, step = V * std::size_t(NV);
  std::size_t p = 0;
  for (; p + step <= positions; p += step) detail::forward_tile<Arch, OB, NV>(w, bias, x + p, off, taps, out + p, out_stride);
  for (; p < positions; p += V) detail::forward_tile<Arch, OB, 1>(w, bias, x + p, off, taps, out + p, out_stride);
}

/// dw[o][t] += sum over images i and p in [0, positions) of dz_i[o][p] * x_i[off[t] + p], for OB rows o and
/// `taps` taps, a multiple of kTileWidth<Arch, OB> (pad `off` with zeros and drop those columns). Image i's dz is
/// dz + i * dz_image (rows `dz_stride` apart), its x is x + i * x_image; dw rows are `dw_stride` apart; `positions` a
/// multiple of kWidth<Arch>. Each accumulator sums every image before its one horizontal addition.
template <int OB, class Arch = default_arch>
void weights_tiles(const float* dz, std::size_t dz_stride, std::size_t dz_image, const float* x, std::size_t x_image,
                   int images, const std::ptrdiff_t* off, int taps, std::size_t positions, float* dw,
                   std::size_t dw_stride) {
  constexpr int TB = kTileWidth<Arch, OB>;
  for (int t = 0; t < taps; t += TB)
    detail::weights_tile<Arch, OB, TB>(dz, dz_stride, dz_image, x, x_image, images, off + t, positions, dw + t,
                                       dw_stride);
}

/// dx[off[r] + p] += sum_o w[o][r] * dz[o][p] for RB rows r (the input gradient as the transposed contraction,
/// its rows the taps, added into the padded image gradient at each tap's offset), `channels` rows of dz
/// `dz_stride` apart and p in [0, positions), a multiple of kWidth<Arch>. `w` holds [channels][RB].
template <int RB, class Arch = default_arch>
void data_tiles(const float* w, const float* dz, std::size_t dz_stride, int channels, const std::ptrdiff_t* off,
                std::size_t positions, float* dx) {
  constexpr int NV = kTileWidth<Arch, RB>;
  constexpr std::size_t V = kWidth<Arch>, step = V * std::size_t(NV);
  std::size_t p = 0;
  for (; p + step <= positions; p += step) detail::data_tile<Arch, RB, NV>(w, dz + p, dz_stride, channels, off, dx + p);
  for (; p < positions; p += V) detail::data_tile<Arch, RB, 1>(w, dz + p, dz_stride, channels, off, dx + p);
}

// Output-channel-vectorised kernels, for a layer whose output channels fill CV vectors exactly (LeNet-5's second
// layer: 16 channels, one AVX-512 vector). The pixels are then scalars broadcast against a vector of channels, so
// no lane computes a dropped column: the wide tiles above compute K - 1 of every Wx columns for nothing (LeNet-5's
// second layer: 4 of 14, on 10 x 10 outputs), and sum each weight's gradient horizontally at the end.
//
//   channel_forward_rows: out[p][o] = bias[o] + sum_t w[t][o] x[off[t] + p]      (p: output pixels in the padded image)
//   channel_weights_rows: sums[t][o] += sum_(oy, ox) x[(oy + ky) Wx + ox + kx] dz[oy OW + ox][o]
//                         for the taps t = (ky, kx) of KR kernel rows of one input channel
//
// On LeNet-5's second layer the forward runs faster this way than on the wide tiles
// (figures: bench/README.md, "Why the kernels are as they are").

/// Rows of a forward tile Q pixels wide with CV vectors of channels: the most of 1, 2 and 4 whose accumulators fit
/// the registers beside CV operands and a broadcast (AVX-512, 16 channels: 2 rows of 8, 4 of 4, 4 of 2).
template <class Arch, int CV, int Q>
inline constexpr int kChannelTileRows = [] {
  const int fit = (kRegisters<Arch> - CV - 1) / CV;
  int r = 0;
  for (int rows : {1, 2, 4})
    if (rows * Q <= fit) r = rows;
  return r;
}();

/// out[oy * cols + ox][o] = bias[o] + sum_t w[t][o] * x[off[t] + oy * wp + ox] for `rows` x `cols` output pixels:
/// `w` holds [taps][CV * V] (aligned), `bias` CV * V floats (zeros without a bias), `out` [pixel][CV * V]. Tiles
/// of R rows by 8, 4, 2, 1 columns; the last tile of a column strip moves up to end at the last row (recomputing
/// rows already written, to the same values) rather than run narrower tiles.
template <int CV, class Arch = default_arch>
void channel_forward_rows(const float* w, const float* bias, const float* x, std::ptrdiff_t wp,
                          const std::ptrdiff_t* off, int taps, int rows, int cols, float* out) {
  const std::size_t pixel = std::size_t(CV) * kWidth<Arch>, out_row = std::size_t(cols) * pixel;
  int col = 0;
  const auto strip = [&]<int Q>(std::integral_constant<int, Q>) {
    constexpr int RT = kChannelTileRows<Arch, CV, Q>;
    if constexpr (RT > 0) {
      for (; col + Q <= cols; col += Q) {
        if (rows < RT) {  // fewer rows than a tile: one row at a time
          for (int r = 0; r < rows; ++r)
            detail::channel_forward_tile<Arch, CV, 1, Q>(w, bias, x + r * wp + col, wp, off, taps,
                                                         out + std::size_t(r) * out_row + std::size_t(col) * pixel, out_row);
          continue;
        }
        for (int r0 = 0;; r0 += RT) {
          const int r = r0 + RT <= rows ? r0 : rows - RT;
          detail::channel_forward_tile<Arch, CV, RT, Q>(w, bias, x + r * wp + col, wp, off, taps,
                                                        out + std::size_t(r) * out_row + std::size_t(col) * pixel, out_row);
          if (r + RT >= rows) break;
        }
      }
    }
  };
  strip(std::integral_constant<int, 8>{});
  strip(std::integral_constant<int, 4>{});
  strip(std::integral_constant<int, 2>{});
  strip(std::integral_constant<int, 1>{});
}

/// Kernel rows per weights tile for a K-wide kernel and CV vectors of channels: the largest divisor of K whose
/// K x KR x CV accumulators fit the registers beside CV operands and a broadcast.
template <class Arch, int CV, int K>
inline constexpr int kChannelRows = [] {
  const int fit = (kRegisters<Arch> - CV - 1) / (K * CV);
  int best = 1;
  for (int r = 1; r <= K; ++r)
    if (K % r == 0 && r <= fit) best = r;
  return best;
}();

/// sums[(ky, kx)][o] += sum over output pixels (oy, ox) of x[(oy + ky) * wp + ox + kx] * dz[oy * ow + ox][o], for
/// ky in [0, KR) and kx in [0, K): KR kernel rows of one input channel, whose plane `x` starts at kernel row 0 of
/// the tile (row stride wp). `dz` holds [oh * ow][CV * V], `sums` [KR * K][CV * V] (both aligned).
template <int CV, int K, int KR, class Arch = default_arch>
void channel_weights_rows(const float* dz, const float* x, std::ptrdiff_t wp, int oh, int ow, float* sums) {
  using B = xsimd::batch<float, Arch>;
  constexpr std::size_t V = B::size;
  B acc[KR][K][CV];
#pragma GCC unroll 8
  for (int r = 0; r < KR; ++r)
#pragma GCC unroll 8
    for (int k = 0; k < K; ++k)
#pragma GCC unroll 4
      for (int c = 0; c < CV; ++c) acc[r][k][c] = B::load_aligned(sums + (std::size_t(r * K + k) * CV + std::size_t(c)) * V);
  for (int oy = 0; oy < oh; ++oy)
    for (int ox = 0; ox < ow; ++ox) {
      const float* d = dz + std::size_t(oy * ow + ox) * CV * V;
      B dv[CV];
#pragma GCC unroll 4
      for (int c = 0; c < CV; ++c) dv[c] = B::load_aligned(d + std::size_t(c) * V);
      const float* xr = x + oy * wp + ox;
#pragma GCC unroll 8
      for (int r = 0; r < KR; ++r)
#pragma GCC unroll 8
        for (int k = 0; k < K; ++k) {
          const B xb(xr[r * wp + k]);
#pragma GCC unroll 4
          for (int c = 0; c < CV; ++c) acc[r][k][c] = xsimd::fma(xb, dv[c], acc[r][k][c]);
        }
    }
#pragma GCC unroll 8
  for (int r = 0; r < KR; ++r)
#pragma GCC unroll 8
    for (int k = 0; k < K; ++k)
#pragma GCC unroll 4
      for (int c = 0; c < CV; ++c) acc[r][k][c].store_aligned(sums + (std::size_t(r * K + k) * CV + std::size_t(c)) * V);
}

}  // namespace sinew::simd::thin_conv
