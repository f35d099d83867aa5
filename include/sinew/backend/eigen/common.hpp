// sinew/backend/eigen/common.hpp: the Eigen backend's context, tensors, layouts and shared kernels.
//
// Layout. Like TensorFlow, every 4-D activation between ops is NHWC: Eigen's extract_image_patches on a
// RowMajor tensor needs the channels innermost. The Model hands in plain NCHW and takes plain NCHW out, so a
// converter shuffles at those two ends, Flatten shuffles back to PyTorch's (C, H, W) feature order, and the
// gradients arriving at Flatten are converted once by the op before it. A descriptor with one channel or
// one pixel has the same memory in both layouts and is always tagged NCHW, so no copy is made for it.
//
// Threading. Every op runs on the context's Eigen::ThreadPoolDevice: tensor expressions with
// `.device(d) =`, hand-written loops with parallelFor, matrix products as one single-threaded sgemm per pool
// thread (gemm.hpp). sinew's SIMD activation kernels are called on chunks small enough that they never start
// OpenMP threads (see for_chunks), and the pool's threads have an OpenMP ICV of 1 (binding_environment), so
// one pool does all the work.
//
// EIGEN_USE_THREADS must be seen before Eigen's Tensor module is first included in a translation unit;
// include this header (or sinew/backend/eigen.hpp) before any other user of unsupported/Eigen/CXX11/Tensor.
//
// Compile time. <sinew/sinew.hpp> includes this backend in every program, most of which run another one. An
// inline function that is not a template makes the compiler instantiate every Eigen template it calls (the
// thread pool, tensor expressions on it, GEMV), whether or not the program calls the function; so the entry
// points that reach Eigen's templates (the ops' forward, backward and run, convert, to_plain, the context's
// constructor) are templates, `template <class = void>`, and cost a program without backend::Eigen nothing
// past parsing (bench/compile_time/).
#pragma once

#ifndef EIGEN_USE_THREADS
#define EIGEN_USE_THREADS
#endif

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "sinew/core/detail/vector_intrinsics.hpp"  // first: see its comment
#include <unsupported/Eigen/CXX11/Tensor>

#include "sinew/backend/backend_spec.hpp"
#include "sinew/backend/generic/node_config.hpp"
#include "sinew/backend/op_table.hpp"
#include "sinew/backend/simd/activation.hpp"
#include "sinew/core/affinity.hpp"
#include "sinew/core/error.hpp"
#include "sinew/core/parallel.hpp"
#include "sinew/tensor/buffer.hpp"

namespace sinew::backend {
struct Eigen;
}  // namespace sinew::backend

namespace sinew::backend::eigen {

using index = ::Eigen::Index;
using device = ::Eigen::ThreadPoolDevice;
/// Row-major maps: a [rows, cols] matrix, and an N x d1 x d2 x d3 activation (NHWC or NCHW).
using matrix = ::Eigen::TensorMap<::Eigen::Tensor<float, 2, ::Eigen::RowMajor, index>>;
using const_matrix = ::Eigen::TensorMap<::Eigen::Tensor<const float, 2, ::Eigen::RowMajor, index>>;
using image = ::Eigen::TensorMap<::Eigen::Tensor<float, 4, ::Eigen::RowMajor, index>>;
using const_image = ::Eigen::TensorMap<::Eigen::Tensor<const float, 4, ::Eigen::RowMajor, index>>;

/// Eigen's thread environment, binding the pool's thread i to cpus[i % size] when cpus is not empty. Each
/// thread's OpenMP ICV nthreads-var is 1: a pool thread is one of the pool's workers, and whatever OpenMP
/// code it calls (oneDNN's sgemm in gemm.hpp) must run on it alone, not open a team of every core.
struct binding_environment : ::Eigen::StlThreadEnvironment {
  std::vector<int> cpus;    ///< the CPUs to bind to (empty: none)
  std::size_t started = 0;  ///< threads started so far
  /// Starts the pool's next thread, bound to its CPU.
  EnvThread* CreateThread(std::function<void()> f) {
    if (cpus.empty())
      return ::Eigen::StlThreadEnvironment::CreateThread([f = std::move(f)] {
        omp_set_num_threads(1);
        f();
      });
    const int cpu = cpus[started++ % cpus.size()];
    return ::Eigen::StlThreadEnvironment::CreateThread([cpu, f = std::move(f)] {
      omp_set_num_threads(1);
      bind_this_thread(std::span<const int>(&cpu, 1));
      f();
    });
  }
};

/// Thread pool and device of one model. Not copyable: plans keep a pointer to the device. The element-wise
/// kernels (core/parallel.hpp) run on as many OpenMP threads, bound to the same CPUs.
class context {
 public:
  template <class = void>  // instantiated only if used: see "Compile time" above
  explicit context(BackendOptions options = {})
      : threads_(options.threads > 0 ? options.threads : int(allowed_cpus().size())),
        pool_(threads_, true, binding_environment{{}, options.cpus, 0}),
        device_(&pool_, threads_) {
    omp_set_num_threads(threads_);
    bind_openmp_threads(threads_, options.cpus);
  }
  context(const context&) = delete;
  context& operator=(const context&) = delete;

