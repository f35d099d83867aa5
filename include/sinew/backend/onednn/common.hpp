// sinew/backend/onednn/common.hpp: the OneDnn backend's context, tensors and layout conversion.
#pragma once

#include <omp.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sinew/backend/backend_spec.hpp"
#include "sinew/backend/generic/node_config.hpp"
#include "sinew/backend/generic/weight_cache.hpp"
#include "sinew/backend/onednn/compat.hpp"
#include "sinew/backend/onednn/reorder.hpp"
#include "sinew/backend/op_table.hpp"
#include "sinew/backend/simd/activation.hpp"
#include "sinew/core/error.hpp"
#include "sinew/core/parallel.hpp"

namespace sinew::backend {
struct OneDnn;
}  // namespace sinew::backend

namespace sinew::backend::onednn {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using dims = dnnl::memory::dims;
using memory = dnnl::memory;
using desc = dnnl::memory::desc;
/// The arguments of a primitive, bound once per binding of input tensors and reused every step. Executing
/// through run() allocates nothing: dnnl::primitive::execute copies its argument map into a new vector on
/// every call (tests/model/test_no_allocation.cpp counted 275 allocations per LeNet-5 step that way).
/// (`args`, the plain map, remains for code that executes once, outside the training step.)
using args = std::unordered_map<int, memory>;
class bound_args {
 public:
  bound_args() = default;
  bound_args(std::initializer_list<std::pair<int, memory>> list) {
    for (const auto& [key, m] : list) set(key, m);
  }
  void set(int key, const memory& m) {
    for (std::size_t i = 0; i < raw_.size(); ++i)
      if (raw_[i].arg == key) {
        held_[i] = m;
        raw_[i].memory = m.get();
        return;
      }
    held_.push_back(m);
    raw_.push_back({key, m.get()});
  }
  void emplace(int key, const memory& m) { set(key, m); }
  int size() const noexcept { return int(raw_.size()); }
  const dnnl_exec_arg_t* data() const noexcept { return raw_.data(); }

 private:
  std::vector<memory> held_;  // keeps the memories alive
  std::vector<dnnl_exec_arg_t> raw_;
};

/// Engine, stream and thread count of one model. oneDNN (as Debian builds it) runs on OpenMP.
class context {
 public:
  explicit context(BackendOptions options = {}) : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    if (options.threads > 0) omp_set_num_threads(options.threads);
    threads_ = omp_get_max_threads();
    bind_openmp_threads(threads_, options.cpus);
  }
  context(const context&) = delete;
  context& operator=(const context&) = delete;

  const dnnl::engine& engine() const noexcept { return engine_; }
  dnnl::stream& stream() noexcept { return stream_; }
  int threads() const noexcept { return threads_; }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  int threads_ = 1;
};

/// Executes a primitive on bound arguments without allocating.
inline void run(context& ctx, const dnnl::primitive& p, const bound_args& a) {
  const dnnl_status_t status = dnnl_primitive_execute(p.get(), ctx.stream().get(), a.size(), a.data());
  if (status != dnnl_success)
    throw backend_error("onednn: executing a primitive failed with status " + std::to_string(int(status)));
}

/// Whether oneDNN runs its AVX-512 kernels in this process: false on a CPU without AVX-512 and where
/// ONEDNN_MAX_CPU_ISA (or dnnl::set_max_cpu_isa) caps it below, as `ctest --preset numerics-avx2` does. Ops that
/// pick a formulation by ISA ask this, at setup.
inline bool onednn_runs_avx512() {
  const auto core = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
  return (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & core) == core;
}

/// The same dimensions and layout with elements of type `type` (OneDnnBf16's tensors between layers are bf16).
inline desc with_data_type(const desc& d, dt type) { return compat::with_data_type(d, type); }

/// Plain NCHW f32 descriptor.
inline desc plain_desc(int batch, int c, int h, int w) { return desc({batch, c, h, w}, dt::f32, tag::nchw); }

