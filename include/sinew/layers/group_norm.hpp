// sinew/layers/group_norm.hpp: group normalisation, as torch.nn.GroupNorm(Groups, C, eps=1e-5).
//
// Each sample's channels are split into Groups groups of C / Groups channels; each group is normalised with its own
// mean and (biased) variance over its channels, height and width, then scaled and shifted per channel by the
// parameters gamma and beta. There are no running statistics: training and evaluation compute the same function,
// and a batch of one is as good as any (the reason to prefer it to batch norm at small batches).
//
// The layer computes itself on plain NCHW floats (its kind derives from layer_kind::plain): every backend runs
// forward and backward below through backend/generic/plain_op.hpp, so the kind needs no backend file.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>

#include "sinew/layers/layer_spec.hpp"

namespace sinew {

/// This header's kind: a layer that computes itself (layer_kind::plain), on every backend.
namespace layer_kind {
struct group_norm : plain {};
}  // namespace layer_kind

/// GroupNorm<Groups>: weight (gamma) [C] = 1 and bias (beta) [C] = 0, as PyTorch's affine GroupNorm.
template <int Groups>
struct GroupNorm {
  static_assert(Groups > 0, "GroupNorm: the number of groups must be positive");

  /// what reports, profiles and checkpoints call the layer kind
  static constexpr std::string_view kName = "group_norm";
  /// its row in the one layer-to-op table (backend/op_table.hpp): the generic plain op
  using kind = layer_kind::group_norm;
  /// the operator-profile kind its time is reported under: its own (metrics/profile.hpp declares it)
  static constexpr std::string_view kProfile = "group_norm";
  /// Groups
  static constexpr int kGroups = Groups;
  static constexpr float kEps = 1e-5f;  ///< added to the variance, as PyTorch

  /// The layer applied to an input of shape In (the contract is in layers/layer_spec.hpp).
  template <FeatureShape In>
  struct at {
    static_assert(In::kChannels % Groups == 0,
                  "GroupNorm<Groups>: the input's channels must be a multiple of the number of groups (as PyTorch); "
                  "choose Groups dividing the channels");
    /// the input's shape
    using output = In;
    /// gamma, one per channel
    static constexpr std::size_t kWeights = In::kChannels;
    /// beta, one per channel
    static constexpr std::size_t kBias = In::kChannels;
    /// channels in a group
    static constexpr std::size_t kGroupChannels = std::size_t(In::kChannels) / Groups;
    /// values of one channel of one sample
    static constexpr std::size_t kPlane = std::size_t(In::kHeight) * In::kWidth;
    /// values one group's statistics average: channels x height x width
    static constexpr std::size_t kGroupSize = kGroupChannels * kPlane;

    /// PyTorch's initialisation: gamma 1, beta 0.
    static void init(std::span<float> weights, std::span<float> bias, Rng&) {
      std::fill(weights.begin(), weights.end(), 1.0f);
      std::fill(bias.begin(), bias.end(), 0.0f);
    }

    /// Each (sample, group)'s mean and 1 / sqrt(variance + eps), kept from forward for backward.
    static std::size_t workspace(int batch) { return 2 * std::size_t(batch) * Groups; }

    /// dst = (src - mean) / sqrt(var + eps) * gamma + beta, statistics per sample and group (in double).
    static void forward(const PlainPass& p) {
      float* mean = p.workspace.data();
      float* rstd = mean + std::size_t(p.batch) * Groups;
#pragma omp parallel for schedule(static) if (p.batch > 1)
      for (int n = 0; n < p.batch; ++n) {
        for (int g = 0; g < Groups; ++g) {
          const std::size_t group = std::size_t(n) * Groups + std::size_t(g);
          const float* x = p.src + group * kGroupSize;
          double sum = 0, squares = 0;
          for (std::size_t i = 0; i < kGroupSize; ++i) sum += x[i];
          const double m = sum / double(kGroupSize);
          for (std::size_t i = 0; i < kGroupSize; ++i) squares += (x[i] - m) * (x[i] - m);
          const float r = float(1.0 / std::sqrt(squares / double(kGroupSize) + double(kEps)));
          mean[group] = float(m);
          rstd[group] = r;
          float* y = p.dst + group * kGroupSize;
          for (std::size_t c = 0; c < kGroupChannels; ++c) {
            const std::size_t channel = std::size_t(g) * kGroupChannels + c;
            const float scale = r * p.weights[channel], shift = p.bias[channel] - float(m) * scale;
            for (std::size_t i = c * kPlane; i < (c + 1) * kPlane; ++i) y[i] = x[i] * scale + shift;
          }
        }
      }
    }

    /// With xhat = (x - mean) rstd and dxhat = dy gamma, per sample and group of M values:
    /// dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)); dgamma = sum(dy xhat), dbeta = sum(dy) per channel.
    static void backward(const PlainPass& p) {
      const float* mean = p.workspace.data();
      const float* rstd = mean + std::size_t(p.batch) * Groups;
      constexpr std::size_t kChannels = std::size_t(In::kChannels);
      const std::size_t sample = kChannels * kPlane;
#pragma omp parallel for schedule(static) if (kChannels > 1)
      for (std::size_t c = 0; c < kChannels; ++c) {
        double dgamma = 0, dbeta = 0;
        for (int n = 0; n < p.batch; ++n) {
          const std::size_t group = std::size_t(n) * Groups + c / kGroupChannels;
          const float* x = p.src + std::size_t(n) * sample + c * kPlane;
          const float* dy = p.diff_dst + std::size_t(n) * sample + c * kPlane;
          for (std::size_t i = 0; i < kPlane; ++i) {
            dgamma += double(dy[i]) * (x[i] - mean[group]) * rstd[group];
            dbeta += dy[i];
          }
        }
        p.diff_weights[c] = float(dgamma);
        p.diff_bias[c] = float(dbeta);
      }
      if (!p.diff_src) return;
#pragma omp parallel for schedule(static) if (p.batch > 1)
      for (int n = 0; n < p.batch; ++n) {
        for (int g = 0; g < Groups; ++g) {
          const std::size_t group = std::size_t(n) * Groups + std::size_t(g);
          const float* x = p.src + group * kGroupSize;
          const float* dy = p.diff_dst + group * kGroupSize;
          const double m = mean[group], r = rstd[group];
          double sum_dxhat = 0, sum_dxhat_xhat = 0;
          for (std::size_t c = 0; c < kGroupChannels; ++c) {
            const double gamma = p.weights[std::size_t(g) * kGroupChannels + c];
            for (std::size_t i = c * kPlane; i < (c + 1) * kPlane; ++i) {
              sum_dxhat += dy[i] * gamma;
              sum_dxhat_xhat += dy[i] * gamma * (x[i] - m) * r;
            }
          }
          const double mean_dxhat = sum_dxhat / double(kGroupSize);
          const double mean_dxhat_xhat = sum_dxhat_xhat / double(kGroupSize);
          float* dx = p.diff_src + group * kGroupSize;
          for (std::size_t c = 0; c < kGroupChannels; ++c) {
            const double gamma = p.weights[std::size_t(g) * kGroupChannels + c];
            for (std::size_t i = c * kPlane; i < (c + 1) * kPlane; ++i)
              dx[i] = float(r * (dy[i] * gamma - mean_dxhat - (x[i] - m) * r * mean_dxhat_xhat));
          }
        }
      }
    }
  };
};

}  // namespace sinew
