// sinew/backend/eigen/conv2d.hpp: Conv2d (+ fused activation) as TensorFlow's SpatialConvolution computes it.
//
// Forward: the NHWC input's patches (rows of the [N*OH*OW, K*K*C] matrix P) multiplied by the weights as a
// [K*K*C, O] matrix (HWIO: PyTorch's OIHW weights are transposed into it each step, see to_hwio; in evaluation
// only after they changed, see backend/generic/weight_cache.hpp). Like
// TensorFlow's SpatialConvolution, which packs patches as its contraction reads them, P is never materialised:
// each pool thread packs a block of rows into a buffer of its own (one copy per kernel row, see pack_rows),
// multiplies it at once while it is in the core's cache, and adds the bias and applies the activation to the
// block's outputs right after, as TensorFlow's _FusedConv2D applies BiasAdd+Relu as an output kernel.
// The padding's zeros are skipped where that pays, as oneDNN's direct convolution skips them: the output
// pixels are grouped by which kernel taps fall inside the image (interior pixels have all K*K, a border pixel
// a range of kernel rows times a range of kernel columns), each group packs only its valid taps, over every
// image of the batch, and is multiplied by the matching rows of the HWIO weights (a range of kernel rows is
// one contiguous slice of them; with a range of kernel columns, one product per kernel row accumulates into
// the block). plan() chooses per layer between one group (zeros multiplied), groups by kernel rows only
// (whole output rows, so blocks are runs of consecutive output rows multiplied in place) and groups by kernel
// rows and columns (every zero skipped, each block's outputs copied to their rows), by the products saved
// against the weights read again and the outputs copied. ResNet-18 at batch 42: its first layer (27 taps)
// and layer1 multiply their few zeros; layer2 to layer4 skip them all (at 4x4 pixels, 31% of the products).
// A border group too small to pay for reading its weights again (batch-1 inference) keeps its zeros in the
// group of all taps. A 1x1 convolution with stride 1 and no padding packs nothing: its NHWC input is P,
// multiplied in place (ResNet-50's bottlenecks have three of them in each block).
// The matrix kernel is oneDNN's sgemm (gemm.hpp), as in TensorFlow's x86 builds, one single-threaded call per
// block on the pool thread that packed it.
// Backward weights: P^T dZ (TensorFlow's SpatialConvolutionBackwardKernel is the same contraction, on patches
// it extracts again): each pool thread packs its share of P's rows again, block by block into its buffer,
// zeros included, and accumulates P_block^T dZ_block into a partial sum of its own; the partials are added
// and transposed back to OIHW; bias: dZ summed over rows. Backward data: dP = dZ W^T in blocks of rows, then
// col2im. TensorFlow instead convolves the stride-inflated, padded output gradient with the flipped kernel;
// col2im does the same sums without the S^2 zeros of the inflated gradient, for any padding. dP is the one
// whole-layer [N*OH*OW, K*K*C] buffer, allocated only where the input gradient is asked for.
// All dimensions are runtime values: the op compiles once per translation unit whatever the network.
// This op computes one group of adjacent taps (Conv2dConfig::is_dense); grouped, depthwise and dilated
// convolutions run on grouped_conv2d.hpp's ops.
#pragma once

#include <cmath>
#include <cstring>
#include <map>
#include <vector>

#include "sinew/backend/eigen/common.hpp"
#include "sinew/backend/eigen/gemm.hpp"
#include "sinew/backend/eigen/grouped_conv2d.hpp"
#include "sinew/backend/generic/probe.hpp"
#include "sinew/backend/generic/weight_cache.hpp"

namespace sinew::backend::eigen {

class conv2d_op : public op_base<diff_dst_use::always> {
 public:
  using config = Conv2dConfig;

  template <NodeType N>
  void setup(context& ctx, const tensor_desc& src_desc, int batch, ParamSlots p, bool need_diff_src) {
    setup(ctx, src_desc, conv2d_config<N>(batch), p, need_diff_src);
  }

