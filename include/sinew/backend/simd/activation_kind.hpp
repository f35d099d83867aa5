// sinew/backend/simd/activation_kind.hpp: which element-wise activation a kernel applies.
//
// Apart from the kernels (simd/activation.hpp) so that the Model, the profile and the node configuration can
// name an activation without parsing Eigen, whose vectorised tanh and sigmoid the kernels use: sinew::core
// needs no Eigen, only the backends do.
#pragma once

namespace sinew::simd {

enum class activation { none, relu, tanh, sigmoid };

}  // namespace sinew::simd
