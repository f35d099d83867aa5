// sinew/nets/tensor_layout.hpp: where each parameter tensor lies in the flat gradient buffer, and its shape as a
// matrix, for strategies that treat tensors one by one (gradient compression: dist/compressed.hpp).
//
//   for (const sinew::dist::ParamTensor& t : sinew::dist::tensor_layout<Net>())
//     ...  // grads[t.offset + i * t.cols + j] is row i, column j of the tensor seen as a matrix
//
// A tensor of PyTorch shape [d0, d1, ...] is the matrix of d0 rows and d1 x d2 x ... columns, row-major as
// PyTorch and sinew lay it out: a Dense weight [out, in] is out x in, a Conv2d weight [out, in, kh, kw] is
// out x (in kh kw), as PowerSGD reshapes it (Vogels et al. 2019, and torch's powerSGD_hook); a vector (a bias,
// BatchNorm's scale and shift) is d0 rows and one column. A column is thus the d0 values that one input feeds,
// the column of CNTK's column-major weight matrices that 1-bit SGD scales (Seide et al. 2014).
//
// It lies beside the nets (it reads their state_dict) so that compress/ and dist/ both include it from below;
// the names stay in sinew::dist, where the strategies that use them live.
//
// A strategy may take it through an optional hook (dist/strategy_spec.hpp: req::has_tensor_layout_hook). The
// tensors are in ascending offset order and do not overlap; the floats between them (each node's slice starts
// 64-byte aligned) belong to no tensor.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <span>
#include <vector>

#include "sinew/nets/state_dict.hpp"

namespace sinew::dist {

/// One parameter tensor in the flat parameter and gradient buffers, seen as a rows x cols row-major matrix.
struct ParamTensor {
  std::size_t offset = 0;  ///< its first float in Model::parameters() and gradients()
  std::size_t rows = 0;    ///< its first extent (1 for a scalar)
  std::size_t cols = 1;    ///< the product of its other extents (1 for a vector)
  /// floats in the tensor
  constexpr std::size_t size() const noexcept { return rows * cols; }
  /// one past its last float
  constexpr std::size_t end() const noexcept { return offset + size(); }
  /// Whether it has more than one row and more than one column (a weight matrix, not a vector).
  constexpr bool is_matrix() const noexcept { return rows > 1 && cols > 1; }
  /// Same place and shape.
  friend bool operator==(const ParamTensor&, const ParamTensor&) = default;
};

/// Net's parameter tensors (weights and biases, not buffers) in ascending offset order; empty for a network
/// whose layers sinew cannot name (not a NamedNetwork), for which a strategy must do without shapes.
template <class Net>
std::vector<ParamTensor> tensor_layout() {
  std::vector<ParamTensor> out;
  if constexpr (NamedNetwork<Net>) {
    for (const StateEntry& e : state_dict_entries<Net>()) {
      if (!e.is_parameter() || e.size() == 0) continue;
      const std::size_t rows = e.rank >= 1 ? std::size_t(e.extents[0]) : 1;
      out.push_back({e.offset, rows, e.size() / rows});
    }
    std::sort(out.begin(), out.end(), [](const ParamTensor& a, const ParamTensor& b) { return a.offset < b.offset; });
  }
  return out;
}

}  // namespace sinew::dist
