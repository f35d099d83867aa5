// bench/ops: seed 004's fundamental operations and the training operators at the model zoo's layer shapes,
// on both sinew backends and on PyTorch (bench/pytorch/ops.py), in the same run; one CSV and, with
// bench/plot_ops.py, one log-log plot per operation.
//
//   ops [--quick] [--threads 2] [--batch 42] [--min-time 0.3] [--min-exp 10] [--max-exp 24]
//       [--backends onednn,eigen,pytorch] [--only SUBSTRING] [--csv ops.csv] [--plot DIR]
//
// Each figure is the median of repeated calls (at least 3, and until --min-time seconds have passed) after
// one untimed call. What runs (the library's own ops wherever sinew has one; see bench/README.md):
//   zeros          a new n-float tensor set to 0: oneDNN memory + memset; Eigen Tensor + setZero on the pool
//   relu tanh sigmoid  sinew's activation op of each backend (SIMD kernels; OpenMP on OneDnn, the Eigen pool
//                  on Eigen)
//   softplus softsign  not sinew layers: oneDNN eltwise soft_relu (oneDNN 2.6 has no softsign); Eigen
//                  expressions log1p(exp(x)) and x / (1 + |x|)
//   dot            the Dense op with one input row and one output (x . w)
//   gemm           the Dense op's forward as an n x n x n product (oneDNN matmul, Eigen contraction)
//   flatten        the Flatten op on an N x 64 x 8 x 8 tensor in the layout a convolution leaves it in
//                  (oneDNN's blocked layout -> plain; Eigen's NHWC -> NCHW)
//   normalize      rows of an R x 1024 matrix to zero mean and unit variance (layer norm without affine):
//                  oneDNN layer_normalization; Eigen reductions and broadcasts
//   conv_forward / conv_backward_data / conv_backward_weights, batch_norm_forward / _backward,
//   pooling_forward / _backward, fc_forward / fc_backward_data / fc_backward_weights: the backends' Conv2d,
//                  BatchNorm2d, MaxPool and Dense ops at ResNet-18's, VGG-16's, AlexNet's and LeNet-5's shapes
//                  on 3x32x32 input; inputs arrive in the layout the previous layer would leave them in; backward data
//                  and weights are split by the op's profile probe (metrics/profile.hpp)
//   conv_lowered_forward / _backward_data / _backward_weights  OneDnn only: its lowered op (im2col and an inner
//                  product, onednn/lowered_conv2d.hpp) on the same shapes, where its rule takes them in a net, beside
//                  the general op's conv_* rows as their anchor
//   fc_forward_inner_product  OneDnn only: the inner product forward that the Dense op's matmul forward
//                  replaced (weighted_layer.hpp), on the same memories, as its anchor
//   fc_backward_data_inner_product  OneDnn only: the inner product backward data on the same memories, the
//                  anchor of fc_backward_data, which without AVX-512 kernels runs split in two matmuls where the
//                  weights' rows are a multiple of 4 KiB (weighted_layer.hpp: inner_product_split_backward_data)
//   sgd_update     optim::Sgd (momentum 0.9) over ResNet-18's 11,689,512 parameters (backend-independent:
//                  backend "sinew")
// Sizes: vectors 2^min-exp .. 2^max-exp floats (every power of 4), GEMM sides 32 .. 2048.
// Output columns: operation,backend,shape,size,size_unit,seconds,gflops,gbps,impl.
#include "sinew/backend/eigen.hpp"  // first: EIGEN_USE_THREADS before the Tensor module
#include "sinew/backend/onednn.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "sinew/metrics/profile.hpp"
#include "sinew/metrics/timer.hpp"
#include "sinew/optim/sgd.hpp"
#include "sinew/tensor/buffer.hpp"
#include "cli/cli.hpp"

namespace {

using sinew::AlignedBuffer;
using sinew::ParamSlots;
using sinew::metrics::OpKind;
using sinew::metrics::Stopwatch;
namespace onednn = sinew::backend::onednn;
namespace eigen = sinew::backend::eigen;
using OneDnn = sinew::backend::OneDnn;
using EigenBackend = sinew::backend::Eigen;

/// One measurement group: a fundamental operation at one size, or a layer at one shape (which yields the
/// rows of its directions). `p` holds the integer parameters (n, c, h, w, o, k, s, p, bias, ...).
struct Task {
  std::string group;  ///< zeros, relu, ..., gemm, conv, batch_norm, pooling, fc, sgd_update
  std::string shape;  ///< label, unique within the group
  std::map<std::string, long> p;
};

/// A row of the CSV.
struct Row {
  std::string operation, backend, shape;
  double size = 0;
  std::string size_unit;
  double seconds = 0, flops = 0, bytes = 0;
  std::string impl;
};

struct Timing {
  double min_time = 0.3;
  int max_calls = 1000;
};

/// Median seconds of f() over at least 3 calls and until `min_time` has passed, after one untimed call.
template <class F>
double median_seconds(const Timing& t, F&& f) {
  f();
  std::vector<double> s;
  Stopwatch total;
  while ((s.size() < 3 || total.elapsed() < t.min_time) && int(s.size()) < t.max_calls) {
    Stopwatch w;
    f();
    s.push_back(w.elapsed());
  }
  std::nth_element(s.begin(), s.begin() + s.size() / 2, s.end());
  return s[s.size() / 2];
}

/// Medians of the parts an op's backward reports to its probe (see metrics/profile.hpp), per call.
template <class F>
std::map<OpKind, double> median_parts(const Timing& t, F&& backward) {
  sinew::metrics::OperatorProfile profile;
  profile.resize({"op"});
  const auto once = [&] {
    profile.reset();
    auto probe = profile.start(0);
    backward(probe);
    probe.end(OpKind::other_backward);
  };
  once();
  std::map<OpKind, std::vector<double>> parts;
  Stopwatch total;
  for (int calls = 0; (calls < 3 || total.elapsed() < t.min_time) && calls < t.max_calls; ++calls) {
    once();
    const auto& e = profile.nodes()[0];
    for (std::size_t k = 0; k < sinew::metrics::kOpKinds; ++k)
      if (e.kinds[k].calls) parts[OpKind(k)].push_back(e.kinds[k].seconds);
  }
  std::map<OpKind, double> out;
  for (auto& [k, v] : parts) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    out[k] = v[v.size() / 2];
  }
  return out;
}

