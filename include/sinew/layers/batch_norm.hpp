// sinew/layers/batch_norm.hpp: batch normalisation over the channels, as torch.nn.BatchNorm2d.
//
// Training mode normalises each channel with the batch's mean and (biased) variance over N, H and W, and
// updates the running statistics: running = (1 - momentum) * running + momentum * batch, with the unbiased
// variance (n / (n - 1)) for running_var, as PyTorch. Evaluation mode normalises with the running statistics.
// On a flat input (C x 1 x 1) it is torch.nn.BatchNorm1d on (N, C).
#pragma once

#include <algorithm>
#include <string>

#include "sinew/core/error.hpp"

#include "sinew/layers/layer_spec.hpp"

namespace sinew {

/// This header's kind: what backends map to an op (backend/op_table.hpp).
namespace layer_kind {
struct batch_norm {};
}  // namespace layer_kind

/// BatchNorm2d: weight (gamma) [C] = 1 and bias (beta) [C] = 0 are parameters; running_mean [C] = 0 and
/// running_var [C] = 1 are buffers ([running_mean | running_var]). PyTorch's num_batches_tracked is not kept:
/// it only matters with momentum=None (a cumulative average), which sinew does not offer; its state_dict entry
/// is written from the Model's step count (io/safetensors.hpp).
struct BatchNorm2d {
  /// what reports, profiles and checkpoints call the layer kind
  static constexpr std::string_view kName = "batch_norm2d";
  /// its row in the one layer-to-op table (backend/op_table.hpp)
  using kind = layer_kind::batch_norm;
  /// the operator-profile kind its time is reported under (metrics/profile.hpp)
  static constexpr std::string_view kProfile = "batch_norm";
  static constexpr float kEps = 1e-5f;        ///< added to the variance, as PyTorch
  static constexpr float kMomentum = 0.1f;    ///< weight of the batch in the running statistics, as PyTorch
  static constexpr bool kFusesActivation = true;  ///< an activation right after it may be fused

  /// Batch statistics need two values per channel at least (as PyTorch): a shape_error otherwise. Every
  /// backend's op checks this before a training-mode forward over `per_channel` values per channel.
  static void require_batch_statistics(std::size_t per_channel) {
    if (per_channel < 2)
      throw shape_error("batch_norm2d: training needs more than one value per channel, got a batch of " +
                        std::to_string(per_channel) + " on a 1x1 map (as PyTorch; use a larger batch, "
                        "or evaluation mode)");
  }

  /// The training-mode update of the buffers [running_mean | running_var] from a batch's per-channel mean
  /// and biased variance over n values: running = (1 - momentum) running + momentum batch, with the unbiased
  /// variance n / (n - 1) var for running_var (PyTorch). Every backend's op calls it.
  static void update_running_statistics(std::span<float> buffers, const float* mean, const float* variance,
                                        std::size_t n) {
    const std::size_t channels = buffers.size() / 2;
    float* running_mean = buffers.data();
    float* running_variance = running_mean + channels;
    const float m = kMomentum, unbias = float(n) / float(n - 1);
    for (std::size_t c = 0; c < channels; ++c) {
      running_mean[c] = (1 - m) * running_mean[c] + m * mean[c];
      running_variance[c] = (1 - m) * running_variance[c] + m * unbias * variance[c];
    }
  }

  /// The layer applied to an input of shape In (the contract is in layers/layer_spec.hpp).
  template <FeatureShape In>
  struct at {
    /// the input's shape
    using output = In;
    /// gamma, one per channel
    static constexpr std::size_t kWeights = In::kChannels;
    /// beta, one per channel
    static constexpr std::size_t kBias = In::kChannels;
    /// running mean then running variance, one each per channel
    static constexpr std::size_t kBuffers = 2 * std::size_t(In::kChannels);
    /// PyTorch's keys, in its order.
    static constexpr std::array kStateDict{
        StateTensor{"weight", StateSource::weights, 0, 1, {In::kChannels}},
        StateTensor{"bias", StateSource::bias, 0, 1, {In::kChannels}},
        StateTensor{"running_mean", StateSource::buffers, 0, 1, {In::kChannels}},
        StateTensor{"running_var", StateSource::buffers, std::size_t(In::kChannels), 1, {In::kChannels}},
        StateTensor{"num_batches_tracked", StateSource::batches_tracked, 0, 0, {}}};

    /// PyTorch's initialisation: gamma 1, beta 0.
    static void init(std::span<float> weights, std::span<float> bias, Rng&) {
      std::fill(weights.begin(), weights.end(), 1.0f);
      std::fill(bias.begin(), bias.end(), 0.0f);
    }
    /// Running mean 0, running variance 1.
    static void init_buffers(std::span<float> buffers) {
      std::fill(buffers.begin(), buffers.begin() + In::kChannels, 0.0f);
      std::fill(buffers.begin() + In::kChannels, buffers.end(), 1.0f);
    }
  };
};

}  // namespace sinew