  void setup(context& ctx, const tensor_desc& src_desc, const config& c, ParamSlots p, bool need_diff_src) {
    c.require_dense("eigen::conv2d_op", "the op_for below sends the others to grouped_conv2d.hpp's ops");
    c_ = c;
    p_ = p;
    if (!c.bias) p_.bias = p_.diff_bias = nullptr;
    need_diff_src_ = need_diff_src;
    rows_ = index(c.batch) * c.out_h * c.out_w;
    depth_ = index(c.kernel) * c.kernel * c.in_c;
    const tensor_desc in = make_desc(c.batch, c.in_c, c.in_h, c.in_w, layout::nhwc);
    src_.setup(ctx, src_desc, in);
    dst_.allocate(make_desc(c.batch, c.out_c, c.out_h, c.out_w, layout::nhwc));
    weights_ = AlignedBuffer<float>(std::size_t(depth_) * c.out_c);
    diff_weights_ = AlignedBuffer<float>(std::size_t(depth_) * c.out_c);
    // The weights gradient's partial sums of every thread but the first (see weights_gradient).
    partials_ = AlignedBuffer<float>(std::size_t(std::max(ctx.threads() - 1, 0)) * depth_ * c.out_c);
    act_.setup(c.act, dst_.desc().size());
    plan(std::max(ctx.threads(), 1));
    if (need_diff_src) {
      diff_patches_ = AlignedBuffer<float>(std::size_t(rows_ * depth_));
      diff_src_.allocate(in);
    }
  }

  /// How the forward groups the output pixels by the kernel taps that fall inside the image (see plan()).
  enum class grouping {
    none,         ///< all in one group: the padding's zeros multiplied with the rest
    kernel_rows,  ///< by the range of kernel rows: runs of whole output rows, multiplied in place
    taps,         ///< by kernel rows and columns: every zero skipped, each block's outputs copied to their rows
  };
  /// The grouping that the last setup() chose.
  grouping pixel_grouping() const noexcept { return grouping_; }

  /// Whether the next forward may keep the HWIO weights of the last one (backend/generic/weight_cache.hpp).
  void set_mode(const ForwardMode& mode) noexcept { weights_cache_.set_mode(mode); }
  template <class = void>  // instantiated only if used: see common.hpp, "Compile time"
  void forward(context& ctx, const tensor& src) { forward(ctx, src, metrics::no_probe); }
  template <class = void>  // instantiated only if used: see common.hpp, "Compile time"
  void backward(context& ctx, const tensor& src, const tensor& diff_dst) {
    backward(ctx, src, diff_dst, metrics::no_probe);
  }

  /// The probe sees the convolution (with the bias), then the activation. Unprofiled, the activation is
  /// applied to each block's outputs after its product; a profiled run (a probe with kEnabled) applies it in a
  /// pass of its own, so that it is reported as its kind. See metrics/profile.hpp.
  template <class Probe>
  void forward(context& ctx, const tensor& src, Probe& probe) {
    const device& dev = ctx.dev();
    probe.begin(metrics::OpKind::convolution);
    const float* nhwc = src_(ctx, src).data;
    nhwc_ = nhwc;
    if (weights_cache_.take()) to_hwio(dev);
    const bool split = std::remove_cvref_t<Probe>::kEnabled && act_.active();
    on_pool(dev, index(tasks_.size()), [&](index t) { forward_block(nhwc, tasks_[std::size_t(t)], slot(dev), !split); });
    if (split) {
      probe.begin(activation_kind(c_.act, metrics::Direction::forward));
      activation_forward(dev, c_.act, dst_.data(), dst_.data(), dst_.desc().size());
    }
  }

  /// `src` must be the tensor of the last forward(). The probe sees the activation's backward, backward
  /// weights (with bias) and backward data apart.
  template <class Probe>
  void backward(context& ctx, const tensor& src, const tensor& diff_dst, Probe& probe) {
    const device& dev = ctx.dev();
    if (act_.active()) probe.begin(activation_kind(c_.act, metrics::Direction::backward));
    const float* dz = act_.backward(dev, dst_.data(), diff_dst_(ctx, diff_dst).data);
    const auto dz_m = as_matrix(dz, rows_, c_.out_c);
    probe.begin(metrics::OpKind::convolution_backward_weights);
    // The forward's NHWC input: the converter's copy of it, or `src` itself.
    weights_gradient(dev, src_.needed() ? nhwc_ : src.data, dz);
    from_hwio(dev);
    if (p_.diff_bias)
      ::Eigen::TensorMap<::Eigen::Tensor<float, 1, ::Eigen::RowMajor, index>>(p_.diff_bias, c_.out_c).device(dev) =
          dz_m.sum(std::array<index, 1>{0});
    if (!need_diff_src_) return;
    probe.begin(metrics::OpKind::convolution_backward_data);
    // dP = dZ W^T in blocks of rows, which the pool's threads take as they come (a thread that another
    // process slows takes fewer).
    const index O = c_.out_c, block = block_rows(dev), blocks = (rows_ + block - 1) / block;
    on_pool(dev, blocks, [&](index b) {
      const index r0 = b * block, n = std::min(rows_, r0 + block) - r0;
      gemm(n, depth_, O, {dz + r0 * O, O}, transposed({cweights(), O}), diff_patches_.data() + r0 * depth_, depth_);
    });
    col2im(dev);
  }

