// sinew/backend/generic/pooled_dense.hpp: a PooledDense node (an enlarging adaptive pool, Flatten and a Dense;
// layers/detail/pooled_dense.hpp) as one product on the pool's input, with the Dense's matrix folded, on every
// backend: the backend's own Flatten and Dense ops run on the folded matrix.
//
// The Dense's matrix W is [Out, C x OH x OW] (PyTorch's layout, in the flat buffer); the pool's input is
// C x H x W with fewer pixels. The folded matrix F [Out, C x H x W] holds, for each input pixel, the sum of W's
// columns of the cells whose bins cover it, each divided by its bin's size; y = F x + b is the Dense's output on
// the pooled x. Backward computes dF = dy^T x and dx = dy F on the small product, and spreads dF back: the
// gradient of W's column for cell (i, j) is the mean of dF over the cell's bin. On VGG-16 at 32 x 32 (1 x 1 ->
// 7 x 7) that is a 4096 x 512 product in place of 4096 x 25088, and one pass over W at memory speed each way (the
// fold before the forward, the spread after the backward) in place of three products that read it (figures:
// bench/README.md, "Why the kernels are as they are"). The fold is redone only where the weights changed since the
// last forward (weight_cache.hpp): inference folds once.
//
// Every backend folds, so that swapping the backend under a VGG changes the operator library and nothing else; the
// pool itself runs nowhere (a Mix's Use of adaptive_pooling does not reach this node), and the Flatten and the
// Dense follow a Mix's Uses as written layers do.
#pragma once

#include <algorithm>
#include <cstddef>

#include "sinew/backend/generic/adaptive_bins.hpp"
#include "sinew/backend/generic/chain.hpp"
#include "sinew/backend/generic/weight_cache.hpp"
#include "sinew/backend/op_table.hpp"
#include "sinew/core/elementwise.hpp"
#include "sinew/core/parallel.hpp"
#include "sinew/core/streaming_store.hpp"
#include "sinew/layers/detail/pooled_dense.hpp"
#include "sinew/tensor/buffer.hpp"

namespace sinew::backend::generic {

template <class B, NodeType N>
class pooled_dense_op {
  using tensor = typename B::tensor;
  using tensor_desc = typename B::tensor_desc;
  using In = typename N::input;
  using Pooled = typename N::layer::template pooled<In>;
  // Flatten and the Dense on the pool's input, reading the folded matrix.
  using DenseNode = Node<typename N::layer::dense, Flat<int(In::kSize)>, typename N::activation, 0, 1, 0>;
  using Nodes = type_list<Node<Flatten, In, NoActivation, 0, 0, 0>, DenseNode>;

  static constexpr std::size_t kOutputs = std::size_t(N::layer::kOutputs), kChannels = std::size_t(In::kChannels);
  static constexpr std::size_t kPixels = std::size_t(In::kHeight * In::kWidth);
  static constexpr std::size_t kCells = std::size_t(Pooled::kHeight * Pooled::kWidth);

 public:
  template <NodeType M>
  void setup(typename B::context& ctx, const tensor_desc& src_desc, int batch, ParamSlots slots, bool need_diff_src) {
    user_ = slots;
    cells_ = adaptive_cells(In::kHeight, In::kWidth, Pooled::kHeight, Pooled::kWidth);
    // [F | b] and [dF | db]: the chain finds a node's bias after its weights, as in the flat buffer.
    folded_ = AlignedBuffer<float>(DenseNode::kWeights + DenseNode::kBias);
    diff_folded_ = AlignedBuffer<float>(DenseNode::kWeights + DenseNode::kBias);
    layers_.setup(ctx, src_desc, batch,
                  ParamSlots{folded_.data(), nullptr, diff_folded_.data(), nullptr, nullptr, slots.sum_over_workers},
                  need_diff_src);
  }

  tensor_desc dst_desc() const { return layers_.dst_desc(); }
  const tensor& dst() const { return layers_.dst(); }
  tensor_desc diff_src_desc() const { return layers_.diff_src_desc(); }
  const tensor& diff_src() const { return layers_.diff_src(); }
  void bind_diff_dst(typename B::context& ctx, const tensor_desc& d) { layers_.bind_diff_dst(ctx, d); }
  void set_mode(ForwardMode mode) {
    cache_.set_mode(mode);
    layers_.set_mode(mode);
  }

