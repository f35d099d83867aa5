// sinew/layers/loss.hpp: the loss after a network's last layer.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "sinew/core/error.hpp"

namespace sinew {

/// The value of a loss over one batch.
struct LossValue {
  double loss = 0;        ///< mean over the batch
  std::size_t correct = 0;  ///< samples whose largest logit is their label
};

/// Softmax over the logits, then the mean negative log-likelihood of the labels over the batch
/// (torch.nn.CrossEntropyLoss with reduction='mean'). The gradient is (softmax - onehot) / batch.
struct SoftmaxCrossEntropy {
  /// what reports and profiles call it
  static constexpr std::string_view kName = "softmax_cross_entropy";

  /// logits and diff are [batch, classes] row-major; diff receives d(loss)/d(logits).
  static LossValue compute(std::span<const float> logits, std::span<const std::int32_t> labels, int classes,
                           std::span<float> diff) {
    const std::size_t batch = labels.size();
    const float inv_batch = 1.0f / float(batch);
    LossValue v;
    double total = 0;
    for (std::size_t n = 0; n < batch; ++n) {
      const float* z = logits.data() + n * classes;
      float* d = diff.data() + n * classes;
      const std::int32_t label = labels[n];
      if (label < 0 || label >= classes)
        throw shape_error("softmax_cross_entropy: label " + std::to_string(label) + " of sample " +
                          std::to_string(n) + " is outside [0, " + std::to_string(classes) +
                          "): the network has fewer outputs than the data set has classes");
      const int argmax = int(std::max_element(z, z + classes) - z);
      const float zmax = z[argmax];
      float sum = 0;
      for (int k = 0; k < classes; ++k) sum += (d[k] = std::exp(z[k] - zmax));
      const float inv_sum = 1.0f / sum;
      for (int k = 0; k < classes; ++k) d[k] *= inv_sum * inv_batch;
      d[label] -= inv_batch;
      total += double(std::log(sum)) - double(z[label] - zmax);
      v.correct += (argmax == label);
    }
    v.loss = total / double(batch);
    return v;
  }
};

}  // namespace sinew
