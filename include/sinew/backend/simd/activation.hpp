// sinew/backend/simd/activation.hpp: element-wise activations and their backward passes, on raw float
// arrays of any layout (blocked oneDNN layouts included: padding entries are zero and stay zero).
//
// Forward tanh and sigmoid use Eigen's vectorised rational approximations (max error 1.7e-7 against
// std::tanh), faster than xsimd::tanh and than oneDNN 2.6's AVX2 tanh
// (figures: bench/README.md, "Why the kernels are as they are"). Backward passes are
// computed from the output y, so the input need not be kept: relu' = [y > 0], tanh' = 1 - y^2,
// sigmoid' = y (1 - y), leaky_relu' = [y > 0] + slope [y <= 0], relu6' = [0 < y < 6] (an output of exactly 6
// had an input of 6 or more: PyTorch's gradient is 0 there too); they are plain xsimd loops.
#pragma once

#include <cstddef>

#include "sinew/core/detail/vector_intrinsics.hpp"  // first: see its comment

#include <Eigen/Core>

#include "sinew/backend/simd/activation_kind.hpp"
#include "sinew/core/elementwise.hpp"
#include "sinew/core/parallel.hpp"
#include "sinew/layers/activation.hpp"

namespace sinew::simd {

/// y = f(x) on the calling thread alone (a kernel that already runs on every thread applies it to its share);
/// x and y may be the same array.
inline void activation_forward_serial(activation a, const float* x, float* y, std::size_t n) {
  const auto count = Eigen::Index(n);
  Eigen::Map<const Eigen::ArrayXf> in(x, count);
  Eigen::Map<Eigen::ArrayXf> out(y, count);
  switch (a) {
    case activation::relu: out = in.max(0.0f); break;
    case activation::tanh: out = in.tanh(); break;
    case activation::sigmoid: out = in.logistic(); break;
    case activation::leaky_relu: out = in.max(in * LeakyReLU::kNegativeSlope); break;
    case activation::relu6: out = in.max(0.0f).min(ReLU6::kCeiling); break;
    case activation::none: break;
  }
}

/// y = f(x); x and y may be the same array.
inline void activation_forward(activation a, const float* x, float* y, std::size_t n) {
  if (a == activation::none) return;
  parallel_ranges(n, [&](std::size_t begin, std::size_t end) {
    activation_forward_serial(a, x + begin, y + begin, end - begin);
  });
}

/// dx = f'(x) * dy over [begin, end) on the calling thread alone, with f' expressed through the output y;
/// dx may alias dy.
inline void activation_backward_serial(activation a, const float* y, const float* dy, float* dx, std::size_t begin,
                                       std::size_t end) {
  transform(begin, end, [&](auto v, std::size_t i) {
    using V = decltype(v);
    const V out = load<V>(y + i), grad = load<V>(dy + i);
    V r;
    if (a == activation::relu) {
      if constexpr (std::is_same_v<V, float>)
        r = out > 0 ? grad : 0.0f;
      else
        r = xsimd::select(out > V(0.0f), grad, V(0.0f));
    } else if (a == activation::tanh) {
      r = grad * fma(-out, out, V(1.0f));
    } else if (a == activation::sigmoid) {
      r = grad * out * (V(1.0f) - out);
    } else if (a == activation::leaky_relu) {  // the output has the input's sign
      if constexpr (std::is_same_v<V, float>)
        r = out > 0 ? grad : grad * LeakyReLU::kNegativeSlope;
      else
        r = xsimd::select(out > V(0.0f), grad, grad * V(LeakyReLU::kNegativeSlope));
    } else if (a == activation::relu6) {
      if constexpr (std::is_same_v<V, float>)
        r = out > 0 && out < ReLU6::kCeiling ? grad : 0.0f;
      else
        r = xsimd::select((out > V(0.0f)) & (out < V(ReLU6::kCeiling)), grad, V(0.0f));
    } else {
      r = grad;
    }
    store(dx + i, r);
  });
}

/// dx = f'(x) * dy, with f' expressed through the output y; dx may alias dy.
inline void activation_backward(activation a, const float* y, const float* dy, float* dx, std::size_t n) {
  parallel_ranges(n, [&](std::size_t begin, std::size_t end) { activation_backward_serial(a, y, dy, dx, begin, end); });
}

}  // namespace sinew::simd
