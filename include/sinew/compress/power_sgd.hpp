// sinew/compress/power_sgd.hpp: PowerSGD (Vogels, Karimireddy and Jaggi, "PowerSGD: Practical Low-Rank Gradient
// Compression for Distributed Optimization", NeurIPS 2019), as torch's powerSGD_hook runs it.
//
//   using Ring     = sinew::dist::RingAllReduce<sinew::comm::Mpi>;
//   using Strategy = sinew::dist::Compressed<Ring, sinew::compress::PowerSgd<4>>;
//
// Each weight matrix M (rows x cols, nets/tensor_layout.hpp), plus the error carried from the last step, is
// sent as a rank-r approximation found by one step of power iteration per training step:
//   P = M Q               rows x r, with Q from the last step (warm start; the first Q is drawn from a fixed
//                         seed, the same on every rank);
//   P = sum of every rank's P, its columns orthonormalised (Gram-Schmidt);
//   Q = M^T P             cols x r, this rank's;
//   the gradient is P (sum of every rank's Q)^T, the sum of every rank's P Q_i^T;
//   residual = M - P Q_i^T (what this rank's approximation left out, added to its next M: error feedback);
//   the next step starts from the mean of the ranks' Q.
// Vectors (biases, BatchNorm's scale and shift) and matrices too small to gain (r (rows + cols) x 2 >= rows
// cols: torch's min_compression_rate of 2) are sent as they are, with the first round, and summed exactly.
// Two all-gathers a step: the Ps with the uncompressed tensors, then the Qs. Rank r is capped at min(rows, cols).
//
// Exactness of the error feedback: applied (P Q_i^T) + residual equals M up to the rounding of the one
// subtraction residual = M - P Q_i^T and of M = gradient + residual (2^-24 of each, per value and step).
// The residual here is the rank's own approximation error, so the identity holds on every rank; torch's hook
// subtracts the approximation of the mean instead, which gives the same identity only summed over the ranks.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sinew/compress/compressor_spec.hpp"
#include "sinew/core/diagnostics.hpp"
#include "sinew/core/rng.hpp"
#include "sinew/nets/tensor_layout.hpp"

namespace sinew::compress {

/// Rank: the rank of each matrix's approximation (PowerSGD's r; torch's default is 1, the paper's runs 2 to 4).
template <int Rank>
class PowerSgd {
  static_assert(Rank >= 1, "compress::PowerSgd<Rank>: Rank is the rank of each gradient's approximation, at least 1");

 public:
  /// for reports and the ranks' agreement
  static constexpr std::string_view kName = "powersgd";
  /// the approximation error is carried into the next step
  static constexpr bool kErrorFeedback = true;
  /// r: the approximation's rank
  static constexpr int kRank = Rank;

  /// Chooses the matrices to compress, draws the first Qs, zeroes the residual.
  void plan(std::span<const dist::ParamTensor> tensors, std::size_t total) {
    residual_.assign(total, 0.0f);
    low_rank_.clear(), plain_.clear();
    Rng rng(kSeed);
    std::size_t p_words = 0, q_words = 0, plain_words = 0;
    for (const dist::ParamTensor& t : tensors) {
      const std::size_t r = std::min({std::size_t(Rank), t.rows, t.cols});
      if (!t.is_matrix() || 2 * r * (t.rows + t.cols) >= t.size()) {
        plain_.push_back(t), plain_words += t.size();
        continue;
      }
      matrix m{t, r, p_words, q_words, std::vector<float>(r * t.cols)};
      for (float& v : m.q) v = rng.uniform(-1.0f, 1.0f);
      p_words += r * t.rows, q_words += r * t.cols;
      low_rank_.push_back(std::move(m));
    }
    first_.assign(plain_words + p_words, 0u);
    second_.assign(q_words, 0u);
    p_.assign(p_words, 0.0f), q_.assign(q_words, 0.0f);
  }
  /// Both rounds' words: the uncompressed tensors and every P, then every Q.
  std::size_t payload_words() const noexcept { return first_.size() + second_.size(); }
  /// What the last approximation left out, laid out as the gradients (zero for the uncompressed tensors).
  std::span<const float> residual() const noexcept { return residual_; }
  /// For checkpoints: the residual and each matrix's warm-start Q (compressor_spec.hpp).
  NamedState checkpoint_state() {
    NamedState state{{{"residual", residual_}}, {}, {}};
    // "q" + to_string(i) would do, but GCC 12 warns falsely (-Wrestrict) on a literal plus a temporary string.
    for (std::size_t i = 0; i < low_rank_.size(); ++i)
      state.tensors.emplace_back(std::string("q").append(std::to_string(i)), low_rank_[i].q);
    return state;
  }

