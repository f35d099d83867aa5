// sinew/comm/agreement.hpp: checking, once at start, that every rank runs the same configuration.
//
//   const comm::Fact facts[] = {{"parameter count", params.size()},
//                               {"optimizer", comm::fingerprint(O::kName), true}};
//   comm::require_agreement(world, facts, "dist::RingAllReduce");
// Ranks that disagree (another network, another batch size) would otherwise exchange spans of different sizes
// and fail far from the cause, or hang; here every rank throws the same comm_error naming the first rank that
// differs from rank 0 and what it differs in.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sinew/comm/communicator_spec.hpp"
#include "sinew/core/error.hpp"

namespace sinew::comm {

/// One value every rank must hold the same.
struct Fact {
  std::string_view name;  ///< what it is, for the error: "parameter count", "optimizer"
  /// the value every rank must hold (a count, or the fingerprint of text when `hashed`)
  std::uint64_t value;
  bool hashed = false;  ///< a fingerprint of text (printed in hex), not a count
};

/// 64-bit FNV-1a of `text`: the same on every rank and every run (std::hash promises neither).
constexpr std::uint64_t fingerprint(std::string_view text, std::uint64_t hash = 0xcbf29ce484222325ull) {
  for (const char c : text) hash = (hash ^ std::uint64_t(static_cast<unsigned char>(c))) * 0x100000001b3ull;
  return hash;
}

namespace detail {
// A value crosses as four 16-bit pieces, each a float that sums exactly with the zeros of the other ranks.
inline constexpr std::size_t kPiecesPerValue = 4;

inline std::string show(const Fact& fact, std::uint64_t value) {
  if (!fact.hashed) return std::to_string(value);
  char text[19];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return std::string("hash ") + text;
}
}  // namespace detail

/// Collective: every rank's `value`, by rank (an all-gather through allreduce_sum, the one collective every
/// communicator has: each value crosses as four 16-bit pieces, exact in floats).
template <CommunicatorPolicy C>
std::vector<std::uint64_t> gather_values(C& comm, std::uint64_t value) {
  const std::size_t ranks = std::size_t(comm.size());
  std::vector<float> all(ranks * detail::kPiecesPerValue, 0.0f);
  for (std::size_t p = 0; p < detail::kPiecesPerValue; ++p)
    all[std::size_t(comm.rank()) * detail::kPiecesPerValue + p] = float((value >> (16 * p)) & 0xffffu);
  comm.allreduce_sum(std::span<float>(all));
  std::vector<std::uint64_t> values(ranks, 0);
  for (std::size_t r = 0; r < ranks; ++r)
    for (std::size_t p = 0; p < detail::kPiecesPerValue; ++p)
      values[r] |= std::uint64_t(all[r * detail::kPiecesPerValue + p]) << (16 * p);
  return values;
}

/// Collective: throws comm_error on every rank if some rank's facts differ from the first counted rank's
/// (rank 0 unless it passes counted false), naming the first such rank and the first fact it differs in. `who`
/// starts the message ("dist::RingAllReduce"). Every rank must pass as many facts, in the same order; a rank
/// with `counted` false takes part in the collective but its facts are not compared (a parameter server's
/// batch size, which it never uses).
template <CommunicatorPolicy C>
void require_agreement(C& comm, std::span<const Fact> facts, std::string_view who, bool counted = true) {
  // Each rank's slot: its facts, then one piece saying whether it counts.
  const std::size_t ranks = std::size_t(comm.size()), per_rank = facts.size() * detail::kPiecesPerValue + 1;
  std::vector<float> all(ranks * per_rank, 0.0f);
  float* mine = all.data() + std::size_t(comm.rank()) * per_rank;
  for (std::size_t f = 0; f < facts.size(); ++f)
    for (std::size_t p = 0; p < detail::kPiecesPerValue; ++p)
      mine[f * detail::kPiecesPerValue + p] = float((facts[f].value >> (16 * p)) & 0xffffu);
  mine[per_rank - 1] = counted ? 1.0f : 0.0f;
  comm.allreduce_sum(std::span<float>(all));

  const auto value = [&](std::size_t rank, std::size_t f) {
    std::uint64_t v = 0;
    for (std::size_t p = 0; p < detail::kPiecesPerValue; ++p)
      v |= std::uint64_t(all[rank * per_rank + f * detail::kPiecesPerValue + p]) << (16 * p);
    return v;
  };
  const auto counts = [&](std::size_t rank) { return all[rank * per_rank + per_rank - 1] != 0.0f; };
  std::size_t first = 0;
  while (first < ranks && !counts(first)) ++first;
  for (std::size_t rank = first + 1; rank < ranks; ++rank)
    if (counts(rank))
      for (std::size_t f = 0; f < facts.size(); ++f)
        if (value(rank, f) != value(first, f))
          throw comm_error(std::string(who) + ": rank " + std::to_string(rank) + " disagrees with rank " +
                           std::to_string(first) + " on the " + std::string(facts[f].name) + " (" +
                           detail::show(facts[f], value(rank, f)) + " vs " + detail::show(facts[f], value(first, f)) +
                           "); every rank must run the same network, optimizer and options");
}

}  // namespace sinew::comm
