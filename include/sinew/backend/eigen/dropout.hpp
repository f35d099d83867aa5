// sinew/backend/eigen/dropout.hpp: Dropout in whatever layout its input arrives, with the same mask as the
// OneDnn backend: element e of the plain NCHW tensor is kept when simd::dropout_keeps(e, p, seed), so both
// backends drop the same elements for the same model seed, step and node, and their results can be compared.
//
// On plain (or flat) input the logical index is the memory index, and the kernel is simd's counter-based
// mask on chunks spread over the Eigen pool. On NHWC input the C channels of one pixel lie contiguously but
// their logical indices step by H * W, so the kernel hashes an arithmetic sequence of indices (xsimd: Eigen
// has no integer hash expression). In evaluation mode the output is a view of the input: nothing is copied.
#pragma once

#include <cstdint>

#include "sinew/backend/eigen/common.hpp"
#include "sinew/backend/simd/dropout.hpp"

namespace sinew::backend::eigen {

class dropout_op : public op_base<> {
 public:
  template <NodeType N>
  void setup(context& ctx, const tensor_desc& src_desc, int, ParamSlots, bool need_diff_src) {
    setup(ctx, src_desc, N::layer::kP, need_diff_src);
  }

  void setup(context&, const tensor_desc& src_desc, float p, bool need_diff_src) {
    p_ = p;
    need_diff_src_ = need_diff_src;
    dst_.allocate(src_desc);
    if (need_diff_src) diff_src_.allocate(src_desc);
  }

  void set_mode(const ForwardMode& mode) noexcept { mode_ = mode; }

  template <class = void>  // instantiated only if used: see common.hpp, "Compile time"
  void forward(context& ctx, const tensor& src) {
    last_ = mode_;
    if (!last_.training) {
      dst_.point_to(src.data);
      return;
    }
    dst_.point_to(nullptr);
    apply(ctx.dev(), src.data, dst_.data());
  }

  template <class = void>  // instantiated only if used: see common.hpp, "Compile time"
  void backward(context& ctx, const tensor&, const tensor& diff_dst) {
    if (!need_diff_src_) return;  // no parameters: nothing else to compute
    const float* dy = diff_dst_(ctx, diff_dst).data;
    if (!last_.training) {
      diff_src_.point_to(dy);
      return;
    }
    diff_src_.point_to(nullptr);
    apply(ctx.dev(), dy, diff_src_.data());
  }

 private:
  /// y = mask * x / (1 - p) with the mask of the last forward's seed, indexed by plain NCHW position.
  void apply(const device& dev, const float* x, float* y) const {
    const tensor_desc& d = dst_.desc();
    const float p = p_;
    const std::uint64_t seed = last_.seed;
    if (!d.is_nhwc()) {
      for_chunks(dev, d.size(), [&](std::size_t b, std::size_t e) {
        simd::detail::dropout_apply_indexed(x + b, y + b, e - b, std::uint32_t(b), 1, p, seed);
      });
      return;
    }
    const index pixels = index(d.h) * d.w, c = d.c;
    parallel_for(dev, index(d.n) * pixels, double(c) * 8, [&](index begin, index end) {
      for (index q = begin; q < end; ++q) {
        const index n = q / pixels, hw = q % pixels;
        simd::detail::dropout_apply_indexed(x + q * c, y + q * c, std::size_t(c), std::uint32_t(n * c * pixels + hw),
                                            std::uint32_t(pixels), p, seed);
      }
    });
  }

  float p_ = 0.5f;
  ForwardMode mode_, last_;  ///< the mode of the next forward, and of the last one (which backward inverts)
};

}  // namespace sinew::backend::eigen

namespace sinew::backend {
template <>
struct op_for<layer_kind::dropout, Eigen> {
  using type = eigen::dropout_op;
};
}  // namespace sinew::backend