long get(const Task& t, const char* key) { return t.p.at(key); }

void fill_values(float* p, std::size_t n, float scale = 0.1f) {
  for (std::size_t i = 0; i < n; ++i) p[i] = scale * (float((i * 2654435761u) % 1000) / 500.0f - 1.0f);
}

/// A tensor with data in layout `d`: plain floats reordered into d by the backend's own converter.
template <class B>
struct held_tensor {
  AlignedBuffer<float> plain;
  typename B::external external;
  typename B::converter converter;
  const typename B::tensor* tensor = nullptr;

  void make(typename B::context& ctx, const typename B::tensor_desc& d, std::size_t floats) {
    plain = AlignedBuffer<float>(floats);
    fill_values(plain.data(), floats);
    external.setup(ctx, B::plain_like(d));
    converter.setup(ctx, B::plain_like(d), d);
    tensor = &converter(ctx, external.bind(plain.data()));
  }
};

/// Parameters, gradients and buffers of one op, in the flat-buffer layout the Model gives it.
struct held_params {
  AlignedBuffer<float> w, b, dw, db, buffers;
  held_params(std::size_t weights, std::size_t bias, std::size_t buffer_floats = 0)
      : w(weights), b(std::max<std::size_t>(bias, 1)), dw(weights), db(std::max<std::size_t>(bias, 1)),
        buffers(std::max<std::size_t>(buffer_floats, 1)) {
    fill_values(w.data(), weights, 0.05f);
    fill_values(b.data(), b.size(), 0.01f);
    if (buffer_floats) std::fill(buffers.begin() + long(buffer_floats / 2), buffers.end(), 1.0f);  // variance 1
  }
  ParamSlots slots() { return {w.data(), b.data(), dw.data(), db.data(), buffers.data()}; }
};

/// The general convolution op of backend B, set up with runtime shapes: OneDnn's conv2d_op named outright (its table
/// picks an op from the node's compile-time shape, and the 1x1 image of a placeholder node is small_conv2d_op's,
/// whose matrix grows with the square of the image); the thin shapes run on thin_conv_op below.
template <class B>
using conv_op = std::conditional_t<
    std::is_same_v<B, sinew::backend::OneDnn>, sinew::backend::onednn::conv2d_op,
    typename B::template op<sinew::Node<sinew::Conv2d<1, 1, 2>, sinew::Shape<1, 1, 1>, sinew::NoActivation, 0, 0>>>;
/// The op OneDnn takes for a stride-1 convolution of at most 16 channels each side (LeNet-5's); conv_op elsewhere.
template <class B>
using thin_conv_op = typename B::template op<sinew::Node<sinew::Conv2d<1, 1>, sinew::Shape<1, 1, 1>, sinew::NoActivation, 0, 0>>;

/// The layout a convolution leaves an N x C x H x W activation in on backend B (oneDNN: blocked; Eigen: NHWC):
/// that of a 3x3 padded convolution, as before every batch norm of the zoo's nets. (A 1x1 producer
/// left oneDNN's output plain, so the batch-norm rows timed oneDNN's plain-layout kernel, 5-10x slower than the
/// blocked one training runs.)
template <class B>
typename B::tensor_desc natural_desc(typename B::context& ctx, int n, int c, int h, int w) {
  conv_op<B> producer;
  held_params params(std::size_t(c) * c * 9, 0);
  producer.setup(ctx, B::plain_desc(n, c, h, w),
                 sinew::backend::Conv2dConfig{n, c, h, w, c, h, w, 3, 1, 1, false, sinew::simd::activation::none},
                 params.slots(), false);
  return producer.dst_desc();
}

template <class B>
using activation_op = typename B::template op<sinew::Node<sinew::ReLU, sinew::Shape<1, 1, 1>, sinew::NoActivation, 0, 0>>;
template <class B>
using dense_op = typename B::template op<sinew::Node<sinew::Dense<1>, sinew::Flat<1>, sinew::NoActivation, 0, 0>>;
template <class B>
using flatten_op = typename B::template op<sinew::Node<sinew::Flatten, sinew::Shape<1, 1, 1>, sinew::NoActivation, 0, 0>>;
template <class B>
using batch_norm_op = typename B::template op<sinew::Node<sinew::BatchNorm2d, sinew::Shape<1, 1, 1>, sinew::NoActivation, 0, 0>>;

double seconds_of(const std::map<OpKind, double>& parts, OpKind k) {
  const auto it = parts.find(k);
  return it == parts.end() ? 0.0 : it->second;
}