  const device& dev() const noexcept { return device_; }
  int threads() const noexcept { return threads_; }

 private:
  int threads_;
  ::Eigen::ThreadPoolTempl<binding_environment> pool_;
  device device_;
};

enum class layout { nchw, nhwc };

/// Dimensions (N, C, H, W) and the order they lie in memory. A flat tensor is N x F x 1 x 1.
struct tensor_desc {
  int n = 0, c = 0, h = 0, w = 0;
  eigen::layout layout = layout::nchw;

  std::size_t size() const noexcept { return std::size_t(n) * c * h * w; }
  /// Whether a shuffle is needed to reach the other layout (not for one channel or one pixel).
  bool is_nhwc() const noexcept { return layout == layout::nhwc; }
  friend bool operator==(const tensor_desc&, const tensor_desc&) = default;
};

/// The descriptor of (n, c, h, w) in layout l, tagged NCHW where both layouts are the same memory.
inline tensor_desc make_desc(int n, int c, int h, int w, layout l) {
  return {n, c, h, w, (c == 1 || h * w == 1) ? layout::nchw : l};
}
inline tensor_desc plain_desc(int n, int c, int h, int w) { return make_desc(n, c, h, w, layout::nchw); }
inline tensor_desc plain_like(const tensor_desc& d) { return make_desc(d.n, d.c, d.h, d.w, layout::nchw); }
inline tensor_desc nhwc_like(const tensor_desc& d) { return make_desc(d.n, d.c, d.h, d.w, layout::nhwc); }

/// An activation exchanged between ops: floats owned elsewhere (an op's buffer, or the caller's) and their
/// descriptor.
struct tensor {
  float* data = nullptr;
  tensor_desc desc;
};

/// Storage for an op's output: an aligned buffer and the tensor that points into it.
class owned_tensor {
 public:
  void allocate(const tensor_desc& d) {
    buffer_ = AlignedBuffer<float>(d.size());
    tensor_ = {buffer_.data(), d};
  }
  const tensor& get() const noexcept { return tensor_; }
  float* data() const noexcept { return tensor_.data; }
  const tensor_desc& desc() const noexcept { return tensor_.desc; }
  explicit operator bool() const noexcept { return tensor_.data != nullptr; }
  /// A tensor without storage of its own: it gets its floats from point_to().
  void describe(const tensor_desc& d) { tensor_.desc = d; }
  /// Makes the tensor a view of p, or of its own buffer again for nullptr.
  void point_to(const float* p) { tensor_.data = p ? const_cast<float*>(p) : buffer_.data(); }

