// Built against the installed package's sinew::mpi alone, run under mpiexec: every rank all-reduces its rank
// number + 1 through comm::Mpi, and the strategies' headers compile without a backend.
#include <sinew/comm.hpp>
#include <sinew/dist.hpp>

#include <cstdio>
#include <vector>

#if __has_include(<Eigen/Core>)
#error "sinew::mpi put Eigen on the include path"
#endif
#ifdef ONEAPI_DNNL_DNNL_HPP
#error "sinew::mpi's headers included oneDNN"
#endif

int main() {
  sinew::comm::Mpi world;
  std::vector<float> x{static_cast<float>(world.rank() + 1)};
  world.allreduce_sum(x);
  const float expected = static_cast<float>(world.size() * (world.size() + 1) / 2);
  const bool ok = x[0] == expected;
  if (world.rank() == 0)
    std::printf("consumer mpi: %s, %d ranks, sum %.0f\n", ok ? "ok" : "wrong", world.size(), static_cast<double>(x[0]));
  return ok ? 0 : 1;
}
