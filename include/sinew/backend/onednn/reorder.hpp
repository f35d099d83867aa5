// sinew/backend/onednn/reorder.hpp: sinew's own conversion between two layouts of a tensor, and the probe that
// says where the OneDnn backend needs it instead of oneDNN's reorder primitive (common.hpp's converter asks).
//
// Why: oneDNN 3's jit reorder blocks its loops for the per-core cache sizes the CPU reports. A KVM guest may
// announce AMD's cache-topology leaf (topoext) and leave CPUID 0x8000001D empty; oneDNN 3.7.2 then takes every
// cache to be one byte, blocks every dimension, and the kernel it emits leaves elements of padded blocked weights
// unwritten. Seen on this project's Zen 5 guests: a 4 x 17 x 3 x 3 weight in 16 x 16 blocks lost its 17th input
// channel's middle tap, so convolutions with 17 to 20 channels came out wrong whatever ISA oneDNN was held to
// (oneDNN's issue 5313 is the same fault on AArch64; oneDNN 2.6 plans without the cache and is not affected).
// Nothing in oneDNN's API sets the cache size, so a probe converts a few padded tensors once per process and
// checks every element; where oneDNN got one wrong, conversions to and from padded layouts run as own_reorder's
// loop (correct, not tuned) and stderr says so once.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "sinew/backend/onednn/compat.hpp"
#include "sinew/core/bf16.hpp"
#include "sinew/core/error.hpp"

namespace sinew::backend::onednn {

/// Converts a tensor between two blocked layouts (plain ones included) of the same dimensions, f32 or bf16 on
/// either side (bf16 rounds to nearest even, as oneDNN does), by a loop over the destination's elements; the
/// destination's padding is written with zeros.
class own_reorder {
 public:
  own_reorder() = default;
  own_reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to)
      : from_(compat::blocking_of(from)), to_(compat::blocking_of(to)) {
    if (!supports(from, to))
      throw backend_error("onednn: sinew's own reorder converts f32 or bf16 tensors of the same dimensions between "
                          "blocked layouts; these two layouts are not such a pair");
  }

  /// Whether the loop converts `from` into `to`.
  static bool supports(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
    const auto a = compat::blocking_of(from), b = compat::blocking_of(to);
    const auto f32_or_bf16 = [](dnnl::memory::data_type t) {
      return t == dnnl::memory::data_type::f32 || t == dnnl::memory::data_type::bf16;
    };
    return a.blocked && b.blocked && a.dims == b.dims && f32_or_bf16(a.type) && f32_or_bf16(b.type);
  }
  /// Whether the layout has padding (dimensions rounded up to whole blocks): what oneDNN's unsound reorders touch.
  static bool padded(const dnnl::memory::desc& d) {
    const auto b = compat::blocking_of(d);
    return b.blocked && b.padded != b.dims;
  }

  void run(const void* from, void* to) const {
    const int n = int(to_.padded.size());
    dnnl::memory::dim total = 1;
    for (auto extent : to_.padded) total *= extent;
#pragma omp parallel for schedule(static) if (total >= (1 << 16))
    for (dnnl::memory::dim flat = 0; flat < total; ++flat) {
      dnnl::memory::dim index[DNNL_MAX_NDIMS];
      dnnl::memory::dim rest = flat;
      bool inside = true;
      for (int d = n - 1; d >= 0; --d) {
        index[d] = rest % to_.padded[d];
        rest /= to_.padded[d];
        inside = inside && index[d] < to_.dims[d];
      }
      const float value = inside ? load(from, offset(from_, index)) : 0.0f;
      store(to, offset(to_, index), value);
    }
  }