  void forward(typename B::context& ctx, const tensor& src) { forward(ctx, src, metrics::no_probe); }
  void backward(typename B::context& ctx, const tensor& src, const tensor& diff_dst) {
    backward(ctx, src, diff_dst, metrics::no_probe);
  }
  /// The fold counts as the Dense's forward, the spread as its backward weights; Flatten and the Dense in theirs.
  template <class Probe>
  void forward(typename B::context& ctx, const tensor& src, Probe& probe) {
    if (cache_.take()) {
      probe.begin(metrics::OpKind::fully_connected);
      fold();
    }
    layers_.forward(ctx, src, probe);
  }
  template <class Probe>
  void backward(typename B::context& ctx, const tensor& src, const tensor& diff_dst, Probe& probe) {
    layers_.backward(ctx, src, diff_dst, probe);
    probe.begin(metrics::OpKind::fully_connected_backward_weights);
    spread();
  }

 private:
  // F[o][c][p] = the sum over the cells whose bins cover pixel p of W[o][c][cell] / |bin(cell)|; the bias copied
  // after F. Both passes stream W (or its gradient) once; on a 1x1 input (VGG's case) every bin is the one pixel,
  // and the fold is a plain sum over each plane's cells (in vectors: eight scalar chains per plane took 1.22-1.67
  // times as long over VGG's W; bench/results/2026-12-04-zen5-vgg-head-passes), the spread a fill.
  void fold() {
    const float* w = user_.weights;
    float* f = folded_.data();
    parallel_ranges(kOutputs * kChannels, [&](std::size_t begin, std::size_t end) {
      for (std::size_t plane = begin; plane < end; ++plane) {
        const float* cells = w + plane * kCells;
        if constexpr (kPixels == 1) {
          f[plane] = simd::sum(cells, kCells);
        } else {
          float* pixels = f + plane * kPixels;
          std::fill_n(pixels, kPixels, 0.0f);
          cells_.unpool_add(cells, pixels);
        }
      }
    }, 1, 1);
    if constexpr (DenseNode::kBias > 0) std::copy_n(user_.bias, DenseNode::kBias, f + DenseNode::kWeights);
  }

  // dW[o][c][cell] = the mean of dF[o][c] over the cell's bin; every cell written (gradients are overwritten). It
  // is written a block of planes at a time into a buffer on the stack and copied out; a gradient larger than the
  // caches (VGG's 411 MB) is streamed out (core/streaming_store.hpp): nothing reads it before it has left them.
  void spread() {
    const float* df = diff_folded_.data();
    float* dw = user_.diff_weights;
    parallel_ranges(kOutputs * kChannels, [&](std::size_t begin, std::size_t end) {
      alignas(64) float block[kBlockPlanes * kCells];
      for (std::size_t first = begin; first < end; first += kBlockPlanes) {
        const std::size_t planes = std::min(kBlockPlanes, end - first);
        spread_planes(df, block, first, planes);
        if constexpr (kStreamed)
          simd::stream_copy(dw + first * kCells, block, planes * kCells);
        else
          std::copy_n(block, planes * kCells, dw + first * kCells);
      }
      if constexpr (kStreamed) simd::stream_fence();
    }, 16, 1);
    if constexpr (DenseNode::kBias > 0) std::copy_n(df + DenseNode::kWeights, DenseNode::kBias, user_.diff_bias);
  }
  // Planes [first, first + count)'s cells of dW, written to cells[0, count * kCells).
  void spread_planes(const float* df, float* cells, std::size_t first, std::size_t count) const {
    for (std::size_t k = 0; k < count; ++k, cells += kCells) {
      if constexpr (kPixels == 1) {
        std::fill_n(cells, kCells, df[first + k]);
      } else {
        cells_.pool(df + (first + k) * kPixels, cells);
      }
    }
  }
  // Streamed from 32 MiB on: beyond a core's share of any cache here; a smaller gradient may still be cached when
  // the optimizer reads it. Threads and blocks start at multiples of 16 planes, so that each block is whole 64-byte
  // lines of the node's 64-byte aligned slice (a line streamed in part goes out in pieces); a block (VGG: 48 planes
  // of 49 cells, 9.4 KB) stays in L1 between its write and its copy.
  static constexpr bool kStreamed = kOutputs * kChannels * kCells * sizeof(float) >= (std::size_t(1) << 25);
  static constexpr std::size_t kBlockPlanes = 16 * std::max<std::size_t>(1, 192 / kCells);

  ParamSlots user_;  // the Dense's weights, bias and gradients in the flat buffers (PyTorch's layout)
  chain<B, Nodes> layers_;
  weight_cache cache_;
  adaptive_cells cells_;  // the pool's bins
  AlignedBuffer<float> folded_, diff_folded_;
};

}  // namespace sinew::backend::generic

namespace sinew::backend {
/// Every backend runs a PooledDense node folded, with its own Flatten and Dense ops.
template <class B>
struct op_for<layer_kind::pooled_dense, B> {
  template <NodeType N>
  using type_for = generic::pooled_dense_op<B, N>;
};
}  // namespace sinew::backend