  /// The two rounds of the top of compress/power_sgd.hpp.
  template <req::gradient_exchange X>
  void reduce(std::span<float> grads, X& x) {
    const std::size_t ranks = std::size_t(x.ranks());
    // Round 1: the uncompressed tensors as they are, and P = M Q of each matrix.
    std::size_t w = 0;
    for (const dist::ParamTensor& t : plain_) {
      std::memcpy(first_.data() + w, grads.data() + t.offset, 4 * t.size());
      w += t.size();
    }
    const std::size_t p_base = w;
    for (matrix& m : low_rank_) {
      float* e = residual_.data() + m.t.offset;
      for (std::size_t i = 0; i < m.t.size(); ++i) e[i] += grads[m.t.offset + i];
      // P[i][k] = row i of M . Q's column k (Q kept transposed: r rows of cols floats).
      float* p = p_.data() + m.p_at;
      for (std::size_t i = 0; i < m.t.rows; ++i)
        for (std::size_t k = 0; k < m.r; ++k)
          p[i * m.r + k] = dot(e + i * m.t.cols, m.q.data() + k * m.t.cols, m.t.cols);
    }
    std::memcpy(first_.data() + p_base, p_.data(), 4 * p_.size());
    all_.resize(ranks * first_.size());
    x.all_gather(first_, all_);
    // The sums, in rank order: the uncompressed tensors go straight into grads, the Ps into p_.
    for (std::size_t r = 0; r < ranks; ++r) {
      const std::uint32_t* words = all_.data() + r * first_.size();
      w = 0;
      for (const dist::ParamTensor& t : plain_)
        for (std::size_t i = 0; i < t.size(); ++i, ++w) add(grads[t.offset + i], words[w], r == 0);
      for (std::size_t i = 0; i < p_.size(); ++i) add(p_[i], words[p_base + i], r == 0);
    }
    // Round 2: Q_i = M^T P with P orthonormalised (the same floats on every rank: the same sums, the same code).
    for (matrix& m : low_rank_) {
      float* p = p_.data() + m.p_at;
      orthonormalise(p, m.t.rows, m.r);
      float* q = q_.data() + m.q_at;  // transposed: r rows of cols
      std::fill(q, q + m.r * m.t.cols, 0.0f);
      const float* e = residual_.data() + m.t.offset;
      for (std::size_t i = 0; i < m.t.rows; ++i)
        for (std::size_t k = 0; k < m.r; ++k) axpy(p[i * m.r + k], e + i * m.t.cols, q + k * m.t.cols, m.t.cols);
      // residual = M - P Q_i^T, this rank's own approximation error.
      float* res = residual_.data() + m.t.offset;
      for (std::size_t i = 0; i < m.t.rows; ++i)
        for (std::size_t k = 0; k < m.r; ++k) axpy(-p[i * m.r + k], q + k * m.t.cols, res + i * m.t.cols, m.t.cols);
    }
    std::memcpy(second_.data(), q_.data(), 4 * q_.size());
    all_.resize(ranks * second_.size());
    x.all_gather(second_, all_);
    for (std::size_t r = 0; r < ranks; ++r)
      for (std::size_t i = 0; i < q_.size(); ++i) add(q_[i], all_[r * second_.size() + i], r == 0);
    // The gradient: P (sum of the Qs)^T; the next step starts from their mean.
    for (matrix& m : low_rank_) {
      const float* p = p_.data() + m.p_at;
      const float* q = q_.data() + m.q_at;
      float* g = grads.data() + m.t.offset;
      std::fill(g, g + m.t.size(), 0.0f);
      for (std::size_t i = 0; i < m.t.rows; ++i)
        for (std::size_t k = 0; k < m.r; ++k) axpy(p[i * m.r + k], q + k * m.t.cols, g + i * m.t.cols, m.t.cols);
      for (std::size_t i = 0; i < m.q.size(); ++i) m.q[i] = q[i] / float(ranks);
    }
  }

 private:
  static constexpr std::uint64_t kSeed = 0x5057525347440001ull;  // the same first Q on every rank

  struct matrix {
    dist::ParamTensor t;
    std::size_t r = 0, p_at = 0, q_at = 0;  // rank; offsets of its P and Q in p_ and q_
    std::vector<float> q;                   // the warm start, transposed (r x cols)
  };

  static void add(float& to, std::uint32_t word, bool first) {
    const float v = std::bit_cast<float>(word);
    to = first ? v : to + v;
  }
  static float dot(const float* a, const float* b, std::size_t n) {
    float s = 0.0f;
    for (std::size_t i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
  }
  static void axpy(float a, const float* x, float* y, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) y[i] += a * x[i];
  }
  // Gram-Schmidt on the r columns of the rows x r row-major matrix p; a column with no length left stays zero.
  static void orthonormalise(float* p, std::size_t rows, std::size_t r) {
    for (std::size_t k = 0; k < r; ++k) {
      for (std::size_t l = 0; l < k; ++l) {
        double d = 0;
        for (std::size_t i = 0; i < rows; ++i) d += double(p[i * r + k]) * double(p[i * r + l]);
        for (std::size_t i = 0; i < rows; ++i) p[i * r + k] -= float(d) * p[i * r + l];
      }
      double norm = 0;
      for (std::size_t i = 0; i < rows; ++i) norm += double(p[i * r + k]) * double(p[i * r + k]);
      const float scale = norm > 0 ? float(1.0 / (std::sqrt(norm) + 1e-8)) : 0.0f;
      for (std::size_t i = 0; i < rows; ++i) p[i * r + k] *= scale;
    }
  }

  std::vector<matrix> low_rank_;
  std::vector<dist::ParamTensor> plain_;
  std::vector<float> residual_, p_, q_;
  std::vector<std::uint32_t> first_, second_, all_;
};
static_assert(CompressorPolicy<PowerSgd<1>>);

}  // namespace sinew::compress