/// Runs one task on backend B; returns its rows (none if B lacks the operation).
template <class B>
std::vector<Row> run_on(typename B::context& ctx, const Task& t, const Timing& timing) {
  constexpr bool kOneDnn = std::is_same_v<B, OneDnn>;
  const std::string backend(B::kName);
  std::vector<Row> rows;
  const auto row = [&](std::string op, double seconds, std::string impl) {
    rows.push_back({std::move(op), backend, t.shape, 0, "", seconds, 0, 0, std::move(impl)});
  };
  const std::string& g = t.group;
  if (g == "relu" || g == "tanh" || g == "sigmoid") {
    const long n = get(t, "n");
    const auto kind = g == "relu" ? sinew::simd::activation::relu
                      : g == "tanh" ? sinew::simd::activation::tanh
                                    : sinew::simd::activation::sigmoid;
    held_tensor<B> x;
    x.make(ctx, B::plain_desc(1, int(n), 1, 1), std::size_t(n));
    activation_op<B> op;
    op.setup(ctx, B::plain_desc(1, int(n), 1, 1), kind, false);
    row(g, median_seconds(timing, [&] { op.forward(ctx, *x.tensor); }), "sinew activation op");
  } else if (g == "zeros") {
    const long n = get(t, "n");
    if constexpr (kOneDnn) {
      const onednn::desc d({n}, onednn::dt::f32, onednn::tag::x);
      row(g, median_seconds(timing, [&] {
            onednn::memory m(d, ctx.engine());
            std::memset(m.get_data_handle(), 0, std::size_t(n) * sizeof(float));
          }),
          "dnnl::memory + memset");
    } else {
      row(g, median_seconds(timing, [&] {
            ::Eigen::Tensor<float, 1, ::Eigen::RowMajor, eigen::index> v(n);
            v.device(ctx.dev()) = v.constant(0.0f);
          }),
          "Eigen::Tensor + constant(0) on the pool");
    }
  } else if (g == "softplus" || g == "softsign") {
    const long n = get(t, "n");
    AlignedBuffer<float> x(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n));
    fill_values(x.data(), x.size());
    if constexpr (kOneDnn) {
      if (g == "softsign") return rows;  // oneDNN 2.6 has no softsign
      const onednn::desc d({n}, onednn::dt::f32, onednn::tag::x);
      const auto pd = onednn::compat::eltwise_forward(ctx.engine(), dnnl::prop_kind::forward_inference,
                                                      dnnl::algorithm::eltwise_soft_relu, d, 1.f);  // alpha 1: log(1 + e^x)
      dnnl::eltwise_forward prim(pd);
      onednn::memory src(d, ctx.engine(), x.data()), dst(d, ctx.engine(), y.data());
      const onednn::bound_args args{{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}};
      row(g, median_seconds(timing, [&] { onednn::run(ctx, prim, args); }), "oneDNN eltwise soft_relu");
    } else {
      const eigen::index len = n;
      ::Eigen::TensorMap<::Eigen::Tensor<const float, 1, ::Eigen::RowMajor, eigen::index>> in(x.data(), len);
      ::Eigen::TensorMap<::Eigen::Tensor<float, 1, ::Eigen::RowMajor, eigen::index>> out(y.data(), len);
      if (g == "softplus")
        row(g, median_seconds(timing, [&] { out.device(ctx.dev()) = in.exp().log1p(); }), "Eigen log1p(exp(x))");
      else
        row(g, median_seconds(timing, [&] { out.device(ctx.dev()) = in / (in.abs() + 1.0f); }),
            "Eigen x / (1 + |x|)");
    }
  } else if (g == "dot" || g == "gemm") {
    // Dense: [rows, inputs] x [outputs, inputs]^T; dot is 1 x n by 1 x n, gemm n x n by n x n.
    const long n = get(t, "n");
    const int rows_n = g == "dot" ? 1 : int(n), outputs = g == "dot" ? 1 : int(n);
    held_tensor<B> x;
    flatten_op<B> flat;  // the flat input a Dense sees in a network
    flat.setup(ctx, B::plain_desc(rows_n, int(n), 1, 1), rows_n, false);
    x.make(ctx, B::plain_desc(rows_n, int(n), 1, 1), std::size_t(rows_n) * n);
    flat.forward(ctx, *x.tensor);
    held_params params(std::size_t(outputs) * n, 0);
    dense_op<B> op;
    op.setup(ctx, flat.dst_desc(), rows_n, outputs, false, sinew::simd::activation::none, params.slots(), false);
    row(g, median_seconds(timing, [&] { op.forward(ctx, flat.dst()); }), "sinew Dense op forward");
  } else if (g == "flatten") {
    const int n = int(get(t, "n")), c = int(get(t, "c")), h = int(get(t, "h")), w = int(get(t, "w"));
    const auto d = natural_desc<B>(ctx, n, c, h, w);
    held_tensor<B> x;
    x.make(ctx, d, std::size_t(n) * c * h * w);
    flatten_op<B> op;
    op.setup(ctx, d, n, false);
    row(g, median_seconds(timing, [&] { op.forward(ctx, *x.tensor); }), "sinew Flatten op");
  } else if (g == "normalize") {
    const long rows_n = get(t, "rows"), cols = get(t, "cols");
    AlignedBuffer<float> x(std::size_t(rows_n * cols)), y(std::size_t(rows_n * cols));
    fill_values(x.data(), x.size());
    if constexpr (kOneDnn) {
      const onednn::desc d({rows_n, cols}, onednn::dt::f32, onednn::tag::ab);
      const auto pd = onednn::compat::layer_norm_forward(ctx.engine(), dnnl::prop_kind::forward_inference, d, 1e-5f,
                                                         dnnl::normalization_flags::none);
      dnnl::layer_normalization_forward prim(pd);
      onednn::memory src(d, ctx.engine(), x.data()), dst(d, ctx.engine(), y.data());
      onednn::memory mean(pd.mean_desc(), ctx.engine()), var(pd.variance_desc(), ctx.engine());
      const onednn::bound_args args{
          {DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_MEAN, mean}, {DNNL_ARG_VARIANCE, var}};
      row(g, median_seconds(timing, [&] { onednn::run(ctx, prim, args); }), "oneDNN layer_normalization");
    } else {
      const eigen::const_matrix in = eigen::as_matrix(static_cast<const float*>(x.data()), rows_n, cols);
      eigen::matrix out = eigen::as_matrix(y.data(), rows_n, cols);
      ::Eigen::Tensor<float, 1, ::Eigen::RowMajor, eigen::index> mean(rows_n), inv(rows_n);
      const std::array<eigen::index, 1> along{1};
      const std::array<eigen::index, 2> column{rows_n, 1}, across{1, cols};
      row(g, median_seconds(timing, [&] {
            const auto& dev = ctx.dev();
            mean.device(dev) = in.mean(along);
            out.device(dev) = in - mean.reshape(column).broadcast(across);
            inv.device(dev) = (out.square().mean(along) + 1e-5f).rsqrt();
            out.device(dev) = out * inv.reshape(column).broadcast(across);
          }),
          "Eigen mean/broadcast/rsqrt expressions");
    }
  } else if (g == "conv") {
    const sinew::backend::Conv2dConfig c{int(get(t, "n")), int(get(t, "c")),  int(get(t, "h")),  int(get(t, "w")),
                                int(get(t, "o")), int(get(t, "oh")), int(get(t, "ow")), int(get(t, "k")),
                                int(get(t, "s")), int(get(t, "p")),  get(t, "bias") != 0,
                                sinew::simd::activation::none};
    const auto d = natural_desc<B>(ctx, c.batch, c.in_c, c.in_h, c.in_w);
    held_tensor<B> x, dy;
    x.make(ctx, d, std::size_t(c.batch) * c.in_c * c.in_h * c.in_w);
    held_params params(std::size_t(c.out_c) * c.in_c * c.kernel * c.kernel, std::size_t(c.out_c));
    // conv_forward etc. are the general op's rows (the thin op's on thin shapes); conv_lowered_forward etc. OneDnn's
    // lowered op on the same input, beside them where a net would take it (the input arrives blocked, as from
    // a direct convolution, so its forward includes the reorder to NHWC).
    auto run = [&](auto op, const std::string& name, const char* impl) {
      op.setup(ctx, d, c, params.slots(), true);
      op.bind_diff_dst(ctx, op.dst_desc());
      dy.make(ctx, op.dst_desc(), std::size_t(c.batch) * c.out_c * c.out_h * c.out_w);
      row(name + "_forward", median_seconds(timing, [&] { op.forward(ctx, *x.tensor); }), impl);
      const auto parts = median_parts(timing, [&](auto& probe) { op.backward(ctx, *x.tensor, *dy.tensor, probe); });
      row(name + "_backward_data", seconds_of(parts, OpKind::convolution_backward_data), std::string(impl) + " (probe)");
      row(name + "_backward_weights", seconds_of(parts, OpKind::convolution_backward_weights),
          std::string(impl) + (c.bias ? " (probe), weights and bias" : " (probe)"));
    };
    bool thin = false, lowered = false;
    if constexpr (std::is_same_v<B, sinew::backend::OneDnn>) {
      namespace od = sinew::backend::onednn;
      thin = od::conv_is_thin(c.in_c, c.out_c, c.stride);
      lowered = !thin && !od::conv_is_small_image(c.in_h, c.in_w, c.out_h, c.out_w, c.kernel) &&
                od::conv_is_lowered(c.out_h, c.out_w, c.kernel, c.stride, c.out_c);
    }
    if (thin)
      run(thin_conv_op<B>{}, "conv", "sinew Conv2d op");
    else
      run(conv_op<B>{}, "conv", "sinew Conv2d op");
    if constexpr (std::is_same_v<B, sinew::backend::OneDnn>)
      if (lowered) run(sinew::backend::onednn::lowered_conv2d_op{}, "conv_lowered", "sinew lowered Conv2d op (im2col)");
  } else if (g == "fc") {
    const int n = int(get(t, "n")), in = int(get(t, "in")), out = int(get(t, "out"));
    held_tensor<B> x, dy;
    flatten_op<B> flat;
    flat.setup(ctx, B::plain_desc(n, in, 1, 1), n, false);
    x.make(ctx, B::plain_desc(n, in, 1, 1), std::size_t(n) * in);
    flat.forward(ctx, *x.tensor);
    held_params params(std::size_t(out) * in, std::size_t(out));
    dense_op<B> op;
    op.setup(ctx, flat.dst_desc(), n, out, true, sinew::simd::activation::none, params.slots(), true);
    op.bind_diff_dst(ctx, op.dst_desc());
    dy.make(ctx, op.dst_desc(), std::size_t(n) * out);
    row("fc_forward", median_seconds(timing, [&] { op.forward(ctx, flat.dst()); }), "sinew Dense op");
    if constexpr (kOneDnn) {
      // The anchor of the Dense op's matmul forward: the inner product it replaced, on the same memories.
      using namespace dnnl;
      const onednn::desc w_rows({out, in}, onednn::dt::f32, onednn::tag::oi), b({out}, onednn::dt::f32, onednn::tag::x);
      const auto pd = onednn::compat::forward<inner_product_forward>(ctx.engine(), {}, prop_kind::forward_training,
                                                                     flat.dst_desc(), w_rows, b, op.dst_desc());
      const inner_product_forward ip(pd);
      const onednn::bound_args args{{DNNL_ARG_SRC, flat.dst()},
                                    {DNNL_ARG_WEIGHTS, onednn::memory(w_rows, ctx.engine(), params.slots().weights)},
                                    {DNNL_ARG_BIAS, onednn::memory(b, ctx.engine(), params.slots().bias)},
                                    {DNNL_ARG_DST, op.dst()}};
      row("fc_forward_inner_product", median_seconds(timing, [&] { onednn::run(ctx, ip, args); }),
          std::string("oneDNN inner product, row-major weights (") + pd.impl_info_str() + ")");
    }
    const auto parts = median_parts(timing, [&](auto& probe) { op.backward(ctx, flat.dst(), *dy.tensor, probe); });
    row("fc_backward_data", seconds_of(parts, OpKind::fully_connected_backward_data), "sinew Dense op (probe)");
    if constexpr (kOneDnn) {
      // The anchor of the Dense op's backward data: the inner product's own, on the same memories.
      using namespace dnnl;
      const onednn::desc w_rows({out, in}, onednn::dt::f32, onednn::tag::oi);
      const auto fwd = onednn::compat::forward<inner_product_forward>(ctx.engine(), {}, prop_kind::forward_training,
                                                                      flat.dst_desc(), w_rows, op.dst_desc());
      const auto pd = onednn::compat::backward<inner_product_backward_data>(ctx.engine(), fwd, op.diff_src_desc(), w_rows,
                                                                            op.dst_desc());
      const inner_product_backward_data ip(pd);
      const onednn::bound_args args{{DNNL_ARG_DIFF_DST, *dy.tensor},
                                    {DNNL_ARG_WEIGHTS, onednn::memory(w_rows, ctx.engine(), params.slots().weights)},
                                    {DNNL_ARG_DIFF_SRC, op.diff_src()}};
      row("fc_backward_data_inner_product", median_seconds(timing, [&] { onednn::run(ctx, ip, args); }),
          std::string("oneDNN inner product backward data, row-major weights (") + pd.impl_info_str() + ")");
    }
    row("fc_backward_weights", seconds_of(parts, OpKind::fully_connected_backward_weights),
        "sinew Dense op (probe), weights and bias");
  } else if (g == "pooling") {
    const int n = int(get(t, "n")), c = int(get(t, "c")), h = int(get(t, "h")), w = int(get(t, "w"));
    const int k = int(get(t, "k")), s = int(get(t, "s")), oh = (h - k) / s + 1, ow = (w - k) / s + 1;
    const auto d = natural_desc<B>(ctx, n, c, h, w);
    held_tensor<B> x, dy;
    x.make(ctx, d, std::size_t(n) * c * h * w);
    using pool_op = typename B::template op<sinew::Node<sinew::MaxPool<1>, sinew::Shape<1, 1, 1>, sinew::NoActivation, 0, 0>>;
    pool_op op;
    if constexpr (kOneDnn)
      op.setup(ctx, d, n, c, oh, ow, k, s, 0, dnnl::algorithm::pooling_max, true);
    else
      op.setup(ctx, d, typename pool_op::config{n, c, h, w, oh, ow, k, s, 0, true}, true);
    op.bind_diff_dst(ctx, op.dst_desc());
    dy.make(ctx, op.dst_desc(), std::size_t(n) * c * oh * ow);
    row("pooling_forward", median_seconds(timing, [&] { op.forward(ctx, *x.tensor); }), "sinew MaxPool op");
    row("pooling_backward", median_seconds(timing, [&] { op.backward(ctx, *x.tensor, *dy.tensor); }),
        "sinew MaxPool op");
  } else if (g == "batch_norm") {
    const int n = int(get(t, "n")), c = int(get(t, "c")), h = int(get(t, "h")), w = int(get(t, "w"));
    const auto d = natural_desc<B>(ctx, n, c, h, w);
    held_tensor<B> x, dy;
    x.make(ctx, d, std::size_t(n) * c * h * w);
    held_params params(static_cast<std::size_t>(c), static_cast<std::size_t>(c), 2 * static_cast<std::size_t>(c));
    batch_norm_op<B> op;
    op.setup(ctx, d, {n, c, h, w, 1e-5f, sinew::simd::activation::none}, params.slots(), true);
    op.bind_diff_dst(ctx, op.dst_desc());
    dy.make(ctx, op.dst_desc(), std::size_t(n) * c * h * w);
    row("batch_norm_forward", median_seconds(timing, [&] { op.forward(ctx, *x.tensor); }),
        "sinew BatchNorm2d op (training)");
    row("batch_norm_backward", median_seconds(timing, [&] { op.backward(ctx, *x.tensor, *dy.tensor); }),
        "sinew BatchNorm2d op");
  }
  return rows;
}

