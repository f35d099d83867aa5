// The ring's sum of floats kept in share()'s memory (in place), timed alone: every rank writes its part (as
// backward writes the gradients, so they lie in the writer's cache), the ranks meet at a barrier, and one
// ring_allreduce_sum over all of it is timed; the median of the calls after the first 3. Built once against the
// header of 7d8ce20 (old: sum, then copy each peer's summed segment out of its part) and once against this
// commit's (new: the sum stored into every rank's part), with the project's flags:
//   mkdir -p /tmp/old/include/sinew/comm && git show 7d8ce20:include/sinew/comm/ring_allreduce.hpp \
//       > /tmp/old/include/sinew/comm/ring_allreduce.hpp
//   F="-O3 -DNDEBUG -march=native -std=gnu++20 -fopenmp -I/usr/lib/x86_64-linux-gnu/openmpi/include"
//   c++ $F -I/tmp/old/include -Iinclude -Itools inplace.cpp -o inplace-old -lmpi -lmpi_cxx
//   c++ $F -Iinclude -Itools inplace.cpp -o inplace-new -lmpi -lmpi_cxx
//   mpirun -np 2 --bind-to core inplace-old 11181648 30   # ResNet-18's gradient floats, calls
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "sinew/comm/mpi.hpp"
#include "sinew/comm/ring_allreduce.hpp"

int main(int argc, char** argv) {
  sinew::comm::Mpi world;
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 11181648;
  const int calls = argc > 2 ? std::atoi(argv[2]) : 30;
  sinew::dist::RingWorkspace<sinew::comm::Mpi> work;
  const std::span<float> mine = sinew::dist::RingOperation<sinew::comm::Mpi>::share(world, work, n);
  if (mine.empty()) {
    std::fprintf(stderr, "inplace: share() gave nothing (one rank, or not one host)\n");
    return 1;
  }
  std::vector<double> ms;
  for (int c = 0; c < calls + 3; ++c) {
    for (std::size_t i = 0; i < n; ++i) mine[i] = float((i + std::size_t(world.rank()) + std::size_t(c)) % 97) * 0.25f;
    world.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    sinew::dist::ring_allreduce_sum(world, mine, work);
    const auto t1 = std::chrono::steady_clock::now();
    // Every element is the sum of both ranks' values (exact in floats: small multiples of 0.25).
    for (std::size_t i = 0; i < n; i += 4099) {
      float want = 0;
      for (int q = 0; q < world.size(); ++q) want += float((i + std::size_t(q) + std::size_t(c)) % 97) * 0.25f;
      if (mine[i] != want) {
        std::fprintf(stderr, "inplace: rank %d element %zu is %g, not %g\n", world.rank(), i, mine[i], want);
        return 1;
      }
    }
    if (c >= 3) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  if (world.rank() == 0)
    std::printf("%zu floats, %d ranks: median %.3f ms (min %.3f, max %.3f), %.1f GB/s of the floats a rank holds\n",
                n, world.size(), ms[ms.size() / 2], ms.front(), ms.back(),
                double(n) * 4 / (ms[ms.size() / 2] * 1e-3) / 1e9);
  return 0;
}