/// The plain (row-major) layout of the same dimensions: nc for 2-D, nchw for 4-D.
inline desc plain_like(const desc& d) {
  const auto shape = compat::dims_of(d);
  return desc(shape, dt::f32, shape.size() == 2 ? tag::nc : tag::nchw);
}

/// Whether `impl` (a primitive descriptor's impl_info_str) names one of oneDNN's reference loops: "ref:any",
/// "ref_int8:any", and oneDNN 2.6's batch normalisation's "bnorm_ref:any", which a test of the first three letters
/// missed. (oneDNN's "simple" loops are plain C++ too, but written for speed, and named apart.)
inline bool names_reference_loop(std::string_view impl) {
  return impl.starts_with("ref") || impl.find("_ref") != std::string_view::npos;
}

/// While a oneDNN constructor runs, an integer division by zero inside it (SIGFPE) is named before the process
/// ends. oneDNN 3.7.2 divides by zero choosing its brgemm convolution kernels for some shapes on some CPUs (seen
/// on a KVM guest of an AMD EPYC Zen 5 whose CPUID leaves 4 and 0x8000001D are empty, so that oneDNN knows no
/// cache size, reorder.hpp's fault: the backward data pass of some 1x1 stride-2 convolutions, ResNet-50's
/// downsamples at 224x224 among them), where a bare "Floating point exception" names neither the layer nor the
/// library. Nothing can be resumed after such a fault, so the scope only says what it was and hands the signal on
/// to whatever was set up for it before (by default, the process ends).
class division_fault_scope {
 public:
  explicit division_fault_scope(const char* what) : outer_(what_) {
    what_ = what;
    std::lock_guard lock(mutex_);
    if (depth_++ == 0) {
      struct sigaction on{};
      on.sa_handler = &division_fault_scope::on_fault;
      sigemptyset(&on.sa_mask);
      sigaction(SIGFPE, &on, &previous_);
    }
  }
  ~division_fault_scope() {
    what_ = outer_;
    std::lock_guard lock(mutex_);
    if (--depth_ == 0) sigaction(SIGFPE, &previous_, nullptr);
  }
  division_fault_scope(const division_fault_scope&) = delete;
  division_fault_scope& operator=(const division_fault_scope&) = delete;

 private:
#define SINEW_ONEDNN_STR2(x) #x
#define SINEW_ONEDNN_STR(x) SINEW_ONEDNN_STR2(x)
  static constexpr char head_[] = "sinew: oneDNN " SINEW_ONEDNN_STR(DNNL_VERSION_MAJOR) "." SINEW_ONEDNN_STR(
      DNNL_VERSION_MINOR) "." SINEW_ONEDNN_STR(DNNL_VERSION_PATCH) " stopped on an integer division by zero while "
                                                                   "creating ";
#undef SINEW_ONEDNN_STR
#undef SINEW_ONEDNN_STR2
  static constexpr char tail_[] =
      "; the process cannot go on. The fault is oneDNN's (its 3.7.2 does this choosing brgemm convolution kernels "
      "for some shapes on some CPUs): ONEDNN_MAX_CPU_ISA=AVX keeps it from those kernels, at a cost in speed.\n";

  static void on_fault(int) {
    // Only async-signal-safe calls: write, strlen, sigaction, raise.
    if (const char* what = what_) {
      (void)!write(STDERR_FILENO, head_, sizeof head_ - 1);
      (void)!write(STDERR_FILENO, what, std::strlen(what));
      (void)!write(STDERR_FILENO, tail_, sizeof tail_ - 1);
    }
    // Delivered to the previous disposition once this returns (SIGFPE is blocked while its handler runs).
    sigaction(SIGFPE, &previous_, nullptr);
    raise(SIGFPE);
  }

  static inline thread_local const char* what_ = nullptr;  // what this thread's innermost scope is creating
  static inline std::mutex mutex_;                          // guards depth_ and previous_ across threads
  static inline int depth_ = 0;
  static inline struct sigaction previous_{};
  const char* outer_;
};