/// sgd_update does not depend on the backend.
Row run_sgd(const Task& t, const Timing& timing) {
  const std::size_t n = std::size_t(get(t, "n"));
  AlignedBuffer<float> p(n), g(n);
  fill_values(p.data(), n);
  fill_values(g.data(), n, 0.001f);
  sinew::optim::Sgd sgd({.lr = 0.01f, .momentum = 0.9f}, n);
  const double s = median_seconds(timing, [&] { sgd.step(p.span(), g.span()); });
  return {"sgd_update", "sinew", t.shape, 0, "", s, 0, 0, "optim::Sgd momentum 0.9"};
}

std::string dims(std::initializer_list<long> v) {
  std::string s;
  for (long x : v) {
    if (!s.empty()) s += 'x';
    s += std::to_string(x);
  }
  return s;
}

/// Every task of the run, in order.
std::vector<Task> plan(bool quick, int batch, int min_exp, int max_exp) {
  std::vector<Task> tasks;
  const int step = quick ? std::max(2, (max_exp - min_exp)) : 2;
  for (const char* g : {"zeros", "relu", "tanh", "sigmoid", "softplus", "softsign", "dot"})
    for (int e = min_exp; e <= max_exp; e += step) tasks.push_back({g, "2^" + std::to_string(e), {{"n", 1L << e}}});
  for (int side = 32; side <= (quick ? 64 : 2048); side *= 2)
    tasks.push_back({"gemm", dims({side, side, side}), {{"n", side}}});
  for (int e = std::max(min_exp, 12); e <= max_exp; e += step) {
    const long n = (1L << e) / 4096;
    tasks.push_back({"flatten", dims({n, 64, 8, 8}), {{"n", n}, {"c", 64}, {"h", 8}, {"w", 8}}});
  }
  for (int e = std::max(min_exp, 10); e <= max_exp; e += step)
    tasks.push_back({"normalize", dims({(1L << e) / 1024, 1024}), {{"rows", (1L << e) / 1024}, {"cols", 1024}}});

  // Conv2d shapes of the zoo on 3x32x32 input (ResNet-18 with the CIFAR stem; torchvision's VGG-16 and AlexNet;
  // LeNet-5's thin 3->6 and 6->16 channels), and AlexNet's third on the 64x64 input bench/zoo gives it.
  struct conv {
    const char* name;
    int c, h, o, k, s, p, bias;
  };
  const std::vector<conv> convs_all{
      {"resnet18.conv1", 3, 32, 64, 3, 1, 1, 0},      {"resnet18.layer1", 64, 32, 64, 3, 1, 1, 0},
      {"resnet18.layer2.0", 64, 32, 128, 3, 2, 1, 0},  {"resnet18.layer2.proj", 64, 32, 128, 1, 2, 0, 0},
      {"resnet18.layer2", 128, 16, 128, 3, 1, 1, 0},   {"resnet18.layer3.0", 128, 16, 256, 3, 2, 1, 0},
      {"resnet18.layer3", 256, 8, 256, 3, 1, 1, 0},    {"resnet18.layer4.0", 256, 8, 512, 3, 2, 1, 0},
      {"resnet18.layer4", 512, 4, 512, 3, 1, 1, 0},    {"vgg16.conv1_1", 3, 32, 64, 3, 1, 1, 1},
      {"vgg16.conv1_2", 64, 32, 64, 3, 1, 1, 1},       {"vgg16.conv2_1", 64, 16, 128, 3, 1, 1, 1},
      {"vgg16.conv2_2", 128, 16, 128, 3, 1, 1, 1},     {"vgg16.conv3_1", 128, 8, 256, 3, 1, 1, 1},
      {"vgg16.conv3_2", 256, 8, 256, 3, 1, 1, 1},      {"vgg16.conv4_1", 256, 4, 512, 3, 1, 1, 1},
      {"vgg16.conv4_2", 512, 4, 512, 3, 1, 1, 1},      {"vgg16.conv5", 512, 2, 512, 3, 1, 1, 1},
      {"alexnet.conv1", 3, 32, 64, 11, 4, 2, 1},       {"alexnet.conv2", 64, 3, 192, 5, 1, 2, 1},
      {"alexnet.conv3", 192, 1, 384, 3, 1, 1, 1},      {"alexnet64.conv3", 192, 3, 384, 3, 1, 1, 1},
      {"lenet5.conv1", 3, 32, 6, 5, 1, 0, 1},
      {"lenet5.conv2", 6, 14, 16, 5, 1, 0, 1}};
  const std::vector<conv> convs_quick{convs_all[0], convs_all[6]};
  for (const conv& c : quick ? convs_quick : convs_all) {
    const long oh = (c.h + 2 * c.p - c.k) / c.s + 1;
    tasks.push_back({"conv",
                     std::string(c.name) + " " + dims({batch, c.c, c.h, c.h}) + " o" + std::to_string(c.o) + " k" +
                         std::to_string(c.k) + "s" + std::to_string(c.s) + "p" + std::to_string(c.p),
                     {{"n", batch}, {"c", c.c}, {"h", c.h}, {"w", c.h}, {"o", c.o}, {"oh", oh}, {"ow", oh},
                      {"k", c.k}, {"s", c.s}, {"p", c.p}, {"bias", c.bias}}});
  }
  struct map {
    const char* name;
    int c, h;
  };
  const std::vector<map> bn_all{{"resnet18.layer1", 64, 32}, {"resnet18.layer2", 128, 16}, {"resnet18.layer3", 256, 8},
                                {"resnet18.layer4", 512, 4}};
  for (const map& m : quick ? std::vector<map>{bn_all[2]} : bn_all)
    tasks.push_back({"batch_norm", std::string(m.name) + " " + dims({batch, m.c, m.h, m.h}),
                     {{"n", batch}, {"c", m.c}, {"h", m.h}, {"w", m.h}}});
  const std::vector<map> pool_all{{"vgg16.pool1", 64, 32}, {"vgg16.pool2", 128, 16}, {"vgg16.pool3", 256, 8},
                                  {"vgg16.pool4", 512, 4}};
  for (const map& m : quick ? std::vector<map>{pool_all[2]} : pool_all)
    tasks.push_back({"pooling", std::string(m.name) + " " + dims({batch, m.c, m.h, m.h}) + " k2s2",
                     {{"n", batch}, {"c", m.c}, {"h", m.h}, {"w", m.h}, {"k", 2}, {"s", 2}}});
  if (!quick)
    tasks.push_back({"pooling", "alexnet.pool1 " + dims({batch, 64, 7, 7}) + " k3s2",
                     {{"n", batch}, {"c", 64}, {"h", 7}, {"w", 7}, {"k", 3}, {"s", 2}}});
  struct fc {
    const char* name;
    int in, out;
  };
  const std::vector<fc> fc_all{{"vgg16.fc1", 25088, 4096}, {"vgg16.fc2", 4096, 4096}, {"alexnet.fc1", 9216, 4096},
                               {"resnet18.fc", 512, 10},   {"lenet5.fc1", 400, 120},   {"lenet5.fc2", 120, 84},
                               {"lenet5.fc3", 84, 10}};
  for (const fc& f : quick ? std::vector<fc>{fc_all[3]} : fc_all)
    tasks.push_back({"fc", std::string(f.name) + " " + dims({batch, f.in}) + " o" + std::to_string(f.out),
                     {{"n", batch}, {"in", f.in}, {"out", f.out}}});
  const long params = quick ? 1L << 16 : 11689512L;  // ResNet-18 (ImageNet head)
  tasks.push_back({"sgd_update", std::to_string(params) + " params", {{"n", params}}});
  return tasks;
}

