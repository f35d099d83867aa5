// bench/comm: all-reduce latency and bus bandwidth, sinew's ring next to MPI_Allreduce and PyTorch's Gloo
// all-reduce, in the same run, and the synchronous parameter server's push and pull of the same bytes.
//
//   mpirun -np 2 --bind-to core build/bench/comm [--min 4096] [--max 67108864] [--iterations 50] [--no-gloo]
//                                                [--ring-chunk FLOATS] [--ring-transport auto|messages|shared]
//                                                [--hierarchical] [--host-ranks K] [--json FILE]
//
// Gloo runs first: rank 0 starts bench/pytorch/gloo_allreduce.py with as many processes, bound as this rank is
// (one CPU each when mpirun bound the ranks to cores), while the other ranks wait without spinning.
// Sizes are in bytes of float data. Bus bandwidth is 2 (p - 1) / p x bytes / time, the traffic a
// bandwidth-optimal all-reduce moves per rank (NCCL's convention), so it compares across rank counts.
// Each figure is the median of --iterations timed calls after 5 warm-up calls, all ranks synchronised by a
// barrier before each call. State the binding and rank count with the figures: they change them threefold.
// "p2p us" is half the round trip of the same bytes between ranks 0 and 1 (--pingpong-peer: another, e.g. the
// first rank of the second host) (MPI_Send/MPI_Recv ping-pong): the
// link's own latency and bandwidth as MPI sees them, from which bench/cluster.py fits the alpha-beta bound.
// --hierarchical adds the ring's hierarchical transport (shared window within each host, ring across hosts;
// comm/ring_allreduce.hpp) to every row, with the hosts as the launcher placed the ranks or, with --host-ranks K,
// every K consecutive ranks taken as one host.
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <optional>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sinew/comm/mpi.hpp"
#include "sinew/comm/ring_allreduce.hpp"
#include "sinew/dist/parameter_server.hpp"
#include "sinew/metrics.hpp"
#include "sinew/optim/sgd.hpp"
#include "cli/cli.hpp"

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

// "core" when mpirun bound this rank to one CPU, else "none".
std::string binding() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return "none";
  return CPU_COUNT(&set) == 1 ? "core" : "none";
}

// Gloo's median seconds per size, from bench/pytorch/gloo_allreduce.py (empty when torch is missing).
std::map<std::size_t, double> run_gloo(int ranks, const std::string& bind, std::size_t min_bytes,
                                       std::size_t max_bytes, int iterations) {
  std::map<std::size_t, double> seconds;
  const std::string command = "/usr/bin/python3 " SINEW_SOURCE_DIR "/bench/pytorch/gloo_allreduce.py --ranks " +
                              std::to_string(ranks) + " --bind " + bind + " --min " + std::to_string(min_bytes) +
                              " --max " + std::to_string(max_bytes) + " --iterations " + std::to_string(iterations) +
                              " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return seconds;
  std::string all;
  char buf[1024];
  while (std::fgets(buf, sizeof buf, pipe)) {
    all += buf;
    std::istringstream in(buf);
    std::string tag;
    std::size_t bytes = 0;
    double s = 0;
    if (in >> tag >> bytes >> s && tag == "result") seconds[bytes] = s;
  }
  if (pclose(pipe) != 0) std::fprintf(stderr, "comm: no Gloo figures (%s):\n%s", command.c_str(), all.c_str());
  return seconds;
}

// Synchronous parameter-server push and pull of `data` (dist::ParameterServer<Mpi, 1>, as bench/dist and the
// trainer use it: the last rank serves, every other rank pushes its gradient and pulls the parameters back):
// the slowest worker's median over --iterations update() calls after 5 warm-up calls; 0 with one rank. The
// server's optimizer is SGD with lr 0 (its step costs one pass over the shard; the parameters stay put).
double ps_push_pull_seconds(sinew::comm::Mpi& world, std::span<float> data, int iterations) {
  if (world.size() < 2) return 0;
  using Server = sinew::dist::ParameterServer<sinew::comm::Mpi, 1>;
  Server ps({.configuration = "bench/comm " + std::to_string(data.size())}, world);
  sinew::optim::Sgd sgd({.lr = 0.0f}, data.size());
  std::vector<float> grads(data.size(), 1.0f);
  sinew::metrics::PhaseSeconds phases;
  ps.start<sinew::Sync>(data, sgd);
  double median = 0;
  if (ps.is_worker()) {
    std::vector<double> t;
    for (int i = 0; i < 5 + iterations; ++i) {
      const double start = MPI_Wtime();
      ps.update<sinew::Sync>(data, grads, sgd, phases);
      if (i >= 5) t.push_back(MPI_Wtime() - start);
    }
    ps.finish_epoch<sinew::Sync>(data, phases);
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    median = t[t.size() / 2];
  } else {
    ps.serve<sinew::Sync>(data, phases);
  }
  MPI_Allreduce(MPI_IN_PLACE, &median, 1, MPI_DOUBLE, MPI_MAX, world.native());
  return median;
}