 private:
  /// Output pixels packed alike: kernel rows [kh0, kh1) times kernel columns [kw0, kw1), the taps inside the
  /// image (the group of all taps also holds the border pixels merged into it, packed with their zeros). Its
  /// rows are every image's pixels of the group, image by image.
  struct row_group {
    index kh0, kh1, kw0, kw1;
    std::vector<index> pixels;  ///< oh * OW + ow, ascending
    index depth = 0;            ///< floats of one packed row: (kh1 - kh0) * (kw1 - kw0) * C
    std::vector<std::array<index, 2>> at{};  ///< (oh, ow) of each pixel
    index rows(index batch) const { return batch * index(pixels.size()); }
  };
  /// Rows [begin, end) of a group: one block of the forward. A direct block's rows are consecutive output
  /// rows, which its product writes in place; the others' outputs are copied to their rows.
  struct block_task {
    std::size_t group;
    index begin, end;
    bool direct;
  };
  const float* cweights() const noexcept { return weights_.data(); }
  /// Whether P is the NHWC input itself: a 1x1 kernel at stride 1 without padding.
  bool is_pointwise() const noexcept { return c_.kernel == 1 && c_.stride == 1 && c_.padding == 0; }
  /// The calling thread's buffers: a pool thread's own, or the first for the caller (which runs tasks only
  /// where no pool thread does, see on_pool).
  static index slot(const device& dev) { return std::max(dev.currentThreadId(), 0); }

  /// The kernel offsets [lo, hi) that fall inside an extent of `size` input pixels from output position `o`.
  std::pair<index, index> valid_taps(index o, index size) const {
    const index i0 = o * c_.stride - c_.padding;
    const index lo = std::clamp<index>(-i0, 0, c_.kernel);
    return {lo, std::clamp<index>(size - i0, lo, c_.kernel)};
  }

  /// Output row of row i of a group.
  index output_row(const row_group& g, index i) const {
    const index pixels = index(g.pixels.size());
    return i / pixels * (index(c_.out_h) * c_.out_w) + g.pixels[std::size_t(i % pixels)];
  }

  /// The runs of a group's rows that are consecutive output rows: [begin, end) in the group's rows. All the
  /// pixels make one run over the whole batch.
  std::vector<std::pair<index, index>> runs(const row_group& g) const {
    std::vector<std::pair<index, index>> out;
    const index pixels = index(g.pixels.size()), rows = g.rows(c_.batch);
    if (pixels == index(c_.out_h) * c_.out_w) return {{0, rows}};
    for (index i = 0; i < rows;) {
      index e = i + 1;
      while (e < rows && e % pixels != 0 && output_row(g, e) == output_row(g, e - 1) + 1) ++e;
      out.push_back({i, e});
      i = e;
    }
    return out;
  }