/// The x axis of a row's plot, its work (flops) and its memory traffic (bytes, floats read + written).
void annotate(Row& r, const Task& t) {
  const auto p = [&](const char* k) { return double(get(t, k)); };
  const std::string& op = r.operation;
  if (t.group == "conv") {
    r.flops = 2 * p("n") * p("o") * p("oh") * p("ow") * p("c") * p("k") * p("k");
    r.size = r.flops, r.size_unit = "flop";
  } else if (t.group == "fc") {
    r.flops = 2 * p("n") * p("in") * p("out");
    r.size = r.flops, r.size_unit = "flop";
  } else if (t.group == "gemm") {
    r.flops = 2 * p("n") * p("n") * p("n");
    r.size = p("n"), r.size_unit = "side";
  } else if (t.group == "dot") {
    r.flops = 2 * p("n");
    r.bytes = 8 * p("n");
    r.size = p("n"), r.size_unit = "elements";
  } else if (t.group == "batch_norm" || t.group == "pooling") {
    const double in = p("n") * p("c") * p("h") * p("w");
    double out = in;
    if (t.group == "pooling") out = p("n") * p("c") * std::pow(std::floor((p("h") - p("k")) / p("s")) + 1, 2);
    const bool fwd = op.find("forward") != std::string::npos;
    r.bytes = 4 * (fwd ? in + out : in + 2 * out + in);  // backward reads src (BN) / workspace, dy; writes dx
    r.size = in, r.size_unit = "elements";
  } else if (t.group == "sgd_update") {
    r.bytes = 4 * 5 * p("n");  // reads p, g, momentum; writes p, momentum
    r.size = p("n"), r.size_unit = "elements";
  } else {
    const double n = t.group == "normalize" ? p("rows") * p("cols")
                     : t.group == "flatten" ? p("n") * p("c") * p("h") * p("w")
                                            : p("n");
    r.bytes = t.group == "zeros" ? 4 * n : 8 * n;
    r.size = n, r.size_unit = "elements";
  }
}

