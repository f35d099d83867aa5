// sinew/backend/onednn.hpp: the OneDnn backend, computing every layer with oneDNN primitives
// (the way PyTorch and MXNet do on CPUs).
#pragma once

#include "sinew/backend/backend_spec.hpp"
#include "sinew/backend/generic/pooled_dense.hpp"
#include "sinew/backend/generic/residual.hpp"
#include "sinew/backend/onednn/activation.hpp"
#include "sinew/backend/onednn/adaptive_pooling.hpp"
#include "sinew/backend/onednn/batch_norm.hpp"
#include "sinew/backend/onednn/common.hpp"
#include "sinew/backend/onednn/conv2d.hpp"
#include "sinew/backend/onednn/dense.hpp"
#include "sinew/backend/onednn/dropout.hpp"
#include "sinew/backend/onednn/flatten.hpp"
#include "sinew/backend/onednn/lowered_conv2d.hpp"
#include "sinew/backend/onednn/pooled_conv.hpp"
#include "sinew/backend/onednn/pooling.hpp"
#include "sinew/backend/onednn/small_conv2d.hpp"
#include "sinew/backend/onednn/thin_conv2d.hpp"

namespace sinew::backend {

/// oneDNN primitives in the layouts they choose, activations fused into the layer before them.
struct OneDnn {
  /// The Backend contract: backend/backend_spec.hpp says what each member does.
  /// @{
  static constexpr std::string_view kName = "onednn";
  static constexpr bool kFuseActivations = true;

  using context = onednn::context;
  using tensor = dnnl::memory;
  using tensor_desc = dnnl::memory::desc;
  using external = onednn::external;
  using converter = onednn::converter;

  static tensor_desc plain_desc(int n, int c, int h, int w) { return onednn::plain_desc(n, c, h, w); }
  static tensor_desc plain_like(const tensor_desc& d) { return onednn::plain_like(d); }
  static void to_plain(context& ctx, const tensor& t, float* out) { onednn::to_plain(ctx, t, out); }
  static float* data(const tensor& t) { return static_cast<float*>(t.get_data_handle()); }

  using adder = onednn::adder;

  template <NodeType N>
  using op = op_of<OneDnn, N>;  ///< the op_for table (backend/op_table.hpp), filled beside each op
  /// @}
};

static_assert(BackendPolicy<OneDnn>);

}  // namespace sinew::backend