  /// The groups of a grouping, and the multiply-adds per output that it saves less what it costs: re-read
  /// weights (kMergeRatio) and copied outputs (kCopyRatio). Border groups that do not pay for themselves
  /// join the group of all taps. Where no group of all taps is left, its weights are not read at all, which
  /// pays for the others' reads: so every group keeps its own when that scores more, as at batch-1 inference on
  /// a 1x1 image (ResNet-18's layer4 on 32x32 inputs), whose one pixel sees 1 tap of 9: merged, each forward
  /// read all 9 taps' weights, 8 of them to multiply zeros.
  std::pair<std::vector<row_group>, index> group_pixels(grouping mode) const {
    auto merged = group_pixels(mode, false), separate = group_pixels(mode, true);
    return separate.second > merged.second ? std::move(separate) : std::move(merged);
  }
  /// The same, with `separate`: every group on its own (the group of all taps holds only full-depth pixels).
  std::pair<std::vector<row_group>, index> group_pixels(grouping mode, bool separate) const {
    const index K = c_.kernel, C = c_.in_c, OW = c_.out_w, N = c_.batch;
    std::map<std::array<index, 4>, std::vector<index>> by_taps;
    for (index oh = 0; oh < c_.out_h; ++oh)
      for (index ow = 0; ow < OW; ++ow) {
        auto [kh0, kh1] = valid_taps(oh, c_.in_h);
        auto [kw0, kw1] = valid_taps(ow, c_.in_w);
        if (mode == grouping::none || is_pointwise()) kh0 = kw0 = 0, kh1 = kw1 = K;
        if (mode == grouping::kernel_rows) kw0 = 0, kw1 = K;
        by_taps[{kh0, kh1, kw0, kw1}].push_back(oh * OW + ow);
      }
    std::vector<row_group> groups;
    row_group all{0, K, 0, K, {}, depth_};
    index score = 0;
    for (auto& [t, pixels] : by_taps) {
      row_group g{t[0], t[1], t[2], t[3], std::move(pixels)};
      g.depth = (g.kh1 - g.kh0) * (g.kw1 - g.kw0) * C;
      // A group of its own multiplies rows * (depth_ - depth) fewer floats by each output and reads its
      // depth x O weights again.
      const index gain = g.rows(N) * (depth_ - g.depth) - kMergeRatio * g.depth;
      if (g.depth == depth_ || (gain < 0 && !separate)) {
        all.pixels.insert(all.pixels.end(), g.pixels.begin(), g.pixels.end());
      } else {
        score += gain;
        groups.push_back(std::move(g));
      }
    }
    if (!all.pixels.empty()) {
      std::sort(all.pixels.begin(), all.pixels.end());
      groups.insert(groups.begin(), std::move(all));
    } else {
      score += kMergeRatio * depth_;  // the weights of all taps, which the grouping none reads, are not read
    }
    for (const row_group& g : groups)
      if (!in_place(g)) score -= kCopyRatio * g.rows(N);
    return {std::move(groups), score};
  }

  /// Fills g.at from g.pixels.
  void locate(row_group& g) const {
    g.at.clear();
    for (index p : g.pixels) g.at.push_back({p / c_.out_w, p % c_.out_w});
  }

  /// Whether a group's blocks are cut inside its runs of consecutive output rows and multiplied in place:
  /// where each run has at least kMinRunRows rows (shorter blocks would multiply inefficiently).
  bool in_place(const row_group& g) const {
    for (const auto& [b, e] : runs(g))
      if (e - b < kMinRunRows) return false;
    return true;
  }

