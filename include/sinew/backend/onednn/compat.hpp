// sinew/backend/onednn/compat.hpp: the one place that knows which major of oneDNN sinew is built against.
//
// sinew builds on oneDNN 2.6 (Debian 12) and 3.x (Debian 13: 3.7, and the vcpkg registry's). Version 3 dropped
// the operation descriptors (`convolution_forward::desc`): a primitive descriptor is built from the engine and
// the operation's arguments directly, in the same order the descriptor took them, then the hint and the
// attributes. Eltwise, batch norm and pooling descriptors also gained arguments (a separate dst, a dilation), the
// post-op eltwise lost its scale, and memory descriptors are queried through `get_*()` instead of the `data`
// struct. Every op writes its primitives once, through the functions below, which the library's version macros
// (DNNL_VERSION_MAJOR) resolve at compile time.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sinew/core/detail/vector_intrinsics.hpp"  // first: see its comment
#include <oneapi/dnnl/dnnl.hpp>
#include <oneapi/dnnl/dnnl_version.h>

namespace sinew::backend::onednn::compat {

/// The major version of oneDNN this translation unit is compiled against.
inline constexpr int kMajor = DNNL_VERSION_MAJOR;
static_assert(kMajor == 2 || kMajor == 3,
              "sinew is written against oneDNN 2 (2.6 or later) and oneDNN 3: this oneDNN is another major");
#if DNNL_VERSION_MAJOR == 2
static_assert(DNNL_VERSION_MINOR >= 6, "sinew needs oneDNN 2.6 or later (Debian 12's libdnnl-dev is 2.6)");
#endif

using dnnl::memory;

/// @{ Memory-descriptor queries.
inline memory::dims dims_of(const memory::desc& d) {
#if DNNL_VERSION_MAJOR >= 3
  return d.get_dims();
#else
  return d.dims();
#endif
}
inline memory::data_type data_type_of(const memory::desc& d) {
#if DNNL_VERSION_MAJOR >= 3
  return d.get_data_type();
#else
  return d.data_type();
#endif
}
/// @}

/// A memory descriptor's layout as oneDNN defines it for blocked formats: element (i_0, ..., i_n-1) lies at
/// offset0 + sum_d (i_d / B_d) * strides[d] + its place inside the inner blocks, B_d the product of the inner
/// blocks on dimension d, the innermost block varying fastest. `padded`: the dimensions rounded up to whole blocks
/// (the padding holds zeros). `blocked` is false for any other format kind (none of sinew's tensors).
struct blocking {
  bool blocked = false;
  memory::data_type type = memory::data_type::undef;
  memory::dims dims, padded, strides;
  std::vector<std::pair<int, memory::dim>> inner;  ///< (dimension, block), outermost first
  memory::dim offset0 = 0;
};
inline blocking blocking_of(const memory::desc& d) {
  blocking b;
#if DNNL_VERSION_MAJOR >= 3
  b.blocked = d.get_format_kind() == memory::format_kind::blocked;
  b.type = d.get_data_type();
  b.dims = d.get_dims();
  if (!b.blocked) return b;
  b.padded = d.get_padded_dims();
  b.strides = d.get_strides();
  const memory::dims blks = d.get_inner_blks(), idxs = d.get_inner_idxs();
  for (int k = 0; k < d.get_inner_nblks(); ++k) b.inner.emplace_back(int(idxs[k]), blks[k]);
  b.offset0 = d.get_submemory_offset();
#else
  const dnnl_memory_desc_t& c = d.data;
  b.blocked = c.format_kind == dnnl_blocked;
  b.type = static_cast<memory::data_type>(c.data_type);
  b.dims.assign(c.dims, c.dims + c.ndims);
  if (!b.blocked) return b;
  const auto& blk = c.format_desc.blocking;
  b.padded.assign(c.padded_dims, c.padded_dims + c.ndims);
  b.strides.assign(blk.strides, blk.strides + c.ndims);
  for (int k = 0; k < blk.inner_nblks; ++k) b.inner.emplace_back(int(blk.inner_idxs[k]), blk.inner_blks[k]);
  b.offset0 = c.offset0;
#endif
  return b;
}

/// The same dimensions and layout (plain or blocked) with elements of type `type`. oneDNN 3 has no setter: the
/// layout is found again among the format tags, which name every layout a primitive picks for sinew's tensors.
inline memory::desc with_data_type(const memory::desc& d, memory::data_type type) {
#if DNNL_VERSION_MAJOR >= 3
  if (d.get_data_type() == type) return d;
  const memory::dims shape = d.get_dims();
  if (d.get_inner_nblks() == 0) return memory::desc(shape, type, d.get_strides());
  for (int t = dnnl_a; t < dnnl_format_tag_last; ++t) {
    const auto tag = static_cast<memory::format_tag>(t);
    const memory::desc same(shape, d.get_data_type(), tag, /*allow_empty=*/true);  // empty where the tag does not fit
    if (bool(same) && same == d) return memory::desc(shape, type, tag);
  }
  throw dnnl::error(dnnl_unimplemented, "no format tag names this blocked layout");
#else
  memory::desc out = d;
  out.data.data_type = static_cast<dnnl_data_type_t>(type);
  return out;
#endif
}

/// The primitive descriptor of a forward primitive P (convolution, inner product, matmul, binary) from the
/// arguments oneDNN 2's `P::desc` took, which oneDNN 3's primitive descriptor takes after the engine.
template <class P, class... A>
typename P::primitive_desc forward(const dnnl::engine& eng, const dnnl::primitive_attr& attr, A&&... a) {
#if DNNL_VERSION_MAJOR >= 3
  return typename P::primitive_desc(eng, std::forward<A>(a)..., attr);
#else
  return typename P::primitive_desc(typename P::desc(std::forward<A>(a)...), attr, eng);
#endif
}

/// The same for a backward primitive P, with the forward primitive descriptor `hint`.
template <class P, class Hint, class... A>
typename P::primitive_desc backward(const dnnl::engine& eng, const Hint& hint, A&&... a) {
#if DNNL_VERSION_MAJOR >= 3
  return typename P::primitive_desc(eng, std::forward<A>(a)..., hint);
#else
  return typename P::primitive_desc(typename P::desc(std::forward<A>(a)...), eng, hint);
#endif
}

/// @{ Eltwise on a tensor of layout `data` (the output has the same).
inline dnnl::eltwise_forward::primitive_desc eltwise_forward(const dnnl::engine& eng, dnnl::prop_kind prop,
                                                             dnnl::algorithm alg, const memory::desc& data,
                                                             float alpha = 0.f, float beta = 0.f) {
#if DNNL_VERSION_MAJOR >= 3
  return {eng, prop, alg, data, data, alpha, beta};
#else
  return {{prop, alg, data, alpha, beta}, eng};
#endif
}
/// `data` is the forward's src, or its dst for the `_use_dst_for_bwd` algorithms.
inline dnnl::eltwise_backward::primitive_desc eltwise_backward(const dnnl::engine& eng, dnnl::algorithm alg,
                                                               const memory::desc& diff, const memory::desc& data,
                                                               const dnnl::eltwise_forward::primitive_desc& hint,
                                                               float alpha = 0.f, float beta = 0.f) {
#if DNNL_VERSION_MAJOR >= 3
  return {eng, alg, diff, diff, data, alpha, beta, hint};
#else
  return {{alg, diff, data, alpha, beta}, eng, hint};
#endif
}
/// @}

/// @{ Batch and layer normalisation: the output and the gradients in the input's layout.
inline dnnl::batch_normalization_forward::primitive_desc batch_norm_forward(const dnnl::engine& eng,
                                                                            dnnl::prop_kind prop,
                                                                            const memory::desc& data, float eps,
                                                                            dnnl::normalization_flags flags) {
#if DNNL_VERSION_MAJOR >= 3
  return {eng, prop, data, data, eps, flags};
#else
  return {{prop, data, eps, flags}, eng};
#endif
}
inline dnnl::batch_normalization_backward::primitive_desc batch_norm_backward(
    const dnnl::engine& eng, dnnl::prop_kind prop, const memory::desc& diff, const memory::desc& data, float eps,
    dnnl::normalization_flags flags, const dnnl::batch_normalization_forward::primitive_desc& hint) {
#if DNNL_VERSION_MAJOR >= 3
  return {eng, prop, diff, diff, data, eps, flags, hint};
#else
  return {{prop, diff, data, eps, flags}, eng, hint};
#endif
}
inline dnnl::layer_normalization_forward::primitive_desc layer_norm_forward(const dnnl::engine& eng,
                                                                            dnnl::prop_kind prop,
                                                                            const memory::desc& data, float eps,
                                                                            dnnl::normalization_flags flags) {
#if DNNL_VERSION_MAJOR >= 3
  return {eng, prop, data, data, eps, flags};
#else
  return {{prop, data, eps, flags}, eng};
#endif
}
/// @}

/// @{ Pooling without dilation.
inline dnnl::pooling_forward::primitive_desc pooling_forward(const dnnl::engine& eng, dnnl::prop_kind prop,
                                                             dnnl::algorithm alg, const memory::desc& src,
                                                             const memory::desc& dst, const memory::dims& strides,
                                                             const memory::dims& kernel, const memory::dims& pad_l,
                                                             const memory::dims& pad_r) {
#if DNNL_VERSION_MAJOR >= 3
  return {eng, prop, alg, src, dst, strides, kernel, memory::dims(strides.size(), 0), pad_l, pad_r};
#else
  return {{prop, alg, src, dst, strides, kernel, pad_l, pad_r}, eng};
#endif
}
inline dnnl::pooling_backward::primitive_desc pooling_backward(const dnnl::engine& eng, dnnl::algorithm alg,
                                                               const memory::desc& diff_src,
                                                               const memory::desc& diff_dst,
                                                               const memory::dims& strides,
                                                               const memory::dims& kernel, const memory::dims& pad_l,
                                                               const memory::dims& pad_r,
                                                               const dnnl::pooling_forward::primitive_desc& hint) {
#if DNNL_VERSION_MAJOR >= 3
  return {eng, alg, diff_src, diff_dst, strides, kernel, memory::dims(strides.size(), 0), pad_l, pad_r, hint};
#else
  return {{alg, diff_src, diff_dst, strides, kernel, pad_l, pad_r}, eng, hint};
#endif
}
/// @}

/// Whether batch norm's backward takes the shift (DNNL_ARG_SHIFT) with `use_shift`: oneDNN 2 fails the execution
/// without it, oneDNN 3 with it (an argument the primitive does not read is `invalid_arguments` there).
inline constexpr bool kBatchNormBackwardTakesShift = DNNL_VERSION_MAJOR < 3;

/// Appends an eltwise post-op (oneDNN 2's took a scale first, always 1 here).
inline void append_eltwise(dnnl::post_ops& ops, dnnl::algorithm alg, float alpha = 0.f, float beta = 0.f) {
#if DNNL_VERSION_MAJOR >= 3
  ops.append_eltwise(alg, alpha, beta);
#else
  ops.append_eltwise(1.0f, alg, alpha, beta);
#endif
}

/// The name of a oneDNN CPU ISA, for messages (each major names a few the other lacks).
inline std::string cpu_isa_name(dnnl::cpu_isa isa) {
  using I = dnnl::cpu_isa;
  switch (isa) {
    case I::sse41: return "sse41";
    case I::avx: return "avx";
    case I::avx2: return "avx2";
    case I::avx2_vnni: return "avx2_vnni";
    case I::avx512_core: return "avx512_core";
    case I::avx512_core_vnni: return "avx512_core_vnni";
    case I::avx512_core_bf16: return "avx512_core_bf16";
    case I::avx512_core_amx: return "avx512_core_amx";
#if DNNL_VERSION_MAJOR >= 3
    case I::avx2_vnni_2: return "avx2_vnni_2";
    case I::avx10_1_512: return "avx10_1_512";
    case I::avx512_core_amx_fp16: return "avx512_core_amx_fp16";
#else
    case I::avx512_mic: return "avx512_mic";
    case I::avx512_mic_4ops: return "avx512_mic_4ops";
#endif
    default: return "cpu_isa " + std::to_string(unsigned(isa));
  }
}

}  // namespace sinew::backend::onednn::compat
