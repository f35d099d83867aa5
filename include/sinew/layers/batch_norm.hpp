// sinew/layers/batch_norm.hpp: batch normalisation over the channels, as torch.nn.BatchNorm2d.
//
// Training mode normalises each channel with the batch's mean and (biased) variance over N, H and W, and
// updates the running statistics: running = (1 - momentum) * running + momentum * batch, with the unbiased
// variance (n / (n - 1)) for running_var, as PyTorch. Evaluation mode normalises with the running statistics.
// On a flat input (C x 1 x 1) it is torch.nn.BatchNorm1d on (N, C).
//
// SyncBatchNorm2d, below, is torch.nn.SyncBatchNorm: the same layer, whose training-mode statistics are taken
// over every worker's batch at every step; ConvertSyncBatchNorm<Net> is torch's convert_sync_batchnorm.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>

#include "sinew/core/error.hpp"

#include "sinew/layers/layer_spec.hpp"

namespace sinew {

/// This header's kind: what backends map to an op (backend/op_table.hpp).
namespace layer_kind {
struct batch_norm {};
/// SyncBatchNorm2d's: a layer that computes itself, on every backend (backend/generic/plain_op.hpp).
struct sync_batch_norm : plain {};
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

/// SyncBatchNorm2d: BatchNorm2d whose training-mode batch statistics (mean and variance over N, H and W) are
/// those of the global batch, every worker's together, at every step, as torch.nn.SyncBatchNorm: W workers at a
/// local batch of B compute what one process computes at W x B (tests/dist/test_buffers.cpp). Use it where the
/// local batch is too small for good statistics. Its parameters, buffers and state_dict keys are BatchNorm2d's
/// (PyTorch's SyncBatchNorm has the same), so checkpoints and safetensors files move between the two and
/// torchvision. Evaluation mode uses the running statistics and communicates nothing. Under dist::Local, or in a
/// Model used alone, there is one worker and it computes what BatchNorm2d computes, up to rounding.
///
/// The sums cross the workers through PlainPass::sum_over_workers (core/cross_worker.hpp), which the Trainer
/// fills from its strategy's sum_over_workers (dist/strategy_spec.hpp); a strategy without one refuses the
/// network at compile time. Each layer makes one blocking all-reduce in forward, of its 2C + 1 floats (sum and
/// sum of squares per channel, then the element count), and one in backward, of 2C floats (the sums of dy and
/// of dy xhat per channel), as PyTorch does per layer.
///
/// The layer computes itself on plain NCHW floats (its kind derives from layer_kind::plain), so every backend
/// runs it through the one generic op, with the conversions into and out of the backend's layout; an activation
/// after it is a node of its own (no fusion).
struct SyncBatchNorm2d : BatchNorm2d {
  /// what reports, profiles and checkpoints call the layer kind
  static constexpr std::string_view kName = "sync_batch_norm2d";
  /// its row in the one layer-to-op table: the generic plain op
  using kind = layer_kind::sync_batch_norm;
  /// the operator-profile kind its time, communication included, is reported under
  static constexpr std::string_view kProfile = "sync_batch_norm";
  /// the plain op fuses no activation
  static constexpr bool kFusesActivation = false;

  /// The layer applied to an input of shape In: BatchNorm2d's parameters, buffers and keys, its own passes.
  template <FeatureShape In>
  struct at : BatchNorm2d::at<In> {
    /// its passes call the sum over the workers (a Trainer checks that its strategy has one)
    static constexpr bool kSumsOverWorkers = true;
    /// channels
    static constexpr std::size_t kChannels = std::size_t(In::kChannels);
    /// values of one channel of one sample
    static constexpr std::size_t kPlane = std::size_t(In::kHeight) * In::kWidth;
    /// floats of the message forward sends: per channel the sum, then the sum of squares; then the count
    static constexpr std::size_t kMessage = 2 * kChannels + 1;