 private:
  /// Where element `index` lies in layout `b`, in elements (compat::blocking says how).
  static dnnl::memory::dim offset(const compat::blocking& b, const dnnl::memory::dim* index) {
    dnnl::memory::dim outer[DNNL_MAX_NDIMS];
    const int n = int(b.dims.size());
    for (int d = 0; d < n; ++d) outer[d] = index[d];
    dnnl::memory::dim at = b.offset0, step = 1;
    for (auto k = b.inner.size(); k-- > 0;) {
      const auto [d, block] = b.inner[k];
      at += outer[d] % block * step;
      outer[d] /= block;
      step *= block;
    }
    for (int d = 0; d < n; ++d) at += outer[d] * b.strides[d];
    return at;
  }
  float load(const void* base, dnnl::memory::dim at) const {
    if (from_.type == dnnl::memory::data_type::bf16) return from_bf16(static_cast<const std::uint16_t*>(base)[at]);
    return static_cast<const float*>(base)[at];
  }
  void store(void* base, dnnl::memory::dim at, float value) const {
    if (to_.type == dnnl::memory::data_type::bf16)
      static_cast<std::uint16_t*>(base)[at] = to_bf16(value);
    else
      static_cast<float*>(base)[at] = value;
  }

  compat::blocking from_, to_;
};

namespace detail {
/// Converts a few padded tensors (weights and activations with 17 or 20 channels, in blocks of 16 and of 8) with
/// oneDNN's reorder into the padded layout and back, and checks every element against own_reorder's loop.
inline bool probe_onednn_reorders(const dnnl::engine& eng) {
  using dnnl::memory;
  using tag = memory::format_tag;
  struct shape {
    memory::dims dims;
    tag blocked;
  };
  const shape shapes[] = {{{4, 17, 3, 3}, tag::ABcd16b16a}, {{4, 17, 3, 3}, tag::ABcd8b8a},
                          {{20, 20, 3, 3}, tag::ABcd16b16a}, {{3, 17, 9, 9}, tag::aBcd16b},
                          {{3, 17, 9, 9}, tag::aBcd8b}};
  dnnl::stream stream(eng);
  for (const auto& s : shapes) {
    const memory::desc plain(s.dims, memory::data_type::f32, tag::abcd),
        blocked(s.dims, memory::data_type::f32, s.blocked);
    std::vector<float> source(plain.get_size() / sizeof(float)), back(source.size(), -1.0f);
    for (std::size_t i = 0; i < source.size(); ++i) source[i] = float(i + 1);  // exact, and never the filler
    std::vector<float> theirs(blocked.get_size() / sizeof(float), -1.0f), ours(theirs.size());
    memory src(plain, eng, source.data()), dst(blocked, eng, theirs.data()), round_trip(plain, eng, back.data());
    dnnl::reorder(src, dst).execute(stream, src, dst);
    dnnl::reorder(dst, round_trip).execute(stream, dst, round_trip);
    stream.wait();
    own_reorder(plain, blocked).run(source.data(), ours.data());
    if (theirs != ours || back != source) return false;
  }
  return true;
}
}  // namespace detail

/// Whether oneDNN's reorders to and from padded blocked layouts are sound in this process (see the top); the
/// probe runs on the first call and its verdict holds for the process. An unsound verdict is said once on stderr.
inline bool onednn_reorders_sound(const dnnl::engine& eng) {
  static const bool sound = [&] {
    const bool ok = detail::probe_onednn_reorders(eng);
    if (!ok)
      std::fprintf(stderr,
                   "sinew: warning: oneDNN %d.%d.%d's reorder got a padded tensor wrong on this machine (it plans for "
                   "the cache sizes the CPU reports, and this one reports none); sinew converts padded layouts "
                   "with its own loop instead: correct, but slower (backend/onednn/reorder.hpp)\n",
                   DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR, DNNL_VERSION_PATCH);
    return ok;
  }();
  return sound;
}

/// Whether the conversion of `from` into `to` runs as own_reorder here rather than as oneDNN's reorder.
inline bool reorder_runs_own_loop(const dnnl::engine& eng, const dnnl::memory::desc& from,
                                  const dnnl::memory::desc& to) {
  return (own_reorder::padded(from) || own_reorder::padded(to)) && own_reorder::supports(from, to) &&
         !onednn_reorders_sound(eng);
}

}  // namespace sinew::backend::onednn
