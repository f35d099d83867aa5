// tests/support/resume.hpp: what the checkpoint and resume tests compare (a trainer's state, bit for bit) and the
// loader the distributed ones train on (tests/io/test_checkpoint.cpp, tests/dist/test_resume.cpp,
// tests/dist/resume_ranks_main.cpp).
#pragma once

#include <cstring>
#include <span>
#include <vector>

#include "corners.hpp"
#include "sinew/data/cached_loader.hpp"

namespace sinew::test {

/// This rank's parameters, then its buffers; empty on a parameter server's server, which holds only its shard
/// current.
template <class T>
std::vector<float> state_of(T& t) {
  if (!t.dist().is_worker()) return {};
  std::vector<float> all(t.model().parameters().begin(), t.model().parameters().end());
  all.insert(all.end(), t.model().buffers().begin(), t.model().buffers().end());
  return all;
}

/// The same floats bit for bit: a resumed run must end exactly where the run that was not stopped ends.
inline bool bitwise_equal(std::span<const float> a, std::span<const float> b) {
  // memcmp must not see the null data() of an empty vector (a server's state), even with a size of 0.
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

/// 96 corners() samples in batches of 8 (seed 4, short batches dropped), this worker's share of each epoch: 32
/// samples a worker on 3 ranks (4 batches), 48 on 2 (6 batches).
template <class T>
data::CachedLoader worker_loader(T& trainer) {
  return corners_loader(corners(96, 1), {.batch_size = 8, .seed = 4, .drop_last = true,
                                         .rank = trainer.dist().worker_index(),
                                         .world_size = trainer.dist().workers()});
}

}  // namespace sinew::test
