// tests/support/rank_inputs.hpp: inputs for the MPI tests that every rank can compute for every other rank,
// so that each rank checks a collective's result against the serial sum by itself.
#pragma once

#include <boost/mpi/communicator.hpp>

#include <cstddef>

namespace sinew::test {

/// An integer-valued float in [-1000, 1000] from (rank, index): sums of such floats are exact in any order, so a
/// ring, a tree or MPI's all-reduce must equal the serial sum bit for bit.
inline float integer_input(int rank, std::size_t i) {
  return float(int((i * 7919 + std::size_t(rank) * 104729) % 2001) - 1000);
}

/// The number of ranks in MPI_COMM_WORLD (MPI must have started).
inline int world_size() { return boost::mpi::communicator().size(); }

}  // namespace sinew::test
