// sinew/backend/generic/weight_cache.hpp: the op's side of ForwardMode::weights_unchanged, for every backend.
//
// Ops keep the network's weights where the optimizer, strategies and checkpoints see them (PyTorch's layout in
// the flat parameter buffer) and derive the copy their kernel reads at every forward: oneDNN's blocked layout,
// Eigen's HWIO, a packed or expanded matrix. In training that copy is new each step; in evaluation it is the same
// forward after forward, and at batch 1 deriving it took two thirds of a forward (ResNet-50 on 32x32 images on
// one thread: 94 MB of weights read and written for 0.17 GFLOP; bench/zoo). The Model says when the weights are
// those of the op's last forward, which ran in evaluation mode too (ForwardMode::weights_unchanged); the op then
// keeps the copy it has.
#pragma once

#include "sinew/backend/backend_spec.hpp"

namespace sinew::backend {

/// Whether an op's forward must derive its weights' copy again. The op calls set_mode() from its own set_mode
/// and take() once per forward: take() answers for that forward only, so an op driven without set_mode (a test
/// calling forward() directly) derives at every forward.
class weight_cache {
 public:
  /// The Model's word for the next forward.
  void set_mode(const ForwardMode& mode) noexcept { reuse_ = mode.weights_unchanged && derived_; }
  /// true: derive the copy for this forward (and the op does); false: the copy of an earlier forward holds.
  [[nodiscard]] bool take() noexcept {
    const bool derive = !reuse_;
    reuse_ = false;
    derived_ = true;
    return derive;
  }

 private:
  bool reuse_ = false;    ///< set_mode said the weights are unchanged since a forward that derived the copy
  bool derived_ = false;  ///< a forward has derived the copy (the first never reuses)
};

}  // namespace sinew::backend
