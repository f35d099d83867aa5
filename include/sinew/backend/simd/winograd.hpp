// sinew/backend/simd/winograd.hpp: the transforms of Winograd's F(2x2, 3x3) for a 3x3 convolution at stride 1
// with padding 1 (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016).
//
// Each 2x2 block of output pixels (a tile) is read from the 4x4 input pixels around it. In the transformed domain
// the convolution of a tile is an elementwise product, so summed over input channels it is, for each of the 16
// positions xi of the 4x4 transformed tile, one matrix product over all tiles of the batch:
//
//   V[xi][tile][in]  = (B^T d B)[xi]           the input tile d, 4x4, of each channel
//   U[xi][in][out]   = (G g G^T)[xi]           the 3x3 kernel g of each (out, in) pair
//   M[xi]            = V[xi] U[xi]             16 products [tiles x in] x [in x out]
//   y (2x2 per tile) = A^T M A
//
// 16 x 4 multiply-adds per tile where the direct convolution does 4 x 9: 2.25 times fewer. The backward passes are
// the same products transposed: backward data is the forward of the output gradient with the kernel turned 180
// degrees and its channels swapped (flipped_weights), and the weights' gradient is G^T (V^T dM) G with
// dM = A dy A^T (output_gradient_tiles, weights_gradient). Products are the caller's (oneDNN's batched matmul in
// backend/onednn/winograd_conv2d.hpp); these are the transforms, each a few additions per value, over images in
// NHWC so that the channels are the contiguous, vectorised dimension.
//
//   B^T = | 1  0 -1  0 |     G = | 1    0    0   |     A^T = | 1  1  1  0 |
//         | 0  1  1  0 |         | 1/2  1/2  1/2 |           | 0  1 -1 -1 |
//         | 0 -1  1  0 |         | 1/2 -1/2  1/2 |
//         | 0  1  0 -1 |         | 0    0    1   |
//
// Tile t of an n x h x w batch is image t / (th * tw), tile row (t / tw) % th, column t % tw, with th = ceil(h / 2),
// tw = ceil(w / 2): an odd side's last tile reads padding past the image and writes only the pixels inside it.
#pragma once

#include <algorithm>
#include <cstddef>

namespace sinew::simd::winograd {

/// The tiles of a batch of n images of h x w pixels.
struct tiling {
  int n = 0, h = 0, w = 0;
  constexpr int rows() const noexcept { return (h + 1) / 2; }
  constexpr int cols() const noexcept { return (w + 1) / 2; }
  constexpr std::size_t tiles() const noexcept { return std::size_t(n) * std::size_t(rows()) * std::size_t(cols()); }
};

namespace detail {
inline constexpr int kChunk = 64;  // channels a transform holds at once (16 x 64 floats per array on the stack)

// The pixel (n, y, x) of an NHWC image with `ch` channels, or nullptr outside the image (padding).
inline const float* pixel(const tiling& s, const float* image, int ch, std::size_t t, int dy, int dx) {
  const std::size_t per_image = std::size_t(s.rows()) * std::size_t(s.cols());
  const int n = int(t / per_image), r = int(t % per_image);
  const int y = r / s.cols() * 2 + dy, x = r % s.cols() * 2 + dx;
  if (y < 0 || y >= s.h || x < 0 || x >= s.w) return nullptr;
  return image + ((std::size_t(n) * std::size_t(s.h) + std::size_t(y)) * std::size_t(s.w) + std::size_t(x)) *
                     std::size_t(ch);
}
inline float* pixel(const tiling& s, float* image, int ch, std::size_t t, int dy, int dx) {
  return const_cast<float*>(pixel(s, static_cast<const float*>(image), ch, t, dy, dx));
}
}  // namespace detail

/// V[xi][t][c] = (B^T d B)[xi] for tiles [t0, t1), d the 4x4 input pixels from (2 * row - 1, 2 * col - 1) of
/// `image` (NHWC, `ch` channels), zero outside it.
inline void input_tiles(const tiling& s, const float* image, int ch, float* v, std::size_t t0, std::size_t t1) {
  using detail::kChunk;
  const std::size_t plane = s.tiles() * std::size_t(ch);
  float d[16][kChunk], r[16][kChunk];
  for (std::size_t t = t0; t < t1; ++t)
    for (int c0 = 0; c0 < ch; c0 += kChunk) {
      const int cw = std::min(kChunk, ch - c0);
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          const float* p = detail::pixel(s, image, ch, t, i - 1, j - 1);
          if (p)
            std::copy_n(p + c0, cw, d[i * 4 + j]);
          else
            std::fill_n(d[i * 4 + j], cw, 0.0f);
        }
      for (int j = 0; j < 4; ++j)  // r = B^T d
#pragma omp simd
        for (int c = 0; c < cw; ++c) {
          r[j][c] = d[j][c] - d[8 + j][c];
          r[4 + j][c] = d[4 + j][c] + d[8 + j][c];
          r[8 + j][c] = d[8 + j][c] - d[4 + j][c];
          r[12 + j][c] = d[4 + j][c] - d[12 + j][c];
        }
      for (int i = 0; i < 4; ++i) {  // V = r B
        float* o0 = v + std::size_t(i * 4 + 0) * plane + t * std::size_t(ch) + std::size_t(c0);
        float* o1 = o0 + plane;
        float* o2 = o1 + plane;
        float* o3 = o2 + plane;
        const float *r0 = r[i * 4], *r1 = r[i * 4 + 1], *r2 = r[i * 4 + 2], *r3 = r[i * 4 + 3];
#pragma omp simd
        for (int c = 0; c < cw; ++c) {
          o0[c] = r0[c] - r2[c];
          o1[c] = r1[c] + r2[c];
          o2[c] = r2[c] - r1[c];
          o3[c] = r1[c] - r3[c];
        }
      }
    }
}