  /// Groups the output pixels (the grouping that saves the most, see group_pixels) and cuts the groups into
  /// the forward's blocks; sizes the per-thread buffers.
  void plan(index threads) {
    const index O = c_.out_c, N = c_.batch;
    auto [groups, score] = group_pixels(grouping::none);
    grouping_ = grouping::none;
    for (grouping mode : {grouping::kernel_rows, grouping::taps}) {
      if (is_pointwise()) break;
      auto [g, s] = group_pixels(mode);
      if (s > score) groups = std::move(g), score = s, grouping_ = mode;
    }
    groups_ = std::move(groups);
    tasks_.clear();
    for (row_group& g : groups_) locate(g);
    all_ = {0, c_.kernel, 0, c_.kernel, std::vector<index>(std::size_t(c_.out_h) * c_.out_w), depth_};
    for (std::size_t p = 0; p < all_.pixels.size(); ++p) all_.pixels[p] = index(p);
    locate(all_);
    // Blocks: at most kBlockFloats of packed floats (and kBlockRows rows), and with several threads about two
    // tasks per thread over the whole layer so that they share out evenly, a multiple of the threads. Where
    // that leaves blocks of fewer rows than the layer has outputs (the weights, packed again by each call,
    // outweigh the block: VGG-16's last layers at batch 1, 4 to 64 rows against 512 outputs), a span is cut
    // into no more blocks than threads.
    double work = 0;
    for (const row_group& g : groups_) work += double(g.rows(N)) * std::max<index>(g.depth, 1);
    pack_floats_ = out_floats_ = 0;
    for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
      const row_group& g = groups_[gi];
      const bool direct = in_place(g);
      const index cap = std::clamp<index>(kBlockFloats / std::max<index>(g.depth, 1), 1, kBlockRows);
      for (const auto& [r0, r1] : direct ? runs(g) : std::vector<std::pair<index, index>>{{0, g.rows(N)}}) {
        const index rows = r1 - r0;
        index blocks = (rows + cap - 1) / cap;
        if (threads > 1) {
          const double share = double(rows) * std::max<index>(g.depth, 1) / work;
          blocks = std::max(blocks, index(std::ceil(share * 2.0 * double(threads))));
          if (blocks > 1) blocks = (blocks + threads - 1) / threads * threads;
          if ((rows + blocks - 1) / blocks < O) blocks = std::min(blocks, std::max((rows + cap - 1) / cap, threads));
        }
        blocks = std::clamp<index>(blocks, 1, rows);
        for (index b = 0; b < blocks; ++b) {
          const index b0 = r0 + rows * b / blocks, b1 = r0 + rows * (b + 1) / blocks;
          tasks_.push_back({gi, b0, b1, direct});
          if (!is_pointwise()) pack_floats_ = std::max(pack_floats_, (b1 - b0) * g.depth);
          if (!direct) out_floats_ = std::max(out_floats_, (b1 - b0) * O);
        }
      }
    }
    // The largest blocks first, so that the small ones even out the threads' shares at the end.
    std::stable_sort(tasks_.begin(), tasks_.end(), [&](const block_task& a, const block_task& b) {
      return (a.end - a.begin) * groups_[a.group].depth > (b.end - b.begin) * groups_[b.group].depth;
    });
    // The weights gradient packs P again in blocks of at least kBlockRows rows of all taps.
    if (!is_pointwise()) pack_floats_ = std::max(pack_floats_, std::min(rows_, kBlockRows) * depth_);
    packs_ = AlignedBuffer<float>(std::size_t(threads * pack_floats_));
    outs_ = AlignedBuffer<float>(std::size_t(threads * out_floats_));
  }

  /// One block of the forward on the calling thread: pack its rows, multiply them, add the bias and apply
  /// the activation (with `activate`) while they are in cache, and copy them to their output rows.
  void forward_block(const float* nhwc, const block_task& t, index slot, bool activate) {
    const row_group& g = groups_[t.group];
    const index O = c_.out_c, n = t.end - t.begin;
    float* const out = t.direct ? dst_.data() + output_row(g, t.begin) * O : outs_.data() + slot * out_floats_;
    if (is_pointwise()) {
      gemm(n, O, depth_, {nhwc + t.begin * depth_, depth_}, {cweights(), O}, out, O);
    } else {
      float* const packed = packs_.data() + slot * pack_floats_;
      pack_rows(nhwc, g, t.begin, t.end, packed);
      multiply(g, packed, n, out);
    }
    add_bias_activate(out, n, activate);
    if (t.direct) return;
    for (index i = t.begin; i < t.end; ++i)
      std::memcpy(dst_.data() + output_row(g, i) * O, out + (i - t.begin) * O, std::size_t(O) * sizeof(float));
  }
  /// out[n, O] = a block of a group's packed rows times the weights of its taps.
  void multiply(const row_group& g, const float* packed, index n, float* out) const {
    const index K = c_.kernel, C = c_.in_c, O = c_.out_c, span = (g.kw1 - g.kw0) * C;
    if (g.depth == 0) {  // every tap in the padding
      std::fill(out, out + n * O, 0.0f);
    } else if (g.kw0 == 0 && g.kw1 == K) {  // the kernel rows [kh0, kh1): one slice of the weights
      gemm(n, O, g.depth, {packed, g.depth}, {cweights() + g.kh0 * K * C * O, O}, out, O);
    } else {  // per kernel row, the columns [kw0, kw1)
      for (index kh = g.kh0; kh < g.kh1; ++kh)
        gemm(n, O, span, {packed + (kh - g.kh0) * span, g.depth}, {cweights() + (kh * K + g.kw0) * C * O, O}, out, O,
             1.0f, kh == g.kh0 ? 0.0f : 1.0f);
    }
  }

