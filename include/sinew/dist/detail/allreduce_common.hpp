// sinew/dist/detail/allreduce_common.hpp: what the all-reduce strategies share: the start-up agreement and
// broadcast, and turning the summed gradient into the mean.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "sinew/backend/simd/elementwise.hpp"
#include "sinew/comm/agreement.hpp"
#include "sinew/comm/communicator_spec.hpp"
#include "sinew/optim/optimizer_spec.hpp"

namespace sinew::dist::detail {

/// Checks that every rank has as many parameters, the same optimizer, strategy settings (`extra`) and the
/// caller's configuration text, then makes every rank's parameters rank 0's. The optimizer is fresh (the
/// trainer creates it just before), so it holds no state that could differ.
template <Communicator C, Optimizer O>
void agree_and_broadcast(C& comm, std::span<float> params, std::string_view who, std::string_view configuration,
                         std::span<const comm::Fact> extra = {}) {
  std::vector<comm::Fact> facts = {{"parameter count", params.size()},
                                    {"optimizer", comm::fingerprint(O::kName), true},
                                    {"configuration text", comm::fingerprint(configuration), true}};
  facts.insert(facts.end(), extra.begin(), extra.end());
  comm::require_agreement(comm, std::span<const comm::Fact>(facts), who);
  comm.broadcast(params, 0);
}

/// x *= factor, vectorised.
inline void scale(std::span<float> x, float factor) {
  float* p = x.data();
  simd::transform(0, x.size(), [&](auto v, std::size_t i) {
    using V = decltype(v);
    simd::store(p + i, simd::load<V>(p + i) * V(factor));
  });
}

}  // namespace sinew::dist::detail