 private:
  AlignedBuffer<float> buffer_;
  tensor tensor_;
};

/// A row-major [rows, cols] map of floats.
inline matrix as_matrix(float* p, index rows, index cols) { return matrix(p, rows, cols); }
inline const_matrix as_matrix(const float* p, index rows, index cols) { return const_matrix(p, rows, cols); }

/// The four dimensions of d in its memory order.
inline std::array<index, 4> memory_dims(const tensor_desc& d) {
  if (d.is_nhwc()) return {d.n, d.h, d.w, d.c};
  return {d.n, d.c, d.h, d.w};
}

/// Copies src into dst (same dimensions) in dst's layout, on the device.
template <class = void>  // instantiated only if used: see "Compile time" above
void convert(const device& dev, const tensor_desc& from, const float* src, const tensor_desc& to, float* dst) {
  if (from.layout == to.layout) {
    std::memcpy(dst, src, from.size() * sizeof(float));
    return;
  }
  const_image in(src, memory_dims(from));
  image out(dst, memory_dims(to));
  // NCHW -> NHWC takes dims (0, 2, 3, 1) of the input; NHWC -> NCHW takes (0, 3, 1, 2).
  const std::array<index, 4> order = to.is_nhwc() ? std::array<index, 4>{0, 2, 3, 1} : std::array<index, 4>{0, 3, 1, 2};
  out.device(dev) = in.shuffle(order);
}

/// Calls f(begin, end) on disjoint ranges of [0, n) on the pool; `cost` is the work per item in cycles.
template <class F>
void parallel_for(const device& dev, index n, double cost, F&& f) {
  dev.parallelFor(n, ::Eigen::TensorOpCost(0, 0, cost), [&f](index begin, index end) { f(begin, end); });
}

/// The shape of a sliding window (convolution or pooling) over NHWC data.
struct window_geometry {
  int batch, h, w, c, out_h, out_w, kernel, stride, padding;
};

/// The backward pass of a sliding window, as a gather: dx[n, ih, iw, :] = scale * the sum, over every window
/// position (oh, ow) and offset (kh, kw) that covers (ih, iw), of the C floats at source(n, oh, ow, kh, kw).
/// Input rows are independent, so they run in parallel without atomics; the channel sum is an xsimd loop
/// (Eigen has no expression for this strided gather). Convolution's col2im and average pooling use it.
template <class Source>
void window_gather(const device& dev, const window_geometry& g, float* dx, float scale, Source&& source) {
  const int H = g.h, W = g.w, C = g.c, K = g.kernel, S = g.stride, P = g.padding, OH = g.out_h, OW = g.out_w;
  parallel_for(dev, index(g.batch) * H, double(W) * K * K * C / S / S + W, [&](index begin, index end) {
    for (index row = begin; row < end; ++row) {
      const int n = int(row / H), ih = int(row % H);
      for (int iw = 0; iw < W; ++iw) {
        float* out = dx + ((index(n) * H + ih) * W + iw) * C;
        std::fill(out, out + C, 0.0f);
        for (int kh = 0; kh < K; ++kh) {
          const int th = ih + P - kh;
          if (th < 0 || th % S || th / S >= OH) continue;
          for (int kw = 0; kw < K; ++kw) {
            const int tw = iw + P - kw;
            if (tw < 0 || tw % S || tw / S >= OW) continue;
            const float* in = source(n, th / S, tw / S, kh, kw);
            simd::transform(0, std::size_t(C), [&](auto v, std::size_t i) {
              using V = decltype(v);
              simd::store(out + i, simd::load<V>(out + i) + simd::load<V>(in + i));
            });
          }
        }
        if (scale != 1.0f)
          for (int ch = 0; ch < C; ++ch) out[ch] *= scale;
      }
    }
  });
}

/// Element-wise work over n floats in chunks of at most 2^15: below that size simd::parallel_ranges runs
/// on the calling thread, so the pool's workers never start an OpenMP team of their own.
template <class F>
void for_chunks(const device& dev, std::size_t n, F&& f) {
  constexpr std::size_t kChunk = std::size_t(1) << 15;
  const index chunks = index((n + kChunk - 1) / kChunk);
  if (chunks <= 1) {
    f(std::size_t(0), n);
    return;
  }
  parallel_for(dev, chunks, double(kChunk) * 4, [&](index b, index e) {
    f(std::size_t(b) * kChunk, std::min(n, std::size_t(e) * kChunk));
  });
}

/// simd::activation_forward on the calling thread (pieces of 2^15 floats never start OpenMP threads).
inline void serial_activation_forward(simd::activation a, const float* x, float* y, std::size_t n) {
  constexpr std::size_t kPiece = std::size_t(1) << 15;
  for (std::size_t b = 0; b < n; b += kPiece) simd::activation_forward(a, x + b, y + b, std::min(kPiece, n - b));
}

inline void activation_forward(const device& dev, simd::activation a, const float* x, float* y, std::size_t n) {
  if (a == simd::activation::none) return;
  for_chunks(dev, n, [&](std::size_t b, std::size_t e) { simd::activation_forward(a, x + b, y + b, e - b); });
}
inline void activation_backward(const device& dev, simd::activation a, const float* y, const float* dy, float* dx,
                                std::size_t n) {
  for_chunks(dev, n, [&](std::size_t b, std::size_t e) { simd::activation_backward(a, y + b, dy + b, dx + b, e - b); });
}

using backend::activation_of;

/// Caller-owned plain NCHW floats seen as a tensor; rebinding costs nothing.
class external {
 public:
  void setup(context&, const tensor_desc& plain) { tensor_.desc = plain; }
  const tensor& bind(const float* data) {
    tensor_.data = const_cast<float*>(data);
    return tensor_;
  }
  const tensor_desc& desc() const noexcept { return tensor_.desc; }

