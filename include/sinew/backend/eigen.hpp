// sinew/backend/eigen.hpp: the Eigen backend, computing every layer with Eigen Tensor expressions on an
// Eigen thread pool (the way TensorFlow does on CPUs): convolutions as extract_image_patches + reshape +
// contract, NHWC between ops, activations fused into the Conv2d, Dense or BatchNorm2d before them.
//
// Fusion. kFuseActivations is true, as for OneDnn, so both backends lower a network to the same nodes (ops
// and per-op profiles line up one to one) and the activation runs in the same pass as the bias add, while
// the layer's output is still in cache, instead of a separate op re-reading it.
#pragma once

#include "sinew/backend/eigen/common.hpp"  // first: defines EIGEN_USE_THREADS before the Tensor module
#include "sinew/backend/backend_spec.hpp"
#include "sinew/backend/eigen/activation.hpp"
#include "sinew/backend/eigen/adaptive_pooling.hpp"
#include "sinew/backend/eigen/adder.hpp"
#include "sinew/backend/eigen/batch_norm.hpp"
#include "sinew/backend/eigen/conv2d.hpp"
#include "sinew/backend/eigen/dense.hpp"
#include "sinew/backend/eigen/dropout.hpp"
#include "sinew/backend/eigen/flatten.hpp"
#include "sinew/backend/eigen/pooling.hpp"
#include "sinew/backend/generic/residual.hpp"

namespace sinew::backend {

/// Eigen Tensor expressions on an Eigen::ThreadPoolDevice, NHWC inside, activations fused.
struct Eigen {
  /// The Backend contract: backend/backend_spec.hpp says what each member does.
  /// @{
  static constexpr std::string_view kName = "eigen";
  static constexpr bool kFuseActivations = true;

  using context = eigen::context;
  using tensor = eigen::tensor;
  using tensor_desc = eigen::tensor_desc;
  using external = eigen::external;
  using converter = eigen::converter;

  static tensor_desc plain_desc(int n, int c, int h, int w) { return eigen::plain_desc(n, c, h, w); }
  static tensor_desc plain_like(const tensor_desc& d) { return eigen::plain_like(d); }
  static void to_plain(context& ctx, const tensor& t, float* out) { eigen::to_plain(ctx, t, out); }
  static float* data(const tensor& t) { return t.data; }

  using adder = eigen::adder;

  template <NodeType N>
  using op = op_of<Eigen, N>;  ///< the op_for table (backend/op_table.hpp), filled beside each op
  /// @}
};

static_assert(Backend<Eigen>);

}  // namespace sinew::backend