/// The 2x2 output pixels of tiles [t0, t1), A^T M[.][t] A, into `image` (NHWC, `ch` channels); pixels past an odd
/// side are not written.
inline void output_tiles(const tiling& s, const float* m, int ch, float* image, std::size_t t0, std::size_t t1) {
  using detail::kChunk;
  const std::size_t plane = s.tiles() * std::size_t(ch);
  float r[8][kChunk];
  for (std::size_t t = t0; t < t1; ++t)
    for (int c0 = 0; c0 < ch; c0 += kChunk) {
      const int cw = std::min(kChunk, ch - c0);
      for (int j = 0; j < 4; ++j) {  // r = A^T m
        const float* m0 = m + std::size_t(j) * plane + t * std::size_t(ch) + std::size_t(c0);
        const float* m1 = m0 + 4 * plane;
        const float* m2 = m1 + 4 * plane;
        const float* m3 = m2 + 4 * plane;
#pragma omp simd
        for (int c = 0; c < cw; ++c) {
          r[j][c] = m0[c] + m1[c] + m2[c];
          r[4 + j][c] = m1[c] - m2[c] - m3[c];
        }
      }
      for (int i = 0; i < 2; ++i) {  // y = r A
        const float *r0 = r[i * 4], *r1 = r[i * 4 + 1], *r2 = r[i * 4 + 2], *r3 = r[i * 4 + 3];
        if (float* o = detail::pixel(s, image, ch, t, i, 0))
#pragma omp simd
          for (int c = 0; c < cw; ++c) o[c0 + c] = r0[c] + r1[c] + r2[c];
        if (float* o = detail::pixel(s, image, ch, t, i, 1))
#pragma omp simd
          for (int c = 0; c < cw; ++c) o[c0 + c] = r1[c] - r2[c] - r3[c];
      }
    }
}

/// dM[xi][t][c] = (A dy A^T)[xi] for tiles [t0, t1), dy the 2x2 output gradients of the tile (NHWC, `ch`
/// channels; zero past an odd side): the transform the weights' gradient reads.
inline void output_gradient_tiles(const tiling& s, const float* dy, int ch, float* dm, std::size_t t0,
                                  std::size_t t1) {
  using detail::kChunk;
  const std::size_t plane = s.tiles() * std::size_t(ch);
  float g[4][kChunk], r[8][kChunk];
  for (std::size_t t = t0; t < t1; ++t)
    for (int c0 = 0; c0 < ch; c0 += kChunk) {
      const int cw = std::min(kChunk, ch - c0);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) {
          const float* p = detail::pixel(s, dy, ch, t, i, j);
          if (p)
            std::copy_n(p + c0, cw, g[i * 2 + j]);
          else
            std::fill_n(g[i * 2 + j], cw, 0.0f);
        }
      for (int j = 0; j < 2; ++j)  // r = A g, 4x2
#pragma omp simd
        for (int c = 0; c < cw; ++c) {
          r[j][c] = g[j][c];
          r[2 + j][c] = g[j][c] + g[2 + j][c];
          r[4 + j][c] = g[j][c] - g[2 + j][c];
          r[6 + j][c] = -g[2 + j][c];
        }
      for (int i = 0; i < 4; ++i) {  // dM = r A^T
        float* o0 = dm + std::size_t(i * 4) * plane + t * std::size_t(ch) + std::size_t(c0);
        float* o1 = o0 + plane;
        float* o2 = o1 + plane;
        float* o3 = o2 + plane;
        const float *r0 = r[i * 2], *r1 = r[i * 2 + 1];
#pragma omp simd
        for (int c = 0; c < cw; ++c) {
          o0[c] = r0[c];
          o1[c] = r0[c] + r1[c];
          o2[c] = r0[c] - r1[c];
          o3[c] = -r1[c];
        }
      }
    }
}