    /// [mean | 1 / sqrt(var + eps) | var] per channel, the message, then the global count: kept from forward
    /// for backward.
    static std::size_t workspace(int) { return 3 * kChannels + kMessage + 1; }

    /// Training: the global batch's statistics, then dst = (src - mean) / sqrt(var + eps) gamma + beta.
    ///
    /// Each worker sums x - shift and (x - shift)^2 per channel in double, with the running mean as the shift:
    /// the variance is then E[(x - shift)^2] - E[x - shift]^2, and with the shift near the batch mean the two
    /// terms are small, so little is lost to cancellation though the sums cross the workers as floats. The shift
    /// is the same on every worker (the running statistics are updated from the same global sums, and set alike
    /// by start(), a checkpoint or the buffer hook); were it off by a rounding, the statistics would be off by
    /// as little. The running statistics then take the global mean and the unbiased global variance.
    static void forward(const PlainPass& p) {
      float* mean = p.workspace.data();
      float* rstd = mean + kChannels;
      float* variance = rstd + kChannels;
      float* message = variance + kChannels;
      float* count = message + kMessage;
      const float* running_mean = p.buffers;
      const float* running_variance = p.buffers + kChannels;
      const std::size_t sample = kChannels * kPlane;
      if (!p.training) {
        for (std::size_t c = 0; c < kChannels; ++c) {
          mean[c] = running_mean[c];
          rstd[c] = float(1.0 / std::sqrt(double(running_variance[c]) + double(kEps)));
        }
      } else {
#pragma omp parallel for schedule(static) if (kChannels > 1)
        for (std::size_t c = 0; c < kChannels; ++c) {
          const double shift = running_mean[c];
          double sum = 0, squares = 0;
          for (int n = 0; n < p.batch; ++n) {
            const float* x = p.src + std::size_t(n) * sample + c * kPlane;
            for (std::size_t i = 0; i < kPlane; ++i) {
              const double d = double(x[i]) - shift;
              sum += d;
              squares += d * d;
            }
          }
          message[c] = float(sum);
          message[kChannels + c] = float(squares);
        }
        message[2 * kChannels] = float(std::size_t(p.batch) * kPlane);
        if (p.sum_over_workers) (*p.sum_over_workers)({message, kMessage});
        const double n = message[2 * kChannels];
        require_batch_statistics(std::size_t(n));
        for (std::size_t c = 0; c < kChannels; ++c) {
          const double m = message[c] / n;
          const double var = std::max(0.0, message[kChannels + c] / n - m * m);
          mean[c] = float(double(running_mean[c]) + m);
          variance[c] = float(var);
          rstd[c] = float(1.0 / std::sqrt(var + double(kEps)));
        }
        *count = float(n);
        update_running_statistics({p.buffers, 2 * kChannels}, mean, variance, std::size_t(n));
      }
#pragma omp parallel for schedule(static) if (p.batch > 1)
      for (int n = 0; n < p.batch; ++n)
        for (std::size_t c = 0; c < kChannels; ++c) {
          const float scale = rstd[c] * p.weights[c], shift = p.bias[c] - mean[c] * scale;
          const float* x = p.src + std::size_t(n) * sample + c * kPlane;
          float* y = p.dst + std::size_t(n) * sample + c * kPlane;
          for (std::size_t i = 0; i < kPlane; ++i) y[i] = x[i] * scale + shift;
        }
    }