  /// rows[r, :] += bias and, with `activate`, the activation, for n rows of O outputs.
  void add_bias_activate(float* rows, index n, bool activate) const {
    serial_bias_activation(rows, p_.bias, n, c_.out_c, activate ? c_.act : simd::activation::none);
  }

  /// Rows [begin, end) of a group packed one after another into `out`: each row the taps [kh0, kh1) x
  /// [kw0, kw1) of its output pixel, in the (kh, kw, c) order of the HWIO weights. In NHWC the floats of one
  /// kernel row lie contiguous in the input wherever the window is inside it, so each is one copy; taps in
  /// the padding are zeros. Everything the loop reads is a local: the copies may write any memory as far as
  /// the compiler knows, so members would be read again after each (with kernel rows of 9 floats, ResNet-18's
  /// first layer, packing took as long as its product). (Eigen's extract_image_patches computes every float's
  /// source index on its own, and with fewer channels than a SIMD packet it cannot vectorise: on LeNet-5's
  /// 3->6 convolution it cost many times oneDNN's whole forward.)
  /// The kernel rows of a first layer's few channels (3 x 3, 3 x 5, 3 x 7 and 3 x 11 floats: ResNet-18's CIFAR
  /// stem, LeNet-5's 5 x 5, ResNet's and AlexNet's) are copied with their length a constant, as a few vector
  /// moves instead of copy_floats' branches on the length
  /// (figures: bench/README.md, "Why the kernels are as they are").
  void pack_rows(const float* nhwc, const row_group& g, index begin, index end, float* out) const {
    switch ((g.kw1 - g.kw0) * c_.in_c) {
      case 9: return pack_rows_as<9>(nhwc, g, begin, end, out);
      case 15: return pack_rows_as<15>(nhwc, g, begin, end, out);
      case 21: return pack_rows_as<21>(nhwc, g, begin, end, out);
      case 33: return pack_rows_as<33>(nhwc, g, begin, end, out);
      default: return pack_rows_as<0>(nhwc, g, begin, end, out);
    }
  }
  /// pack_rows with kernel rows of Span floats inside the image (0: any span).
  template <index Span>
  void pack_rows_as(const float* nhwc, const row_group& g, index begin, index end, float* out) const {
    const index C = c_.in_c, H = c_.in_h, W = c_.in_w, S = c_.stride, pad = c_.padding;
    const index kh0 = g.kh0, kh1 = g.kh1, kw0 = g.kw0, kw1 = g.kw1, depth = g.depth, span = (kw1 - kw0) * C;
    const std::array<index, 2>* const at = g.at.data();
    const index count = index(g.pixels.size());
    index n = begin / count, j = begin % count;
    for (index i = begin; i < end; ++i, out += depth) {
      const index ih0 = at[j][0] * S - pad, iw0 = at[j][1] * S - pad;
      const index lo = std::clamp<index>(-iw0, kw0, kw1), hi = std::clamp<index>(W - iw0, lo, kw1);
      const float* const image = nhwc + n * H * W * C;
      float* row = out;
      if (lo == kw0 && hi == kw1 && ih0 + kh0 >= 0 && ih0 + kh1 <= H) {  // inside the image: copies only
        const float* from = image + ((ih0 + kh0) * W + iw0 + kw0) * C;
        for (index kh = kh0; kh < kh1; ++kh, row += span, from += W * C) {
          if constexpr (Span > 0)
            std::memcpy(row, from, Span * sizeof(float));
          else
            copy_floats(row, from, span);
        }
        if (++j == count) j = 0, ++n;
        continue;
      }
      for (index kh = kh0; kh < kh1; ++kh, row += span) {
        const index ih = ih0 + kh;
        if (ih < 0 || ih >= H) {
          std::fill(row, row + span, 0.0f);
          continue;
        }
        // Zeros only where there are any (a call to memset of none still costs a call).
        if (lo > kw0) std::fill(row, row + (lo - kw0) * C, 0.0f);
        copy_floats(row + (lo - kw0) * C, image + (ih * W + iw0 + lo) * C, (hi - lo) * C);
        if (hi < kw1) std::fill(row + (hi - kw0) * C, row + span, 0.0f);
      }
      if (++j == count) j = 0, ++n;
    }
  }