namespace detail {
// u[16][n] = G g G^T for 9 rows g[9][n] (a 3x3 kernel per column), each row vectorised over n.
inline void kernel_transform(const float (&g)[9][kChunk], float (&u)[16][kChunk], int n) {
  float t[12][kChunk];  // G g, 4x3
  for (int j = 0; j < 3; ++j)
#pragma omp simd
    for (int c = 0; c < n; ++c) {
      t[j][c] = g[j][c];
      t[3 + j][c] = 0.5f * (g[j][c] + g[3 + j][c] + g[6 + j][c]);
      t[6 + j][c] = 0.5f * (g[j][c] - g[3 + j][c] + g[6 + j][c]);
      t[9 + j][c] = g[6 + j][c];
    }
  for (int i = 0; i < 4; ++i)  // (G g) G^T
#pragma omp simd
    for (int c = 0; c < n; ++c) {
      const float a = t[i * 3][c], b = t[i * 3 + 1][c], e = t[i * 3 + 2][c];
      u[i * 4][c] = a;
      u[i * 4 + 1][c] = 0.5f * (a + b + e);
      u[i * 4 + 2][c] = 0.5f * (a - b + e);
      u[i * 4 + 3][c] = e;
    }
}
}  // namespace detail

/// U[xi][i][o] = (G g G^T)[xi] for input channels [i0, i1), g = w[o][i] of a PyTorch-layout kernel
/// w[out][in][3][3]: the forward's weights.
inline void weights(const float* w, int in, int out, float* u, int i0, int i1) {
  using detail::kChunk;
  float g[9][kChunk], x[16][kChunk];
  const std::size_t plane = std::size_t(in) * std::size_t(out);
  for (int i = i0; i < i1; ++i)
    for (int o0 = 0; o0 < out; o0 += kChunk) {
      const int ow = std::min(kChunk, out - o0);
      for (int o = 0; o < ow; ++o)
        for (int tap = 0; tap < 9; ++tap) g[tap][o] = w[(std::size_t(o0 + o) * std::size_t(in) + std::size_t(i)) * 9 + tap];
      detail::kernel_transform(g, x, ow);
      for (int xi = 0; xi < 16; ++xi)
        std::copy_n(x[xi], ow, u + std::size_t(xi) * plane + std::size_t(i) * std::size_t(out) + std::size_t(o0));
    }
}

/// Ub[xi][o][i] = (G g' G^T)[xi] for output channels [o0, o1), g' = w[o][i] turned 180 degrees: backward data's
/// weights, with which it is the forward convolution of the output gradient.
inline void flipped_weights(const float* w, int in, int out, float* ub, int o0, int o1) {
  using detail::kChunk;
  float g[9][kChunk], x[16][kChunk];
  const std::size_t plane = std::size_t(in) * std::size_t(out);
  for (int o = o0; o < o1; ++o)
    for (int i0 = 0; i0 < in; i0 += kChunk) {
      const int iw = std::min(kChunk, in - i0);
      const float* row = w + (std::size_t(o) * std::size_t(in) + std::size_t(i0)) * 9;
      for (int i = 0; i < iw; ++i)
        for (int tap = 0; tap < 9; ++tap) g[8 - tap][i] = row[std::size_t(i) * 9 + std::size_t(tap)];
      detail::kernel_transform(g, x, iw);
      for (int xi = 0; xi < 16; ++xi)
        std::copy_n(x[xi], iw, ub + std::size_t(xi) * plane + std::size_t(o) * std::size_t(in) + std::size_t(i0));
    }
}

/// dw[o][i][3][3] = (G^T dU G) for input channels [i0, i1), dU[xi][i][o] the products V^T dM: the weights'
/// gradient in PyTorch's layout.
inline void weights_gradient(const float* du, int in, int out, float* dw, int i0, int i1) {
  using detail::kChunk;
  float u[16][kChunk], t[12][kChunk], g[9][kChunk];
  const std::size_t plane = std::size_t(in) * std::size_t(out);
  for (int i = i0; i < i1; ++i)
    for (int o0 = 0; o0 < out; o0 += kChunk) {
      const int ow = std::min(kChunk, out - o0);
      for (int xi = 0; xi < 16; ++xi)
        std::copy_n(du + std::size_t(xi) * plane + std::size_t(i) * std::size_t(out) + std::size_t(o0), ow, u[xi]);
      for (int j = 0; j < 4; ++j)  // G^T u, 3x4
#pragma omp simd
        for (int c = 0; c < ow; ++c) {
          const float a = u[j][c], b = u[4 + j][c], e = u[8 + j][c], f = u[12 + j][c];
          t[j][c] = a + 0.5f * (b + e);
          t[4 + j][c] = 0.5f * (b - e);
          t[8 + j][c] = 0.5f * (b + e) + f;
        }
      for (int r = 0; r < 3; ++r)  // (G^T u) G, 3x3
#pragma omp simd
        for (int c = 0; c < ow; ++c) {
          const float a = t[r * 4][c], b = t[r * 4 + 1][c], e = t[r * 4 + 2][c], f = t[r * 4 + 3][c];
          g[r * 3][c] = a + 0.5f * (b + e);
          g[r * 3 + 1][c] = 0.5f * (b - e);
          g[r * 3 + 2][c] = 0.5f * (b + e) + f;
        }
      for (int o = 0; o < ow; ++o)
        for (int tap = 0; tap < 9; ++tap)
          dw[(std::size_t(o0 + o) * std::size_t(in) + std::size_t(i)) * 9 + std::size_t(tap)] = g[tap][o];
    }
}

}  // namespace sinew::simd::winograd
