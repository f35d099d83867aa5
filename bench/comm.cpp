// bench/comm: all-reduce latency and bus bandwidth, sinew's ring next to MPI_Allreduce, in the same run.
//
//   mpirun -np 2 --bind-to core build/bench/comm [--min 4096] [--max 67108864] [--iterations 50] [--json FILE]
//
// Sizes are in bytes of float data. Bus bandwidth is 2 (p - 1) / p x bytes / time, the traffic a
// bandwidth-optimal all-reduce moves per rank (NCCL's convention), so it compares across rank counts.
// Each figure is the median of --iterations timed calls after 5 warm-up calls, all ranks synchronised by a
// barrier before each call. State the binding and rank count with the figures: they change them threefold.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "sinew/comm/mpi.hpp"
#include "sinew/dist/ring_allreduce.hpp"
#include "sinew/metrics.hpp"
#include "support/cli.hpp"

namespace {

template <class F>
double median_seconds(sinew::comm::Mpi& world, int iterations, F&& call) {
  std::vector<double> t;
  for (int i = 0; i < 5 + iterations; ++i) {
    world.barrier();
    const double start = MPI_Wtime();
    call();
    double s = MPI_Wtime() - start;
    // The slowest rank defines the collective's time.
    MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, world.native());
    if (i >= 5) t.push_back(s);
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) try {
  sinew::comm::Mpi world;
  sinew::cli::Args args(argc, argv,
                        "usage: mpirun -np N comm [--min 4096] [--max 67108864] [--iterations 50] [--json FILE]");
  const std::size_t min_bytes = std::size_t(args.number("min", 4096));
  const std::size_t max_bytes = std::size_t(args.number("max", 64.0 * 1024 * 1024));
  const int iterations = args.integer("iterations", 50);
  const std::string json = args.get("json", "");
  args.check_unused();

  const int p = world.size();
  const bool root = world.rank() == 0;
  if (root)
    std::printf("all-reduce of floats, %d ranks (binding as given to mpirun), median of %d\n%10s %12s %12s %10s %10s %7s\n",
                p, iterations, "bytes", "ring us", "MPI us", "ring GB/s", "MPI GB/s", "ratio");
  auto out = sinew::metrics::Json::make_array();
  sinew::dist::RingWorkspace<sinew::comm::Mpi> work;
  for (std::size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    std::vector<float> data(bytes / sizeof(float), 1.0f);
    const double ring = median_seconds(world, iterations, [&] { sinew::dist::ring_allreduce_sum(world, data, work); });
    const double mpi = median_seconds(world, iterations, [&] {
      MPI_Allreduce(MPI_IN_PLACE, data.data(), int(data.size()), MPI_FLOAT, MPI_SUM, world.native());
    });
    const double bus = 2.0 * (p - 1) / p * double(bytes);
    if (root) {
      std::printf("%10zu %12.1f %12.1f %10.2f %10.2f %7.2f\n", bytes, 1e6 * ring, 1e6 * mpi, bus / ring / 1e9,
                  bus / mpi / 1e9, mpi / ring);
      auto j = sinew::metrics::Json::make_object();
      j.set("ranks", p);
      j.set("bytes", bytes);
      j.set("ring_seconds", ring);
      j.set("mpi_allreduce_seconds", mpi);
      j.set("ring_bus_gbps", bus / ring / 1e9);
      j.set("mpi_allreduce_bus_gbps", bus / mpi / 1e9);
      j.set("ratio_ring_to_mpi", mpi / ring);
      out.push_back(std::move(j));
    }
  }
  if (root && !json.empty()) out.save(json);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "comm: %s\n", e.what());
  return 1;
}