 private:
  tensor tensor_;
};

/// Moves a tensor into a fixed layout, or passes it through when the layouts agree.
class converter {
 public:
  void setup(context&, const tensor_desc& from, const tensor_desc& to) {
    if (from.n != to.n || from.c != to.c || from.h != to.h || from.w != to.w)
      throw backend_error("eigen: cannot convert a tensor of " + std::to_string(from.size()) +
                          " floats to different dimensions (" + std::to_string(to.size()) + " floats)");
    needed_ = !(from == to);
    from_ = from;
    if (needed_) target_.allocate(to);
  }
  template <class = void>  // instantiated only if used: see "Compile time" above
  const tensor& operator()(context& ctx, const tensor& src) {
    if (!needed_) return src;
    convert(ctx.dev(), from_, src.data, target_.desc(), target_.data());
    return target_.get();
  }
  bool needed() const noexcept { return needed_; }

 private:
  bool needed_ = false;
  tensor_desc from_;
  owned_tensor target_;
};

/// Whether an op converts the output gradient only for the input gradient, or always (an op with parameters
/// needs it for their gradients even where the Model asks for no input gradient).
enum class diff_dst_use { for_diff_src, always };

/// What every Eigen op exposes of its output and input gradient (the op contract of backend_spec.hpp), written
/// once: an op allocates dst_ and diff_src_ (or points them at other floats) and reads the output gradient
/// through diff_dst_, in dst_'s layout.
template <diff_dst_use Use = diff_dst_use::for_diff_src>
class op_base {
 public:
  tensor_desc dst_desc() const { return dst_.desc(); }
  const tensor& dst() const noexcept { return dst_.get(); }
  tensor_desc diff_src_desc() const { return need_diff_src_ ? diff_src_.desc() : tensor_desc{}; }
  const tensor& diff_src() const noexcept { return diff_src_.get(); }
  void bind_diff_dst(context& ctx, const tensor_desc& d) {
    if (Use == diff_dst_use::always || need_diff_src_) diff_dst_.setup(ctx, d, dst_.desc());
  }

 protected:
  bool need_diff_src_ = false;
  owned_tensor dst_, diff_src_;
  converter diff_dst_;
};

/// Copies a tensor of either layout into plain NCHW floats.
template <class = void>  // instantiated only if used: see "Compile time" above
void to_plain(context& ctx, const tensor& t, float* out) {
  convert(ctx.dev(), t.desc, t.data, plain_like(t.desc), out);
}

/// out[r, :] = act(out[r, :] + bias) for a [rows, cols] matrix (bias may be null), on the calling thread.
inline void serial_bias_activation(float* out, const float* bias, index rows, index cols, simd::activation act) {
  if (bias)
    for (index r = 0; r < rows; ++r) simd::add(out + r * cols, bias, out + r * cols, std::size_t(cols));
  if (act != simd::activation::none) serial_activation_forward(act, out, out, std::size_t(rows * cols));
}

/// serial_bias_activation on the pool: the bias add and the fused activation make one pass over the layer's
/// output while it is still in cache.
inline void bias_activation(const device& dev, float* out, const float* bias, index rows, index cols,
                            simd::activation act) {
  if (!bias && act == simd::activation::none) return;
  const index rows_per_chunk = std::max<index>(1, (index(1) << 15) / std::max<index>(cols, 1));
  const index chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
  parallel_for(dev, chunks, double(rows_per_chunk * cols) * 4, [&](index b, index e) {
    const index r0 = b * rows_per_chunk, r1 = std::min(rows, e * rows_per_chunk);
    serial_bias_activation(out + r0 * cols, bias, r1 - r0, cols, act);
  });
}

/// The gradient of the pre-activation of a layer with a fused activation, computed from its output.
class fused_activation {
 public:
  void setup(simd::activation a, std::size_t floats) {
    kind_ = a;
    if (active()) diff_ = AlignedBuffer<float>(floats);
  }
  bool active() const noexcept { return kind_ != simd::activation::none; }
  simd::activation kind() const noexcept { return kind_; }
  /// dL/dz for the output y and dL/dy; dy itself when there is no activation.
  const float* backward(const device& dev, const float* y, const float* dy) {
    if (!active()) return dy;
    activation_backward(dev, kind_, y, dy, diff_.data(), diff_.size());
    return diff_.data();
  }

 private:
  simd::activation kind_ = simd::activation::none;
  AlignedBuffer<float> diff_;
};

}  // namespace sinew::backend::eigen