/// Calls a oneDNN constructor and turns its failure into a backend_error naming the layer and the cause.
/// A primitive descriptor that lands on oneDNN's reference implementation (hundreds of times slower than its
/// jit kernels) is reported once on stderr: a silent fallback would pass for a slow library. A division by zero
/// inside the constructor is named before the process ends (division_fault_scope).
template <class F>
auto checked(const char* what, F&& f) -> decltype(f()) {
  try {
    auto result = [&] {
      const division_fault_scope named(what);
      return f();
    }();
    if constexpr (requires { result.impl_info_str(); }) {
      const char* impl = result.impl_info_str();
      if (impl && names_reference_loop(impl) && !std::getenv("SINEW_QUIET_REFERENCE")) {
        static thread_local std::string warned;
        if (warned.find(what) == std::string::npos) {
          warned += what;
          std::fprintf(stderr, "sinew: warning: oneDNN runs %s on its slow reference implementation (%s)\n", what,
                       impl);
        }
      }
    }
    return result;
  } catch (const dnnl::error& e) {
    throw backend_error(std::string("onednn: cannot create ") + what + ": " + e.what());
  }
}

/// Caller-owned plain NCHW floats seen as a oneDNN memory; rebinding costs nothing.
class external {
 public:
  void setup(context& ctx, const onednn::desc& plain) {
    desc_ = plain;
    memory_ = memory(desc_, ctx.engine(), DNNL_MEMORY_NONE);
  }
  const memory& bind(const float* data) {
    memory_.set_data_handle(const_cast<float*>(data));
    return memory_;
  }
  const onednn::desc& desc() const noexcept { return desc_; }

 private:
  onednn::desc desc_;
  memory memory_;
};

/// A conversion between two fixed layouts: oneDNN's reorder primitive, or where that is unsound on this machine
/// for these layouts, sinew's own loop (reorder.hpp says when and why).
class reorder_op {
 public:
  void setup(context& ctx, const desc& from, const desc& to) {
    own_ = reorder_runs_own_loop(ctx.engine(), from, to);
    if (own_)
      loop_ = own_reorder(from, to);
    else
      primitive_ = checked("reorder", [&] {
        return dnnl::reorder(dnnl::reorder::primitive_desc(ctx.engine(), from, ctx.engine(), to));
      });
    from_ = to_ = nullptr;
  }
  void run(context& ctx, const memory& from, const memory& to) {
    if (own_) return loop_.run(from.get_data_handle(), to.get_data_handle());
    if (&from != from_ || &to != to_) {
      from_ = &from;
      to_ = &to;
      args_ = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    }
    onednn::run(ctx, primitive_, args_);
  }
 private:
  bool own_ = false;
  own_reorder loop_;
  dnnl::reorder primitive_;
  const memory* from_ = nullptr;
  const memory* to_ = nullptr;
  bound_args args_;
};

/// A reorder created once for a fixed pair of layouts; passes the tensor through when they agree.
class converter {
 public:
  void setup(context& ctx, const desc& from, const desc& to) {
    needed_ = !(from == to);
    if (!needed_) return;
    target_ = memory(to, ctx.engine());
    reorder_.setup(ctx, from, to);
  }
  /// The memory the converted tensor will be in (src itself when no reorder is needed).
  const memory& target_for(const memory& src) const noexcept { return needed_ ? target_ : src; }
  /// Executes the reorder, if any.
  void run(context& ctx, const memory& src) {
    if (needed_) reorder_.run(ctx, src, target_);
  }
  const memory& operator()(context& ctx, const memory& src) {
    run(ctx, src);
    return target_for(src);
  }
  bool needed() const noexcept { return needed_; }

 private:
  bool needed_ = false;
  memory target_;
  reorder_op reorder_;
};