  /// to[0, n) = from[0, n) in fixed-size vector copies, the last overlapping the one before (ResNet-18's first
  /// layer copies kernel rows of 9 floats: two copies of 8).
  static void copy_floats(float* to, const float* from, index n) {
    if (n < 8) {
      for (index i = 0; i < n; ++i) to[i] = from[i];
      return;
    }
    index i = 0;
    for (; i + 16 <= n; i += 16) std::memcpy(to + i, from + i, 16 * sizeof(float));
    if (i + 8 <= n) {
      std::memcpy(to + i, from + i, 8 * sizeof(float));
      i += 8;
    }
    if (i < n) std::memcpy(to + n - 8, from + n - 8, 8 * sizeof(float));
  }

  /// diff_weights_ = P^T dZ ([K*K*C, O]): each thread takes a share of P's rows, packs them again block by
  /// block into its buffer (all taps, zeros included: the backward keeps TensorFlow's algorithm) and
  /// accumulates each block's product into a partial sum of its own; the partials are added.
  void weights_gradient(const device& dev, const float* nhwc, const float* dz) {
    const index O = c_.out_c, size = depth_ * O;
    const index block = is_pointwise() ? rows_ : std::max<index>(1, pack_floats_ / depth_);
    const auto partial = [&](index share) {
      return share == 0 ? diff_weights_.data() : partials_.data() + (share - 1) * size;
    };
    const index shares = for_shares(dev, rows_, 16, 2.0 * double(rows_) * depth_ * O, [&](index share, index r0, index r1) {
      if (is_pointwise()) {
        gemm(depth_, O, r1 - r0, transposed({nhwc + r0 * depth_, depth_}), {dz + r0 * O, O}, partial(share), O);
        return;
      }
      float* const packed = packs_.data() + slot(dev) * pack_floats_;
      for (index b = r0; b < r1; b += block) {
        const index e = std::min(r1, b + block);
        pack_rows(nhwc, all_, b, e, packed);
        gemm(depth_, O, e - b, transposed({packed, depth_}), {dz + b * O, O}, partial(share), O, 1.0f,
             b == r0 ? 0.0f : 1.0f);
      }
    });
    if (shares > 1)
      for_chunks(dev, std::size_t(size), [&](std::size_t b, std::size_t e) {
        float* sum = diff_weights_.data();
        for (index share = 1; share < shares; ++share) {
          const float* add = partial(share);
          simd::transform(b, e, [&](auto v, std::size_t i) {
            using V = decltype(v);
            simd::store(sum + i, simd::load<V>(sum + i) + simd::load<V>(add + i));
          });
        }
      });
  }

  /// weights_ (HWIO, [K*K*C, O]) from the OIHW parameters, each input channel's O x K*K floats on their own
  /// (a thread per range of channels), faster than Eigen's shuffle, which on ResNet-18's layer4 took a tenth
  /// of the forward (figures: bench/README.md, "Why the kernels are as they are").
  void to_hwio(const device& dev) {
    const index O = c_.out_c, C = c_.in_c, KK = index(c_.kernel) * c_.kernel;
    const float* w = p_.weights;
    float* hwio = weights_.data();
    parallel_for(dev, C, double(O * KK) * 2, [&](index c0, index c1) {
      for (index c = c0; c < c1; ++c)
        for (index o0 = 0; o0 < O; o0 += 16) {
          const index on = std::min<index>(16, O - o0);
          for (index k = 0; k < KK; ++k) {
            float* out = hwio + (k * C + c) * O + o0;
            const float* in = w + (o0 * C + c) * KK + k;
            for (index o = 0; o < on; ++o) out[o] = in[o * C * KK];
          }
        }
    });
  }

  /// The flat OIHW weight gradient from diff_weights_ (HWIO), the reverse of to_hwio.
  void from_hwio(const device& dev) {
    const index O = c_.out_c, C = c_.in_c, KK = index(c_.kernel) * c_.kernel;
    const float* hwio = diff_weights_.data();
    float* w = p_.diff_weights;
    parallel_for(dev, C, double(O * KK) * 2, [&](index c0, index c1) {
      for (index c = c0; c < c1; ++c)
        for (index o = 0; o < O; ++o) {
          float* out = w + (o * C + c) * KK;
          const float* in = hwio + c * O + o;
          for (index k = 0; k < KK; ++k) out[k] = in[k * C * O];
        }
    });
  }

