// sinew/backend/simd/activation_kind.hpp: which element-wise activation a kernel applies.
//
// Apart from the kernels (simd/activation.hpp) so that the Model, the profile and the node configuration can
// name an activation without parsing Eigen, whose vectorised tanh and sigmoid the kernels use: sinew::core
// needs no Eigen, only the backends do.
#pragma once

#include "sinew/layers/activation.hpp"

namespace sinew::simd {

/// The element-wise activations the kernels compute (none: a layer without one).
enum class activation { none, relu, tanh, sigmoid, leaky_relu, relu6 };

/// The kernel that computes activation layer Act (layers/activation.hpp); none for a layer without one.
template <class Act>
inline constexpr activation kernel_of = activation::none;
/// @cond
template <>
inline constexpr activation kernel_of<ReLU> = activation::relu;
template <>
inline constexpr activation kernel_of<Tanh> = activation::tanh;
template <>
inline constexpr activation kernel_of<Sigmoid> = activation::sigmoid;
template <>
inline constexpr activation kernel_of<LeakyReLU> = activation::leaky_relu;
template <>
inline constexpr activation kernel_of<ReLU6> = activation::relu6;
/// @endcond

}  // namespace sinew::simd
