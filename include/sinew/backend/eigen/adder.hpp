// sinew/backend/eigen/adder.hpp: B::adder for Residual (backend/generic/residual.hpp): dst = a + b in a's
// layout, b shuffled first when its layout differs (an identity shortcut carries the block's input, which is
// plain NCHW at a network's first block and NHWC after any op). Used for the block's output and for the sum
// of its two input gradients. The sum is xsimd on chunks spread over the Eigen pool (see for_chunks).
#pragma once

#include "sinew/backend/eigen/common.hpp"
#include "sinew/core/elementwise.hpp"

namespace sinew::backend::eigen {

class adder {
 public:
  void setup(context& ctx, const tensor_desc& a, const tensor_desc& b) {
    b_.setup(ctx, b, a);
    dst_.allocate(a);
  }
  tensor_desc dst_desc() const { return dst_.desc(); }
  const tensor& dst() const noexcept { return dst_.get(); }
  template <class = void>  // instantiated only if used: see common.hpp, "Compile time"
  void run(context& ctx, const tensor& a, const tensor& b) {
    const float* pa = a.data;
    const float* pb = b_(ctx, b).data;
    float* out = dst_.data();
    for_chunks(ctx.dev(), dst_.desc().size(),
               [&](std::size_t begin, std::size_t end) { simd::add(pa + begin, pb + begin, out + begin, end - begin); });
  }

 private:
  converter b_;
  owned_tensor dst_;
};

}  // namespace sinew::backend::eigen