/// A primitive's output that must land in caller-owned memory of a fixed layout (the flat gradient buffer):
/// the primitive writes there directly when the layouts agree, else into a staging buffer that commit() reorders.
class writeback {
 public:
  void setup(context& ctx, const desc& produced, const memory& target) {
    target_ = target;
    direct_ = produced == target.get_desc();
    if (direct_) return;
    staging_ = memory(produced, ctx.engine());
    reorder_.setup(ctx, produced, target.get_desc());
  }
  /// Where the producing primitive writes.
  const memory& output() const noexcept { return direct_ ? target_ : staging_; }
  void commit(context& ctx) {
    if (!direct_) reorder_.run(ctx, staging_, target_);
  }

 private:
  bool direct_ = true;
  memory target_, staging_;
  reorder_op reorder_;
};

/// Copies a tensor of any layout into plain NCHW floats.
inline void to_plain(context& ctx, const memory& t, float* out) {
  memory dst(plain_like(t.get_desc()), ctx.engine(), out);
  reorder_op reorder;
  reorder.setup(ctx, t.get_desc(), dst.get_desc());
  reorder.run(ctx, t, dst);
  ctx.stream().wait();
}

using backend::activation_of;

/// Floats in a tensor's physical buffer (blocked layouts pad channels; the padding is zero).
inline std::size_t physical_floats(const desc& d) { return d.get_size() / sizeof(float); }

/// The activation after a Conv2d or Dense. ReLU (and ReLU6, as eltwise_clip to [0, 6], the same in oneDNN 2 and 3)
/// runs as a oneDNN post-op, free in the primitive's write-back. The others (Tanh, Sigmoid, ...) run as sinew's SIMD kernels on the output, in place, right after the primitive: oneDNN
/// 2.6's AVX2 tanh post-op doubled the time of LeNet-5's first convolution (see backend/simd/activation.hpp).
/// Backward computes the gradient of the pre-activation from the output and the gradient arriving for it.
class fused_activation {
 public:
  /// `in_primitive`: whether the primitive took attr(a)'s post-op (batch norm takes none: it runs ReLU6 here).
  void setup(context& ctx, simd::activation a, const desc& dst_md, bool in_primitive = true) {
    kind_ = a;
    in_primitive_ = in_primitive && post_op(a);
    floats_ = physical_floats(dst_md);
    if (kind_ != simd::activation::none) diff_ = memory(dst_md, ctx.engine());
  }
  bool active() const noexcept { return kind_ != simd::activation::none; }
  simd::activation kind() const noexcept { return kind_; }
  /// Whether activation `a` runs as a post-op inside the primitive (the rectifiers without a slope).
  static constexpr bool post_op(simd::activation a) noexcept {
    return a == simd::activation::relu || a == simd::activation::relu6;
  }
  /// Whether forward() runs a pass of its own (every activation but the post-ops) rather than a post-op inside
  /// the primitive.
  bool separate_pass() const noexcept { return active() && !in_primitive_; }

  /// The primitive attributes for activation `a`: a ReLU or ReLU6 post-op, or nothing.
  static dnnl::primitive_attr attr(simd::activation a) {
    dnnl::primitive_attr attr;
    if (post_op(a)) {
      dnnl::post_ops ops;
      if (a == simd::activation::relu)
        compat::append_eltwise(ops, dnnl::algorithm::eltwise_relu);
      else
        compat::append_eltwise(ops, dnnl::algorithm::eltwise_clip, 0.0f, ReLU6::kCeiling);
      attr.set_post_ops(ops);
    }
    return attr;
  }

  /// Applies the activation to the primitive's output in place (ReLU and ReLU6 already ran as post-ops).
  void forward(const memory& dst) {
    if (separate_pass()) {
      auto* p = static_cast<float*>(dst.get_data_handle());
      simd::activation_forward(kind_, p, p, floats_);
    }
  }

  /// Where the gradient of the pre-activation will be (diff_dst itself when there is no activation).
  const memory& target_for(const memory& diff_dst) const noexcept { return active() ? diff_ : diff_dst; }
  void backward(const memory& dst, const memory& diff_dst) {
    if (!active()) return;
    simd::activation_backward(kind_, static_cast<const float*>(dst.get_data_handle()),
                              static_cast<const float*>(diff_dst.get_data_handle()),
                              static_cast<float*>(diff_.get_data_handle()), floats_);
  }