  /// Rows of dZ per block of backward data: at most kBlockRows, and blocks a multiple of the threads, at
  /// least two each, so that they share out evenly; where a block has fewer rows than the layer has outputs
  /// (the weights, packed again for every block, outweigh it), each thread takes one block of its share.
  index block_rows(const device& dev) const {
    const index threads = dev.numThreads();
    const index blocks = (std::max<index>(2 * threads, (rows_ + kBlockRows - 1) / kBlockRows) + threads - 1) /
                         threads * threads;
    const index block = std::max<index>(48, (rows_ + blocks - 1) / blocks);
    if (block >= c_.out_c) return block;
    return std::max(block, (rows_ + threads - 1) / threads);
  }

  /// The most rows in one block: blocks of 256 to 2048 rows ran ResNet-18's layers at the same speed.
  static constexpr index kBlockRows = 512;
  /// The most packed floats in one block of the forward (per thread): blocks of 2^12 to 2^20 floats ran
  /// ResNet-18's first layer alike; this one bounds layer4's blocks (4608 floats a row) to 227 rows, 4 MiB.
  static constexpr index kBlockFloats = index(1) << 20;
  /// A border group keeps blocks of its own where the floats it skips (rows x (depth_ - its depth)) are at
  /// least this many times its weights' rows (its depth), which every one of its blocks reads again: a float
  /// read from memory costs about as much as 16 multiply-adds of oneDNN's sgemm on one core.
  static constexpr index kMergeRatio = 16;
  /// An output row copied from the block to its place costs about as much as this many multiply-adds per
  /// output: on ResNet-18's layer1 (64 outputs, few zeros) skipping every zero and copying every row ran no
  /// faster than multiplying the zeros; on its layer2 to layer4 it ran faster
  /// (figures: bench/README.md, "Why the kernels are as they are").
  static constexpr index kCopyRatio = 24;
  /// The fewest rows of a run of consecutive output rows whose blocks are multiplied in place (see in_place).
  static constexpr index kMinRunRows = 32;

  /// dX[n, ih, iw, :] = sum of dP[(n, oh, ow), (kh, kw, :)] over the windows that cover (ih, iw).
  void col2im(const device& dev) {
    const int OH = c_.out_h, OW = c_.out_w, K = c_.kernel, C = c_.in_c;
    const float* dp = diff_patches_.data();
    const index depth = depth_;
    window_gather(dev, {c_.batch, c_.in_h, c_.in_w, C, OH, OW, K, c_.stride, c_.padding}, diff_src_.data(), 1.0f,
                  [&](int n, int oh, int ow, int kh, int kw) {
                    return dp + ((index(n) * OH + oh) * OW + ow) * depth + (index(kh) * K + kw) * C;
                  });
  }

  config c_{};
  ParamSlots p_;
  index rows_ = 0, depth_ = 0;
  /// The last forward's NHWC input (the converter's buffer where it converted).
  const float* nhwc_ = nullptr;
  converter src_;
  grouping grouping_ = grouping::none;
  std::vector<row_group> groups_;
  /// Every pixel with all taps: the rows of P in order, as the weights gradient packs them.
  row_group all_{};
  std::vector<block_task> tasks_;
  /// Floats of one thread's packed block (packs_) and output block (outs_).
  index pack_floats_ = 0, out_floats_ = 0;
  AlignedBuffer<float> weights_, diff_weights_, partials_, packs_, outs_, diff_patches_;
  weight_cache weights_cache_;  ///< whether weights_ must be derived again (evaluation keeps it)
  fused_activation act_;
};

}  // namespace sinew::backend::eigen

namespace sinew::backend {
/// A convolution's op by its form: depthwise, other grouped or dilated, or the plain one.
template <>
struct op_for<layer_kind::conv2d, Eigen> {
  template <NodeType N>
  using type_for = std::conditional_t<
      conv2d_config<N>(1).is_depthwise(), eigen::depthwise_conv2d_op,
      std::conditional_t<conv2d_config<N>(1).is_dense(), eigen::conv2d_op, eigen::grouped_conv2d_op>>;
};
}  // namespace sinew::backend
