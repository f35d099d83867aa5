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
// loop (correct, slower than oneDNN's kernels) and stderr says so once.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "sinew/backend/onednn/compat.hpp"
#include "sinew/core/bf16.hpp"
#include "sinew/core/error.hpp"
#include "sinew/core/parallel.hpp"

namespace sinew::backend::onednn {

/// Converts a tensor between two blocked layouts (plain ones included) of the same dimensions, f32 or bf16 on
/// either side (bf16 rounds to nearest even, as oneDNN does), by a loop over the destination's elements whose
/// offsets in both layouts come from tables built once; the destination's padding is written with zeros.
class own_reorder {
 public:
  own_reorder() = default;
  own_reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to)
      : from_(compat::blocking_of(from)), to_(compat::blocking_of(to)) {
    if (!supports(from, to))
      throw backend_error("onednn: sinew's own reorder converts f32 or bf16 tensors of the same dimensions between "
                          "blocked layouts; these two layouts are not such a pair");
    for (std::size_t d = 0; d < to_.dims.size(); ++d) {
      from_at_.push_back(offsets_along(from_, int(d), from_.dims[d]));
      to_at_.push_back(offsets_along(to_, int(d), to_.padded[d]));
    }
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
    const bool bf16_in = from_.type == dnnl::memory::data_type::bf16;
    const bool bf16_out = to_.type == dnnl::memory::data_type::bf16;
    if (bf16_in && bf16_out)
      run_as(static_cast<const std::uint16_t*>(from), static_cast<std::uint16_t*>(to));
    else if (bf16_in)
      run_as(static_cast<const std::uint16_t*>(from), static_cast<float*>(to));
    else if (bf16_out)
      run_as(static_cast<const float*>(from), static_cast<std::uint16_t*>(to));
    else
      run_as(static_cast<const float*>(from), static_cast<float*>(to));
  }

 private:
  using dim = dnnl::memory::dim;

  /// Where index i of dimension d lies in layout b, less offset0: an element's offset in a blocked layout is
  /// offset0 plus one such term per dimension (each inner block and the outer stride see only their own
  /// dimension's index), so a table per dimension replaces the divisions of every element by the blocks.
  static std::vector<dim> offsets_along(const compat::blocking& b, int d, dim count) {
    std::vector<dim> at(std::size_t(count > 0 ? count : 0));
    for (dim i = 0; i < count; ++i) {
      dim outer = i, term = 0, step = 1;
      for (auto k = b.inner.size(); k-- > 0;) {
        const auto [bd, block] = b.inner[k];
        if (bd == d) {
          term += outer % block * step;
          outer /= block;
        }
        step *= block;
      }
      at[std::size_t(i)] = term + outer * b.strides[std::size_t(d)];
    }
    return at;
  }

  static float widen(float v) { return v; }
  static float widen(std::uint16_t v) { return from_bf16(v); }
  static void narrow(float v, float& out) { out = v; }
  static void narrow(float v, std::uint16_t& out) { out = to_bf16(v); }

  /// Walks the destination's (padded) index space tile by tile, a tile being the two innermost dimensions (one
  /// dimension's tile is a row): the outer indices advance like an odometer and give both layouts' tile offsets
  /// from the tables. Elements whose indices lie in the padding are written with zeros.
  template <class S, class D>
  void run_as(const S* src, D* dst) const {
    const int n = int(to_.padded.size()), outer_dims = std::max(0, n - 2);
    const auto extent = [&](int d) { return d < 0 ? dim(1) : to_.padded[std::size_t(d)]; };
    const auto inside = [&](int d) { return d < 0 ? dim(1) : to_.dims[std::size_t(d)]; };
    static const std::vector<dim> kNowhere{0};  // the offsets along the missing dimension of a 1-D tensor
    const auto& from_mid = n >= 2 ? from_at_[std::size_t(n - 2)] : kNowhere;
    const auto& to_mid = n >= 2 ? to_at_[std::size_t(n - 2)] : kNowhere;
    const auto& from_row = from_at_[std::size_t(n - 1)];
    const auto& to_row = to_at_[std::size_t(n - 1)];
    const dim mid = extent(n - 2), mid_inside = inside(n - 2), row = extent(n - 1), row_inside = inside(n - 1);
    std::size_t tiles = 1;
    for (int d = 0; d < outer_dims; ++d) tiles *= std::size_t(to_.padded[std::size_t(d)]);
    const std::size_t tiles_per_thread = std::max<std::size_t>(1, (std::size_t(1) << 15) / std::size_t(mid * row));
    parallel_ranges(
        tiles,
        [&](std::size_t begin, std::size_t end) {
          dim index[DNNL_MAX_NDIMS] = {};
          std::size_t rest = begin;
          for (int d = outer_dims - 1; d >= 0; --d) {
            index[d] = dim(rest % std::size_t(to_.padded[std::size_t(d)]));
            rest /= std::size_t(to_.padded[std::size_t(d)]);
          }
          for (std::size_t tile = begin; tile < end; ++tile) {
            dim s = from_.offset0, t = to_.offset0;
            bool in = true;
            for (int d = 0; d < outer_dims; ++d) {
              t += to_at_[std::size_t(d)][std::size_t(index[d])];
              in = in && index[d] < to_.dims[std::size_t(d)];
              if (in) s += from_at_[std::size_t(d)][std::size_t(index[d])];
            }
            for (dim i = 0; i < mid; ++i) {
              const dim ti = t + to_mid[std::size_t(i)];
              const dim copied = in && i < mid_inside ? row_inside : 0;
              const dim si = copied ? s + from_mid[std::size_t(i)] : 0;
              for (dim j = 0; j < copied; ++j)
                narrow(widen(src[si + from_row[std::size_t(j)]]), dst[ti + to_row[std::size_t(j)]]);
              for (dim j = copied; j < row; ++j) narrow(0.0f, dst[ti + to_row[std::size_t(j)]]);
            }
            for (int d = outer_dims - 1; d >= 0; --d) {  // the odometer
              if (++index[d] < to_.padded[std::size_t(d)]) break;
              index[d] = 0;
            }
          }
        },
        1, tiles_per_thread);
  }

  compat::blocking from_, to_;
  std::vector<std::vector<dim>> from_at_, to_at_;  ///< offsets_along each dimension, of either layout
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