    /// With xhat = (x - mean) rstd over the global batch of n values per channel:
    /// dx = gamma rstd (dy - sum(dy) / n - xhat sum(dy xhat) / n), the sums over every worker (one all-reduce of
    /// 2C floats); dgamma = sum(dy xhat) and dbeta = sum(dy) over this worker's batch. Each worker's dy is its
    /// own loss's, a mean over its B samples, so W times the gradient of the mean loss over W x B: dx and the
    /// gradients before it carry the factor W, and the strategy's average over the workers takes it out again,
    /// so the averaged gradients are one process's at W x B (as PyTorch's SyncBatchNorm under DDP). Evaluation
    /// mode: the statistics are constants, dx = gamma rstd dy, nothing is sent.
    static void backward(const PlainPass& p) {
      const float* mean = p.workspace.data();
      const float* rstd = mean + kChannels;
      float* message = p.workspace.data() + 3 * kChannels;
      const float n = message[kMessage];
      const std::size_t sample = kChannels * kPlane;
#pragma omp parallel for schedule(static) if (kChannels > 1)
      for (std::size_t c = 0; c < kChannels; ++c) {
        double dy_sum = 0, dy_xhat_sum = 0;
        for (int b = 0; b < p.batch; ++b) {
          const float* x = p.src + std::size_t(b) * sample + c * kPlane;
          const float* dy = p.diff_dst + std::size_t(b) * sample + c * kPlane;
          for (std::size_t i = 0; i < kPlane; ++i) {
            dy_sum += dy[i];
            dy_xhat_sum += double(dy[i]) * (double(x[i]) - mean[c]) * rstd[c];
          }
        }
        p.diff_weights[c] = float(dy_xhat_sum);
        p.diff_bias[c] = float(dy_sum);
        message[c] = float(dy_sum);
        message[kChannels + c] = float(dy_xhat_sum);
      }
      // Every worker runs the same network, so all skip this sum where the input needs no gradient.
      if (!p.diff_src) return;
      if (p.training && p.sum_over_workers) (*p.sum_over_workers)({message, 2 * kChannels});
#pragma omp parallel for schedule(static) if (p.batch > 1)
      for (int b = 0; b < p.batch; ++b)
        for (std::size_t c = 0; c < kChannels; ++c) {
          const float k = p.weights[c] * rstd[c];
          const float dy_mean = p.training ? message[c] / n : 0.0f;
          const float dy_xhat_mean = p.training ? message[kChannels + c] / n : 0.0f;
          const float* x = p.src + std::size_t(b) * sample + c * kPlane;
          const float* dy = p.diff_dst + std::size_t(b) * sample + c * kPlane;
          float* dx = p.diff_src + std::size_t(b) * sample + c * kPlane;
          for (std::size_t i = 0; i < kPlane; ++i)
            dx[i] = k * (dy[i] - dy_mean - (x[i] - mean[c]) * rstd[c] * dy_xhat_mean);
        }
    }
  };
};

/// @cond detail
namespace detail {
/// The layer list L with every BatchNorm2d replaced by a SyncBatchNorm2d, at any depth.
template <class L>
struct to_sync_batch_norm {
  using type = L;
};
template <>
struct to_sync_batch_norm<BatchNorm2d> {
  using type = SyncBatchNorm2d;
};
/// Sequential, Chain, Residual: every argument (a layer without type arguments stays as it is).
template <template <class...> class W, class... Ls>
struct to_sync_batch_norm<W<Ls...>> {
  using type = W<typename to_sync_batch_norm<Ls>::type...>;
};
template <fixed_string Name, class L>
struct to_sync_batch_norm<Named<Name, L>> {
  using type = Named<Name, typename to_sync_batch_norm<L>::type>;
};
template <fixed_string Name, class... Ls>
struct to_sync_batch_norm<Module<Name, Ls...>> {
  using type = Module<Name, typename to_sync_batch_norm<Ls>::type...>;
};
}  // namespace detail
/// @endcond

/// Net with every BatchNorm2d a SyncBatchNorm2d (torch.nn.SyncBatchNorm.convert_sync_batchnorm): the same
/// names, parameters and state_dict keys. `using Net = ConvertSyncBatchNorm<nets::ResNet18<>>;`
template <class Net>
using ConvertSyncBatchNorm = typename detail::to_sync_batch_norm<Net>::type;

}  // namespace sinew