std::string csv_escape(const std::string& s) {
  return s.find(',') == std::string::npos ? s : "\"" + s + "\"";
}

}  // namespace

int main(int argc, char** argv) try {
  bool quick = false;
  int threads = 2, min_exp = 10;
  std::optional<int> batch_option, max_exp_option;  // defaults depend on --quick
  std::optional<double> min_time_option;
  std::vector<std::string> backends{"onednn", "eigen", "pytorch"};
  std::string only, csv = "ops.csv", plot;
  CLI::App app{"Fundamental operations and the zoo's training operators on OneDnn, Eigen and PyTorch in one run "
               "(see bench/README.md)",
               "ops"};
  app.add_flag("--quick", quick, "a few seconds: two sizes per operation, batch 2");
  sinew::cli::add_threads(app, threads);
  app.add_option("--batch", batch_option, "batch of the zoo operators (default 42, --quick 2)")
      ->check(CLI::PositiveNumber);
  app.add_option("--min-time", min_time_option, "seconds each measurement runs at least (default 0.3, --quick 0)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--min-exp", min_exp, "smallest vector: 2^this elements")
      ->capture_default_str()
      ->check(CLI::Range(0, 40));
  app.add_option("--max-exp", max_exp_option, "largest vector: 2^this elements (default 24, --quick 14)")
      ->check(CLI::Range(0, 40));
  app.add_option("--backends", backends, "comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"onednn", "eigen", "pytorch"}));
  app.add_option("--only", only, "only the operations whose name and shape contain this")->option_text("SUBSTRING");
  app.add_option("--csv", csv, "the results")->capture_default_str();
  app.add_option("--plot", plot, "one log-log PNG per operation into this directory")->option_text("DIR");
  sinew::cli::parse(app, argc, argv);
  const int batch = batch_option.value_or(quick ? 2 : 42);
  const int max_exp = max_exp_option.value_or(quick ? 14 : 24);
  Timing timing{min_time_option.value_or(quick ? 0.0 : 0.3), quick ? 3 : 1000};
  const auto wanted = [&](const char* b) { return std::find(backends.begin(), backends.end(), b) != backends.end(); };
  if (const auto dir = std::filesystem::path(csv).parent_path(); !dir.empty()) std::filesystem::create_directories(dir);

  std::vector<Task> tasks = plan(quick, batch, min_exp, max_exp);
  if (!only.empty())
    std::erase_if(tasks, [&](const Task& t) { return (t.group + " " + t.shape).find(only) == std::string::npos; });
  std::map<std::pair<std::string, std::string>, const Task*> task_of;  // (group, shape) -> task

  std::vector<Row> rows;
  OneDnn::context onednn_ctx({.threads = threads});
  EigenBackend::context eigen_ctx({.threads = threads});
  for (const Task& t : tasks) {
    task_of[{t.group, t.shape}] = &t;
    std::vector<Row> got;
    if (t.group == "sgd_update") {
      got.push_back(run_sgd(t, timing));
    } else {
      if (wanted("onednn"))
        for (Row& r : run_on<OneDnn>(onednn_ctx, t, timing)) got.push_back(std::move(r));
      if (wanted("eigen"))
        for (Row& r : run_on<EigenBackend>(eigen_ctx, t, timing)) got.push_back(std::move(r));
    }
    for (Row& r : got) {
      annotate(r, t);
      std::printf("%-22s %-7s %-48s %12.6f ms\n", r.operation.c_str(), r.backend.c_str(), r.shape.c_str(),
                  1e3 * r.seconds);
      rows.push_back(std::move(r));
    }
    std::fflush(stdout);
  }

  if (wanted("pytorch")) {
    // The same tasks, as a plan file: group<TAB>shape<TAB>key=value,...
    const std::string plan_path = csv + ".plan.tsv", torch_csv = csv + ".pytorch.csv";
    {
      std::ofstream f(plan_path);
      for (const Task& t : tasks) {
        f << t.group << '\t' << t.shape << '\t';
        bool first = true;
        for (const auto& [k, v] : t.p) f << (first ? "" : ",") << k << '=' << v, first = false;
        f << '\n';
      }
    }
    const std::string command = "/usr/bin/python3 " SINEW_SOURCE_DIR "/bench/pytorch/ops.py --plan " + plan_path +
                                " --out " + torch_csv + " --threads " + std::to_string(threads) + " --min-time " +
                                std::to_string(timing.min_time) + " --max-calls " + std::to_string(timing.max_calls);
    std::fflush(stdout);
    const int status = std::system(command.c_str());
    if (status != 0) {
      std::fprintf(stderr, "ops: no PyTorch rows (bench/pytorch/ops.py exited with %d)\n", status >> 8);
    } else {
      std::ifstream f(torch_csv);
      std::string line;
      std::getline(f, line);  // header: group,operation,shape,seconds,impl
      while (std::getline(f, line)) {
        std::stringstream ss(line);
        std::string group, op, shape, seconds, impl;
        std::getline(ss, group, ',');
        std::getline(ss, op, ',');
        std::getline(ss, shape, ',');
        std::getline(ss, seconds, ',');
        std::getline(ss, impl);
        const auto it = task_of.find({group, shape});
        if (it == task_of.end()) continue;
        Row r{op, "pytorch", shape, 0, "", std::stod(seconds), 0, 0, impl};
        annotate(r, *it->second);
        rows.push_back(std::move(r));
      }
    }
  }

  std::ofstream out(csv);
  if (!out) throw sinew::error("ops: cannot open " + csv + " for writing");
  out << "operation,backend,shape,size,size_unit,seconds,gflops,gbps,impl\n";
  for (const Row& r : rows) {
    out << r.operation << ',' << r.backend << ',' << csv_escape(r.shape) << ',' << r.size << ',' << r.size_unit << ','
        << r.seconds << ',';
    if (r.flops > 0 && r.seconds > 0) out << r.flops / r.seconds / 1e9;
    out << ',';
    if (r.bytes > 0 && r.seconds > 0) out << r.bytes / r.seconds / 1e9;
    out << ',' << csv_escape(r.impl) << '\n';
  }
  out.close();
  std::printf("ops: %zu rows in %s\n", rows.size(), csv.c_str());
  std::fflush(stdout);
  if (!plot.empty()) {
    const std::string command = "/usr/bin/python3 " SINEW_SOURCE_DIR "/bench/plot_ops.py " + csv + " " + plot;
    if (std::system(command.c_str()) != 0) throw sinew::error("ops: plotting failed (" + command + ")");
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "ops: %s\n", e.what());
  return 1;
}