 private:
  simd::activation kind_ = simd::activation::none;
  bool in_primitive_ = false;
  std::size_t floats_ = 0;
  memory diff_;
};

/// The op contract's accessors (backend_spec.hpp) for an op with one output that computes its input gradient
/// only when asked (need_diff_src_), written once: the op creates dst_ and diff_src_ and reads the output
/// gradient through diff_dst_, in dst_'s layout.
class op_base {
 public:
  desc dst_desc() const { return dst_.get_desc(); }
  const memory& dst() const noexcept { return dst_; }
  desc diff_src_desc() const { return diff_src_ ? diff_src_.get_desc() : desc(); }
  const memory& diff_src() const noexcept { return diff_src_; }
  void bind_diff_dst(context& ctx, const desc& d) {
    if (need_diff_src_) diff_dst_.setup(ctx, d, dst_.get_desc());
  }

 protected:
  bool need_diff_src_ = false;
  memory dst_, diff_src_;
  converter diff_dst_;
};

/// op_base for an op on sinew's own kernels that derives its weights from the flat buffer (thin_conv2d_op,
/// winograd_conv2d_op): it reads the output gradient whether or not the input gradient is asked (the weights'
/// gradient needs it), and keeps the weights it derived while the Model says they are unchanged.
class own_kernel_op_base : public op_base {
 public:
  /// The output gradient in dst's layout, always.
  void bind_diff_dst(context& ctx, const desc& d) { diff_dst_.setup(ctx, d, dst_.get_desc()); }
  /// Whether the next forward may keep the weights it derived last time (backend/generic/weight_cache.hpp).
  void set_mode(const ForwardMode& mode) noexcept { weights_cache_.set_mode(mode); }

 protected:
  weight_cache weights_cache_;
};

/// dst = a + b, in a's layout and type (b is reordered first when its layout or type differs): residual additions
/// and the sum of two gradients. Padding entries of blocked layouts are zero in both and stay zero. f32 runs on
/// sinew's SIMD loop; other types (OneDnnBf16's bf16 tensors) on oneDNN's binary primitive.
class adder {
 public:
  void setup(context& ctx, const desc& a, const desc& b) {
    b_.setup(ctx, b, a);
    dst_ = memory(a, ctx.engine());
    floats_ = compat::data_type_of(a) == dt::f32 ? physical_floats(a) : 0;
    if (floats_ == 0)
      binary_ = dnnl::binary(checked("residual addition", [&] {
        return compat::forward<dnnl::binary>(ctx.engine(), {}, dnnl::algorithm::binary_add, a, a, a);
      }));
  }
  desc dst_desc() const { return dst_.get_desc(); }
  const memory& dst() const noexcept { return dst_; }
  void run(context& ctx, const memory& a, const memory& b) {
    b_.run(ctx, b);
    const memory& bb = b_.target_for(b);
    if (floats_ == 0) {
      if (&a != bound_a_ || &bb != bound_b_) {
        bound_a_ = &a, bound_b_ = &bb;
        args_ = {{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, bb}, {DNNL_ARG_DST, dst_}};
      }
      onednn::run(ctx, binary_, args_);
      return;
    }
    const float* pa = static_cast<const float*>(a.get_data_handle());
    const float* pb = static_cast<const float*>(bb.get_data_handle());
    float* out = static_cast<float*>(dst_.get_data_handle());
    parallel_ranges(floats_, [&](std::size_t begin, std::size_t end) { simd::add(pa + begin, pb + begin, out + begin, end - begin); });
  }

 private:
  converter b_;
  memory dst_;
  std::size_t floats_ = 0;  // 0: not f32, the binary primitive adds
  dnnl::binary binary_;
  const memory* bound_a_ = nullptr;
  const memory* bound_b_ = nullptr;
  bound_args args_;
};

}  // namespace sinew::backend::onednn
