// sinew/backend/eigen.hpp: the Eigen backend, computing every layer the way TensorFlow does on CPUs, with Eigen
// Tensor expressions and hand-written loops on an Eigen thread pool: convolutions as image patches packed
// block by block into each thread's buffer (never a whole im2col matrix) and multiplied by the weights, the
// padding's zeros skipped where that pays (eigen/conv2d.hpp), NHWC between ops, activations fused into the
// Conv2d, Dense or BatchNorm2d before them (a convolution's applied to each block of outputs after its product).
//
// Matrix kernel. The products of Conv2d and Dense run on oneDNN's sgemm (eigen/gemm.hpp), one single-threaded
// call per pool thread, as TensorFlow's x86 builds run Eigen's contractions on it by default: Eigen's own gebp
// kernel is slower on ResNet-18's shapes (eigen/gemm.hpp). So backend::Eigen links oneDNN (its C API), though it
// uses none of oneDNN's primitives: the algorithms (patches, P^T dZ, dZ W^T and col2im) stay TensorFlow's.
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
#include "sinew/backend/generic/pooled_conv.hpp"
#include "sinew/backend/generic/pooled_dense.hpp"
#include "sinew/backend/generic/residual.hpp"

namespace sinew::backend {

/// TensorFlow's CPU algorithms on an Eigen::ThreadPoolDevice (matrix products on oneDNN's sgemm, as TensorFlow's
/// x86 builds), NHWC inside, activations fused.
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
  template <class = void>  // instantiated only if used (eigen/common.hpp, "Compile time")
  static void to_plain(context& ctx, const tensor& t, float* out) { eigen::to_plain(ctx, t, out); }
  static float* data(const tensor& t) { return t.data; }

  using adder = eigen::adder;

  template <NodeType N>
  using op = op_of<Eigen, N>;  ///< the op_for table (backend/op_table.hpp), filled beside each op
  /// @}
};

static_assert(BackendPolicy<Eigen>);

}  // namespace sinew::backend