// The point-to-point link as the alpha-beta model sees it: half the median round trip of `bytes` sent from rank 0
// to rank `peer` and back with MPI_Send/MPI_Recv (Hockney's ping-pong), so that alpha (latency) and beta
// (bandwidth) can be fitted from the smallest and the largest size; 0 with one rank. Ranks other than 0 and peer
// wait in the barriers.
double pingpong_seconds(sinew::comm::Mpi& world, std::span<float> data, int iterations, int peer) {
  if (world.size() <= peer) return 0;
  const int rank = world.rank(), n = int(data.size());
  return median_seconds(world, iterations, [&] {
           if (rank == 0) {
             MPI_Send(data.data(), n, MPI_FLOAT, peer, 17, world.native());
             MPI_Recv(data.data(), n, MPI_FLOAT, peer, 17, world.native(), MPI_STATUS_IGNORE);
           } else if (rank == peer) {
             MPI_Recv(data.data(), n, MPI_FLOAT, 0, 17, world.native(), MPI_STATUS_IGNORE);
             MPI_Send(data.data(), n, MPI_FLOAT, 0, 17, world.native());
           }
         }) /
         2;
}

// Every rank but 0 waits here without spinning while rank 0 runs `work`; then all go on together.
template <class F>
void while_root_works(sinew::comm::Mpi& world, F&& work) {
  if (world.rank() == 0) work();
  MPI_Request request;
  MPI_Ibarrier(world.native(), &request);
  for (int done = 0; !done;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

int main(int argc, char** argv) try {
  sinew::comm::Mpi world;
  std::size_t min_bytes = 4096, max_bytes = std::size_t(64) << 20;
  int iterations = 50;
  bool no_gloo = false;
  // Floats per ring message (RingAllReduce::options::chunk_floats); 0: one message per segment; by default
  // what the ring picks for these ranks' hosts (dist::ring_chunk_floats).
  std::optional<std::size_t> asked_chunk;
  std::string transport_name = "auto";
  std::size_t window_floats = sinew::dist::kRingSharedFloats;
  std::string json;
  CLI::App app{"All-reduce latency and bus bandwidth: sinew's ring, MPI_Allreduce and Gloo. mpirun -np N comm",
               "comm"};
  app.add_option("--min", min_bytes, "smallest message, bytes")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--max", max_bytes, "largest message, bytes")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--iterations", iterations, "all-reduces timed per size")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_flag("--no-gloo", no_gloo, "skip PyTorch's Gloo");
  app.add_option("--ring-chunk", asked_chunk, "floats per ring message (0: one per segment; default: what the ring "
                                              "picks for these hosts)")
      ->option_text("FLOATS");
  app.add_option("--ring-transport", transport_name,
                 "how the ring moves segments: auto (the shared window when every rank is on one host), messages "
                 "(MPI point-to-point) or shared (MPI-3 shared window, one host only)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "messages", "shared"}));
  app.add_option("--ring-window", window_floats,
                 "floats each rank's shared window holds at most: a longer all-reduce takes rounds of this many")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  bool hierarchical = false;
  int host_ranks = 0;
  app.add_flag("--hierarchical", hierarchical, "also time the ring's hierarchical transport (window within hosts, "
                                               "ring across them)");
  app.add_option("--host-ranks", host_ranks, "with --hierarchical: ranks per host (0: as mpirun placed them)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  bool no_ps = false;
  int pingpong_peer = 1;
  app.add_flag("--no-ps", no_ps, "skip the parameter server's push and pull");
  app.add_option("--pingpong-peer", pingpong_peer, "the rank that rank 0 measures the link to")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sinew::cli::add_json(app, json);
  sinew::cli::parse(app, argc, argv);
  const bool gloo = !no_gloo;
  using sinew::dist::RingTransport;
  RingTransport transport = transport_name == "messages" ? RingTransport::messages
                            : transport_name == "shared" ? RingTransport::shared_memory
                                                         : RingTransport::automatic;
  if (transport == RingTransport::automatic)
    transport = world.hosts() == 1 ? RingTransport::shared_memory : RingTransport::messages;
  const char* const transport_said = transport == RingTransport::shared_memory ? "shared window" : "messages";
  const std::size_t chunk = sinew::dist::ring_chunk_floats(world, asked_chunk.value_or(sinew::dist::kRingChunkAuto));

  const int p = world.size();
  const bool root = world.rank() == 0;
  const std::string bind = binding();
  std::map<std::size_t, double> gloo_seconds;
  if (gloo && p > 1)
    while_root_works(world, [&] { gloo_seconds = run_gloo(p, bind, min_bytes, max_bytes, iterations); });
  if (root)
    std::printf("all-reduce of floats, %d ranks on %d hosts, bound to %s, 1 thread each, median of %d, ring messages "
                "of %zu floats (used by messages only), ring through %s\n"
                "%10s %10s %10s %10s %9s %9s %9s %7s %7s %10s %10s %10s\n",
                p, world.hosts(), bind == "core" ? "one core each" : "nothing", iterations, chunk, transport_said,
                "bytes", "ring us", "MPI us", "Gloo us", "ring GB/s", "MPI GB/s", "Gloo GB/s", "vs MPI", "vs Gloo",
                "PS us", "p2p us", "hier us");
  auto out = sinew::metrics::Json::array();
  sinew::dist::RingWorkspace<sinew::comm::Mpi> work;
  work.window_floats_max = window_floats;
  sinew::dist::RingWorkspace<sinew::comm::Mpi> hierarchy;
  hierarchy.window_floats_max = window_floats;
  hierarchy.host_ranks = host_ranks;
  // The hosts' windows for the largest sum now, as the strategy reserves them at start(), not inside a timing.
  if (hierarchical)
    sinew::dist::RingOperation<sinew::comm::Mpi>::reserve(world, hierarchy, max_bytes / sizeof(float),
                                                          RingTransport::hierarchical);
  for (std::size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    std::vector<float> data(bytes / sizeof(float), 1.0f);
    const double ring =
        median_seconds(world, iterations,
                       [&] { sinew::dist::ring_allreduce_sum(world, data, work, chunk, transport); });
    const double mpi = median_seconds(world, iterations, [&] {
      MPI_Allreduce(MPI_IN_PLACE, data.data(), int(data.size()), MPI_FLOAT, MPI_SUM, world.native());
    });
    const double hier = !hierarchical ? 0.0 : median_seconds(world, iterations, [&] {
      sinew::dist::ring_allreduce_sum(world, data, hierarchy, sinew::dist::kRingChunkAuto,
                                      RingTransport::hierarchical);
    });
    std::fill(data.begin(), data.end(), 1.0f);  // the sums above may have grown to infinity
    const double ps = no_ps ? 0.0 : ps_push_pull_seconds(world, data, iterations);
    const double one_way = pingpong_seconds(world, data, iterations, pingpong_peer);
    const double bus = 2.0 * (p - 1) / p * double(bytes);
    if (root) {
      const double g = gloo_seconds.count(bytes) ? gloo_seconds[bytes] : 0.0;
      std::printf("%10zu %10.1f %10.1f %10.1f %9.2f %9.2f %9.2f %7.2f %7.2f %10.1f %10.1f %10.1f\n", bytes,
                  1e6 * ring, 1e6 * mpi, 1e6 * g, bus / ring / 1e9, bus / mpi / 1e9, g > 0 ? bus / g / 1e9 : 0.0,
                  mpi / ring, g > 0 ? g / ring : 0.0, 1e6 * ps, 1e6 * one_way, 1e6 * hier);
      auto j = sinew::metrics::Json::object();
      j["ranks"] = p;
      j["hosts"] = world.hosts();
      j["hierarchical_seconds"] = hier > 0 ? sinew::metrics::Json(hier) : sinew::metrics::Json();
      j["binding"] = bind;
      j["ring_chunk_floats"] = chunk;
      j["ring_transport"] = transport_said;
      j["gloo_seconds"] = g > 0 ? sinew::metrics::Json(g) : sinew::metrics::Json();
      j["gloo_bus_gbps"] = g > 0 ? sinew::metrics::Json(bus / g / 1e9) : sinew::metrics::Json();
      j["ratio_ring_to_gloo"] = g > 0 ? sinew::metrics::Json(g / ring) : sinew::metrics::Json();
      j["bytes"] = bytes;
      j["ring_seconds"] = ring;
      j["mpi_allreduce_seconds"] = mpi;
      j["ring_bus_gbps"] = bus / ring / 1e9;
      j["mpi_allreduce_bus_gbps"] = bus / mpi / 1e9;
      j["ratio_ring_to_mpi"] = mpi / ring;
      j["ps_sync_push_pull_seconds"] = ps > 0 ? sinew::metrics::Json(ps) : sinew::metrics::Json();
      j["pingpong_one_way_seconds"] = one_way > 0 ? sinew::metrics::Json(one_way) : sinew::metrics::Json();
      out.push_back(std::move(j));
    }
  }
  if (root && !json.empty()) sinew::metrics::save_json(out, json);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "comm: %s\n", e.what());
  return 1;
}
